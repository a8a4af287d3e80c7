"""Reference corpora and word-error-rate scoring for the recognizers (tests and bench/stt.py).

Real human speech comes from system packages installed by the set-up step: the pocketsphinx
test data (``goforward.raw``, ``cards/``, ``librivox/``) and the Asterisk English prompts
(G.722, 16 kHz, with transcripts in ``core-sounds-en.txt.gz``). Synthesized negotiation speech
comes from ``scripts/synth_speech.py``.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from hardware.audio_files import load_audio
from workers.microphone.domain import GOODS_COUNTABLE, INGREDIENTS, UNITS
from workers.microphone.normalize import normalize_text
from workers.microphone.recognizer import Hypothesis, Recognizer

POCKETSPHINX_DATA = Path("/usr/share/pocketsphinx/test/data")
ASTERISK_SOUNDS = Path("/usr/share/asterisk/sounds/en")
ASTERISK_TRANSCRIPTS = Path("/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz")
FEED_SAMPLES = 320
"""Audio is fed in 20 ms pieces, as the live worker does."""


@dataclass(frozen=True)
class Sample:
    name: str
    path: Path
    text: str
    raw: bool = False

    def audio(self) -> NDArray[np.int16]:
        return load_audio(self.path, raw=self.raw)


def normalize(text: str) -> str:
    """What WER is computed on: numbers and money as the normaliser writes them (so "ten" and
    "10" are the same word), lowercase, apostrophes kept, other punctuation dropped."""
    text = normalize_text(text.replace("-", " ")).lower()
    text = re.sub(r"[^a-z0-9'$. ]+", " ", text)
    words = (w.strip("'.") for w in text.split())
    return " ".join(w for w in words if w)


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


DEAL_WORDS = frozenset(
    _singular(w) for phrase in (*INGREDIENTS, *GOODS_COUNTABLE, *UNITS) for w in phrase.split() if w != "of"
)
"""Goods and units (singular): with numbers and prices, the words a wrong transcript turns into a wrong deal."""


def deal_terms(text: str) -> Counter[str]:
    """The deal terms a text names: numbers, prices, goods and units (singular)."""
    terms: Counter[str] = Counter()
    for word in normalize(text).split():
        number = re.match(r"^\$?\d+(?:\.\d+)?", word)
        if number:  # "12x" (Whisper's "twelve eggs" misheard) still names the quantity 12
            terms[number.group(0)] += 1
        elif _singular(word) in DEAL_WORDS:
            terms[_singular(word)] += 1
    return terms


@dataclass(frozen=True)
class DealScore:
    said: int
    """Deal terms in the references."""
    recalled: int
    """Of those, how many the hypotheses have."""
    invented: int
    """Deal terms in the hypotheses that the references do not have (per utterance)."""

    @property
    def recall(self) -> float:
        return self.recalled / self.said if self.said else 1.0


def deal_score(references: Sequence[str], hypotheses: Sequence[str]) -> DealScore:
    said = recalled = invented = 0
    for ref, hyp in zip(references, hypotheses, strict=True):
        r, h = deal_terms(ref), deal_terms(hyp)
        said += sum(r.values())
        recalled += sum((r & h).values())
        invented += sum((h - r).values())
    return DealScore(said, recalled, invented)


def pocketsphinx_corpus() -> list[Sample]:
    """goforward + the librivox sentences + the cards recordings (human read speech)."""
    out = [Sample("goforward", POCKETSPHINX_DATA / "goforward.raw", "go forward ten meters", raw=True)]
    for folder in ("librivox", "cards"):
        base = POCKETSPHINX_DATA / folder
        listing = base / "transcription"
        if not listing.is_file():
            listing = base / f"{folder}.transcription"
        for line in listing.read_text().splitlines():
            m = re.match(r"<s>(.*)</s>\s*\((.+)\)", line.strip())
            if m:
                out.append(Sample(f"{folder}/{m.group(2)}", base / f"{m.group(2)}.wav", normalize(m.group(1))))
    return out


def asterisk_corpus(limit: int | None = None) -> list[Sample]:
    """Top-level Asterisk prompts whose transcript is plain words (no digits, no tone labels)."""
    out: list[Sample] = []
    with gzip.open(ASTERISK_TRANSCRIPTS, "rt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            name, sep, text = line.partition(":")
            if not sep or line.startswith(";") or "/" in name:
                continue
            text = text.strip()
            if not text or "[" in text or re.search(r"\d", text):
                continue
            path = ASTERISK_SOUNDS / f"{name.strip()}.g722"
            if path.is_file():
                out.append(Sample(name.strip(), path, normalize(text)))
    out.sort(key=lambda s: s.name)
    return out[:limit] if limit else out


def transcribe(recognizer: Recognizer, samples: NDArray[np.int16]) -> Hypothesis:
    """Decode one whole recording through a fresh stream, fed in 20 ms pieces."""
    stream = recognizer.stream()
    for offset in range(0, len(samples), FEED_SAMPLES):
        stream.accept(samples[offset : offset + FEED_SAMPLES])
    return stream.final()


def wer(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Corpus word error rate (total edits / total reference words)."""
    import jiwer

    pairs = [(normalize(r), normalize(h)) for r, h in zip(references, hypotheses, strict=True)]
    refs = [r for r, _ in pairs if r]
    hyps = [h for r, h in pairs if r]
    return float(jiwer.wer(refs, hyps))


def corpus_wer(recognizer: Recognizer, samples: Iterable[Sample]) -> tuple[float, list[tuple[str, str]]]:
    pairs = [(s.text, transcribe(recognizer, s.audio()).text) for s in samples]
    return wer([r for r, _ in pairs], [h for _, h in pairs]), pairs
