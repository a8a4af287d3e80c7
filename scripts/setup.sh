#!/usr/bin/env bash
# Idempotent set-up for `make run` / `make test` on a fresh Debian machine:
#   1. system packages (installed with apt-get when running as root and one is missing),
#   2. the virtual environment .venv with the suite installed (`pip install -e ".[dev,voices]"`),
#   3. cached test and demo assets (scripts/fetch_assets.py; the platform's Node.js services,
#      scripts/platform_services.py, are fetched while step 2 installs), and the one package
#      installed without its dependencies (the GTCRN enhancer's, fetch_assets.gtcrn_package).
# Each step is skipped when already done, so running it before every command is cheap.
# Every step prints one line saying what it does and one with how long it took: plain lines,
# no progress bars (CI logs are not a terminal).
set -euo pipefail
cd "$(dirname "$0")/.."

STEP_START=0
step() { STEP_START=$SECONDS; echo "setup: [$1] $2"; }
done_step() { echo "setup:     ${1:-done} ($((SECONDS - STEP_START)) s)"; }

# Sound (espeak-ng TTS, PortAudio for sounddevice), the MQTT broker, audio tools, the
# real-speech test corpora, Festival voices (negotiation speech not by espeak-ng), a browser for
# the display-page tests, and Node.js/npm (and git, where the platform EO must be cloned) for the
# real Environment Orchestrator.
APT_PACKAGES="espeak-ng libespeak-ng1 libportaudio2 mosquitto ffmpeg sox pocketsphinx-testdata asterisk-core-sounds-en asterisk-core-sounds-en-g722 chromium festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts git"
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

step "2/3" "Python environment $VENV (humaine-env and its dependencies)"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup:     creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
want="$(cat pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
  echo "setup:     pip install -e \".[dev,voices]\": MediaPipe, faster-whisper, Vosk, pocketsphinx, FastAPI, ... (a few minutes the first time)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  # one line per package pip fetches, then what it installed: progress without its bars
  "$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar off --no-compile -e ".[dev,voices]" \
    | { grep -E '^(Collecting|Successfully installed)' || true; } | cut -c1-160 | sed 's/^/setup:       /'
  echo "$want" > "$STAMP"
  done_step "installed"
else
  done_step "up to date"
fi

step "3/3" "cached assets (.cache/): test media, speech corpus, the platform's EO"
wait "$PLATFORM_PID" || true  # a service that failed is fetched again below, with its one error line
cat "$PLATFORM_LOG"
rm -f "$PLATFORM_LOG"
"$VENV/bin/python" scripts/fetch_assets.py
done_step
