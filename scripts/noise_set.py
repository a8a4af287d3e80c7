"""The project's own noise set: six-talker babble and venue noise from real recordings.

Built by the set-up step (``scripts/fetch_assets.py``, ``noise_set``) into ``.cache/assets/noise``
from recordings with clear licences that the set-up step installs anyway; nothing is downloaded
for it. The recipe lives here (which talkers, which recordings); the mixing code in
:mod:`workers.microphone.noise`. Six talker streams:

| stream | recordings | licence |
|---|---|---|
| ``diane``, ``sheila`` | each woman's turns of the pyannote.audio sample (a real telephone call) | MIT (pyannote.audio wheel) |
| ``austen`` | the five LibriVox *Sense and Sensibility* reads of ``pocketsphinx-testdata`` | public domain (LibriVox) |
| ``cards`` | the five ``cards`` recordings of ``pocketsphinx-testdata`` | BSD-2 (CMU) |
| ``sphinx`` | ``goforward``, ``numbers``, ``something`` of ``pocketsphinx-testdata`` | BSD-2 (CMU) |
| ``allison`` | the ``dictate/`` and ``followme/`` prompts of ``asterisk-core-sounds-en`` | CC-BY-SA 3.0 (Allison Smith) |

None of these recordings is target speech in a noisy measurement: ``bench/stt.py --snr`` scores
the synthetic negotiation corpus only, and refuses a corpus that holds one of
:func:`babble_sources` (the CMU and LibriVox reads are target speech in its quiet runs). The
Asterisk prompts scored as speech (``evaluation.asterisk_corpus``) are the top-level ones, never
``dictate/`` or ``followme/``.

``python scripts/noise_set.py`` (re)builds it.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python scripts/noise_set.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from hardware.audio import SAMPLE_RATE  # noqa: E402
from hardware.audio_files import load_audio, write_wav  # noqa: E402
from scripts.conversation import CONVERSATION_STM, CONVERSATION_WAV, conversation_sample  # noqa: E402
from scripts.wheels import ASSETS  # noqa: E402
from workers.microphone.evaluation import ASTERISK_SOUNDS, POCKETSPHINX_DATA  # noqa: E402
from workers.microphone.noise import BABBLE_TALKERS, babble, to_int16, venue_noise  # noqa: E402

log = logging.getLogger("noise_set")

NOISE = ASSETS / "noise"
BABBLE_WAV = NOISE / "babble.wav"
VENUE_WAV = NOISE / "venue.wav"
MANIFEST = NOISE / "sources.json"
SECONDS = 180.0
"""Length of each noise file: three minutes, read as a loop by the benchmark."""
SEED = 29
RECIPE_VERSION = 1
"""Raised whenever the recipe changes, so the set-up step rebuilds the files."""
ASTERISK_FOLDERS = ("dictate", "followme")
PS_MISC = ("goforward.raw", "numbers.raw", "something.raw")


def _conversation_turns(wav: Path, stm: Path) -> dict[str, list[np.ndarray]]:
    """Each speaker's turns of the pyannote sample, cut at the transcript's times."""
    audio = load_audio(wav)  # resampled to SAMPLE_RATE
    turns: dict[str, list[np.ndarray]] = {}
    for line in stm.read_text(encoding="utf-8").splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) < 5:
            continue
        speaker, start, end = parts[2], float(parts[3]), float(parts[4])
        piece = audio[int(start * SAMPLE_RATE):int(end * SAMPLE_RATE)]
        if len(piece) > SAMPLE_RATE // 4:
            turns.setdefault(speaker.lower(), []).append(piece)
    return turns


def babble_sources(conversation_wav: Path) -> dict[str, list[Path]]:
    """The recordings each talker stream is made of (the conversation as one file)."""
    return {
        "conversation": [conversation_wav],
        "austen": sorted((POCKETSPHINX_DATA / "librivox").glob("*.wav")),
        "cards": sorted((POCKETSPHINX_DATA / "cards").glob("*.wav")),
        "sphinx": [POCKETSPHINX_DATA / name for name in PS_MISC],
        "allison": sorted(p for folder in ASTERISK_FOLDERS for p in (ASTERISK_SOUNDS / folder).glob("*.g722")),
    }


def talkers(conversation_wav: Path, conversation_stm: Path) -> dict[str, list[np.ndarray]]:
    """The six talker streams' recordings, loaded (16 kHz int16)."""
    sources = babble_sources(conversation_wav)
    out = _conversation_turns(conversation_wav, conversation_stm)
    for name in ("austen", "cards", "sphinx", "allison"):
        out[name] = [load_audio(p, raw=p.suffix == ".raw") for p in sources[name]]
    empty = [name for name, recordings in out.items() if not recordings]
    if empty or len(out) != BABBLE_TALKERS:
        raise RuntimeError(f"babble talkers missing or empty: {empty or sorted(out)} (are the speech test corpora installed?)")
    return out


def build(conversation_wav: Path, conversation_stm: Path, out: Path = NOISE) -> Path:
    """Write ``babble.wav``, ``venue.wav`` and ``sources.json`` under ``out`` unless they are there
    for this recipe; returns ``out``."""
    manifest = out / MANIFEST.name
    if manifest.is_file() and json.loads(manifest.read_text()).get("recipe") == RECIPE_VERSION:
        return out
    voices = talkers(conversation_wav, conversation_stm)
    mixed = babble(list(voices.values()), SECONDS, seed=SEED)
    venue = venue_noise(mixed, seed=SEED)
    out.mkdir(parents=True, exist_ok=True)
    write_wav(out / BABBLE_WAV.name, to_int16(mixed))
    write_wav(out / VENUE_WAV.name, to_int16(venue))
    sources = {name: [str(p) for p in paths] for name, paths in babble_sources(conversation_wav).items()}
    manifest.write_text(json.dumps({
        "recipe": RECIPE_VERSION, "seconds": SECONDS, "seed": SEED, "rate": SAMPLE_RATE,
        "talkers": {name: len(recordings) for name, recordings in voices.items()},
        "sources": sources,
        "venue": "babble + pink noise 12 dB under it + 50 Hz hum (harmonics 100, 150 Hz) 18 dB under it",
        "licences": {"conversation": "MIT (pyannote.audio)", "austen": "public domain (LibriVox)",
                     "cards": "BSD-2 (CMU pocketsphinx)", "sphinx": "BSD-2 (CMU pocketsphinx)",
                     "allison": "CC-BY-SA 3.0 (Allison Smith, asterisk-core-sounds-en)"},
    }, indent=1), encoding="utf-8")
    log.info("noise set (%d talkers, %.0f s) in %s", len(voices), SECONDS, out)
    return out


def load(path: Path = BABBLE_WAV) -> np.ndarray:
    """A noise file of the set, as int16 (build it first: the set-up step does)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run the set-up step (python scripts/fetch_assets.py)")
    return load_audio(path)


def build_set(rebuild: bool = False) -> Path:
    """The noise set in :data:`NOISE`, built from the conversation sample (fetched first when it
    is missing) unless it is there for this recipe, or anew with ``rebuild``: the set-up step's
    fetcher and this program both come here."""
    conversation_sample()
    if rebuild:
        MANIFEST.unlink(missing_ok=True)
    return build(CONVERSATION_WAV, CONVERSATION_STM)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    build_set(rebuild=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

