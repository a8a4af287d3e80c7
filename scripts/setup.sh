#!/usr/bin/env bash
# Idempotent set-up for `make run` / `make test` on a fresh Debian machine:
#   1. system packages (installed with apt-get when running as root and one is missing),
#   2. the virtual environment .venv with the suite installed (`uv pip install -e ".[dev,voices]"`
#      from pip's package sources, scripts/uv_options.py; pip where uv cannot be had),
#   3. cached test and demo assets (scripts/fetch_assets.py; the platform's Node.js services,
#      scripts/platform_services.py, are fetched from the start, beside steps 2 and 3), the one package
#      installed without its dependencies (the GTCRN enhancer's, fetch_assets.gtcrn_package), and
#      meanwhile the bytecode of the suite and of what was installed (scripts/compile_bytecode.py).
# Each step is skipped when already done, so running it before every command is cheap.
# Every step prints one line saying what it does and one with how long it took: plain lines,
# no progress bars (CI logs are not a terminal).
set -euo pipefail
cd "$(dirname "$0")/.."

STEP_START=0
step() { STEP_START=$SECONDS; echo "setup: [$1] $2"; }
done_step() { echo "setup:     ${1:-done} ($((SECONDS - STEP_START)) s)"; }

# Sound (espeak-ng TTS, PortAudio for sounddevice, the PulseAudio sound server with ALSA's plugin
# that takes PortAudio to it, speexdsp's echo canceller), the MQTT broker, audio tools, the
# real-speech test corpora, Festival voices (negotiation speech not by espeak-ng), a browser for
# the display-page tests, and Node.js/npm (and git, where the platform EO must be cloned) for the
# real Environment Orchestrator.
APT_PACKAGES="espeak-ng libespeak-ng1 libportaudio2 mosquitto ffmpeg sox pocketsphinx-testdata asterisk-core-sounds-en asterisk-core-sounds-en-g722 chromium festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts git pulseaudio libasound2-plugins libspeexdsp1 ladspa-sdk"
PYTHON="${PYTHON:-python3}"
VENV=.venv
STAMP="$VENV/.installed"

step "1/3" "system packages"
missing=()
for pkg in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ! "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then missing+=("python3-venv"); fi
# Node.js may come from elsewhere (e.g. NodeSource, which bundles npm): look for the commands.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then missing+=("nodejs" "npm"); fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup:     installing with apt-get: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    done_step "installed ${#missing[@]} package(s)"
  else
    echo "setup: missing system packages: ${missing[*]} — install them with: sudo apt-get install -y ${missing[*]}" >&2
    done_step "not installed (not root)"
  fi
else
  done_step "all present"
fi

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "setup: Python 3.10 or newer is needed ($PYTHON is $("$PYTHON" --version 2>&1))" >&2
  exit 1
fi
# The platform's Node.js services (npm ci: the longest asset on a fresh machine) need nothing of
# the Python environment: they are fetched alongside its installation, and step 3 says how it went.
PLATFORM_LOG="$(mktemp)"
"$PYTHON" scripts/platform_services.py >"$PLATFORM_LOG" 2>&1 &
PLATFORM_PID=$!

# The suite and its dependencies with uv, from the package sources pip is configured with.
install_with_uv() {
  local uv_opts
  mapfile -t uv_opts < <("$VENV/bin/python" scripts/uv_options.py)
  UV_CACHE_DIR=.cache/uv "$VENV/bin/uv" pip install --python "$VENV/bin/python" --no-progress "${uv_opts[@]}" -e ".[dev,voices]" 2>&1 \
    | { grep -vE '^ *([+-] |Downloading|Downloaded|Building|Built)' || true; } | cut -c1-160 | sed 's/^/setup:       /'
}

step "2/3" "Python environment $VENV (humaine-env and its dependencies)"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup:     creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
want="$(cat pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
  echo "setup:     installing -e \".[dev,voices]\": MediaPipe, faster-whisper, Vosk, pocketsphinx, FastAPI, ..."
  # uv where it can be had (from the same package sources as pip: scripts/uv_options.py), pip
  # otherwise; each says what it resolved and installed, without progress bars
  if "$VENV/bin/python" -m pip install -q --disable-pip-version-check uv >/dev/null 2>&1 && install_with_uv; then
    :
  else
    echo "setup:       uv could not be installed or could not install: pip installs (a few minutes)"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar off --no-compile -e ".[dev,voices]" \
      | { grep -E '^(Collecting|Successfully installed)' || true; } | cut -c1-160 | sed 's/^/setup:       /'
  fi
  echo "$want" > "$STAMP"
  done_step "installed"
else
  done_step "up to date"
fi

step "3/3" "cached assets (.cache/): test media, speech corpus, the platform's EO"
# while npm may still install the platform's services: their fetchers here wait for it (a lock
# each), then find them installed or fetch again what failed there, with its one error line
"$VENV/bin/python" scripts/fetch_assets.py &
ASSETS_PID=$!
# and meanwhile the bytecode every process of the suite would otherwise compile at each start
# (scripts/compile_bytecode.py says why): the environment's once per installation, recorded in
# its own stamp once done, so an installation whose compiling was cut short is compiled next time
BYTECODE_STAMP="$VENV/.bytecode"
COMPILE_ENVIRONMENT=""
[ "$(cat "$BYTECODE_STAMP" 2>/dev/null)" = "$want" ] || COMPILE_ENVIRONMENT=--environment
BYTECODE_LOG="$(mktemp)"
"$VENV/bin/python" scripts/compile_bytecode.py $COMPILE_ENVIRONMENT >"$BYTECODE_LOG" 2>&1 &
BYTECODE_PID=$!
wait "$PLATFORM_PID" || true
cat "$PLATFORM_LOG"
rm -f "$PLATFORM_LOG"
wait "$ASSETS_PID"
if wait "$BYTECODE_PID"; then
  [ -z "$COMPILE_ENVIRONMENT" ] || echo "$want" > "$BYTECODE_STAMP"
else
  echo "setup:     bytecode could not be compiled: every process compiles its modules as it starts"
fi
cat "$BYTECODE_LOG"
rm -f "$BYTECODE_LOG"
done_step
