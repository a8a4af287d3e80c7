"""Negotiation utterances spoken with a pause in the middle, and complete ones, for measuring
how final transcripts are merged (``bench/merging.py``, ``tests/test_merge_corpus.py``).

Each paused utterance is its two halves synthesised separately by the same voice (so each half
has its own natural prosody) joined by silence longer than the segmenter's hangover, so the
microphone cuts it into two finals as it would a buyer's pause. Two kinds of pause:
``hesitation`` (where people stop to think: after "of", "and", "I would like", a bare number,
a name) and ``boundary`` (between two clauses that each read as complete). Cached under
``.cache/synth/paused``; run directly to (re)generate: ``python scripts/paused_speech.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hardware.audio import SAMPLE_RATE  # noqa: E402
from hardware.audio_files import load_audio, write_wav  # noqa: E402

CACHE = ROOT / ".cache" / "synth" / "paused"

HESITATIONS: tuple[tuple[str, str], ...] = (
    ("celia i would like", "two eggs and a cup of milk"),
    ("watson can you sell me three cups of", "flour"),
    ("i will pay", "five dollars for the chocolate"),
    ("how about two eggs and", "a packet of blueberries"),
    ("hey watson", "how much for the vanilla"),
    ("i need", "four ounces of chocolate"),
    ("celia i want the", "sugar and the milk"),
    ("watson give me two cups of sugar for", "three dollars"),
    ("i would take three", "teaspoons of vanilla"),
    ("can you give me a", "better price for the eggs"),
)
"""Pauses where a speaker stops mid-thought: the first half reads as unfinished."""

BOUNDARIES: tuple[tuple[str, str], ...] = (
    ("i want two eggs", "for three dollars"),
    ("that is too expensive", "can you do four dollars"),
    ("celia i like your offer", "but i only need one cup of milk"),
)
"""Pauses between clauses that each read as complete."""

COMPLETE: tuple[str, ...] = (
    "watson how much for a cup of sugar",
    "i offer five dollars for the chocolate",
    "i accept your offer",
    "no deal i reject that offer",
    "celia can i get a packet of sugar and some milk",
    "i need three eggs and one cup of milk for seven dollars",
)
"""Said without a pause: each should leave the transcript worker with its final."""

PAUSES_MS: tuple[int, ...] = (700, 1000)
"""Longer than the segmenter's hangover (500 ms), shorter than the merge gap (1.2 s)."""
LEAD_MS = 300
TAIL_MS = 1500
"""Silence before and after, so the segmenter starts and ends each utterance on its own."""


@dataclass(frozen=True)
class SpokenItem:
    path: Path
    parts: tuple[str, ...]
    kind: str
    """``hesitation``, ``boundary`` or ``complete``."""
    voice: str
    pause_ms: int = 0

    @property
    def text(self) -> str:
        return " ".join(self.parts)


def _synth() -> object:
    spec = importlib.util.spec_from_file_location("synth_speech", ROOT / "scripts" / "synth_speech.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("synth_speech", module)
    spec.loader.exec_module(module)
    return module


def _silence(ms: int) -> np.ndarray:
    return np.zeros(SAMPLE_RATE * ms // 1000, dtype=np.int16)


def _trimmed(samples: np.ndarray, floor: int = 300, keep_ms: int = 20) -> np.ndarray:
    """The speech without the silence a synthesiser puts around it, so the pause between two
    halves is the pause asked for (below ``floor``, about -40 dBFS, counts as silence)."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > floor)
    if loud.size == 0:
        return samples
    keep = SAMPLE_RATE * keep_ms // 1000
    return samples[max(0, loud[0] - keep): loud[-1] + keep]


def speak(parts: tuple[str, ...], voice: str, kind: str, pause_ms: int = 0, out_dir: Path = CACHE) -> SpokenItem:
    """One item as 16 kHz mono WAV (cached by voice, parts and pause)."""
    key = hashlib.sha1(f"trimmed|{voice}|{pause_ms}|{'|'.join(parts)}".encode()).hexdigest()[:16]
    path = out_dir / f"{kind}-{voice.replace('+', '_').replace(':', '_')}-{key}.wav"
    if not path.is_file():
        synth = _synth()
        pieces = [_silence(LEAD_MS)]
        for index, part in enumerate(parts):
            if index:
                pieces.append(_silence(pause_ms))
            pieces.append(_trimmed(load_audio(synth.synthesize(part, voice).path)))  # type: ignore[attr-defined]
        pieces.append(_silence(TAIL_MS))
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        write_wav(tmp, np.concatenate(pieces))
        tmp.replace(path)
    return SpokenItem(path, parts, kind, voice, pause_ms)


def corpus(voices: tuple[str, ...] | None = None, pauses_ms: tuple[int, ...] = PAUSES_MS) -> list[SpokenItem]:
    synth = _synth()
    chosen = voices or (*synth.VOICES, *synth.FESTIVAL_VOICES)  # type: ignore[attr-defined]
    items: list[SpokenItem] = []
    for voice in chosen:
        for pause in pauses_ms:
            items += [speak(pair, voice, "hesitation", pause) for pair in HESITATIONS]
            items += [speak(pair, voice, "boundary", pause) for pair in BOUNDARIES]
        items += [speak((text,), voice, "complete") for text in COMPLETE]
    return items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", default="", help="comma list of voices (default: the synth corpus's espeak-ng and Festival ones)")
    args = parser.parse_args(argv)
    voices = tuple(v for v in args.voices.split(",") if v) or None
    items = corpus(voices)
    print(f"{len(items)} utterances in {CACHE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
