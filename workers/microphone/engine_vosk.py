"""Vosk (Kaldi): streaming partials, word timings, runtime vocabulary. Not the default:
``engine = "auto"`` takes the more accurate Whisper first and Vosk only when there is no Whisper
model (``engines.ACCURACY_ORDER``); ``engine = "vosk"`` chooses it.

Vosk's own endpointing may close a segment inside what our VAD treats as one utterance; those
segments are concatenated so the worker still publishes one final per utterance. With biasing
on, the recognizer is given the domain vocabulary as a runtime grammar (plus ``[unk]`` so
other words are not forced onto it; they are left out of the text). That needs a model with
a runtime graph (the small models); with a static-graph model biasing is off, with a warning.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

import numpy as np
from numpy.typing import NDArray

from workers.microphone.recognizer import EngineUnavailable, Hypothesis, WordTiming

log = logging.getLogger(__name__)

ENGLISH_MODEL = "vosk-model-small-en-us-0.15"
ENGLISH_MODEL_URL = f"https://alphacephei.com/vosk/models/{ENGLISH_MODEL}.zip"
UNKNOWN = "[unk]"


def missing_model_message(where: Path | str) -> str:
    """One actionable line: which model, where to get it, where to put it."""
    return (
        f"Vosk model not found at {where}: run `humaine-env models` to download {ENGLISH_MODEL} "
        f"(or get {ENGLISH_MODEL_URL}, unpack it and set HUMAINE_ENV_VOSK_MODEL=<folder>)"
    )


def is_vosk_model(path: Path) -> bool:
    return (path / "am" / "final.mdl").is_file() or (path / "final.mdl").is_file()


def has_runtime_graph(path: Path) -> bool:
    """Models built for runtime grammars (the small ones) ship ``Gr.fst``/``HCLr.fst``; a
    model with a precompiled ``HCLG.fst`` ignores a grammar."""
    return (path / "graph" / "Gr.fst").is_file() or (path / "Gr.fst").is_file()


class _VoskWord(TypedDict):
    word: str
    start: float
    end: float
    conf: float


class _VoskResult(TypedDict, total=False):
    """One of Vosk's JSON answers, as ``SetWords(True)`` makes them."""

    text: str
    result: list[_VoskWord]


class VoskStream:
    def __init__(self, owner: VoskRecognizer) -> None:
        import vosk

        if owner.grammar is not None:
            self._rec = vosk.KaldiRecognizer(owner.model, float(owner.sample_rate), owner.grammar)
        else:
            self._rec = vosk.KaldiRecognizer(owner.model, float(owner.sample_rate))
        self._rec.SetWords(True)
        self._segments: list[_VoskResult] = []
        self._done = False

    def accept(self, samples: NDArray[np.int16]) -> None:
        if self._rec.AcceptWaveform(samples.astype("<i2").tobytes()):
            self._segments.append(json.loads(self._rec.Result()))

    def partial(self) -> str:
        current = json.loads(self._rec.PartialResult()).get("partial", "")
        return " ".join(t for t in (*(s.get("text", "") for s in self._segments), current) if t)

    def final(self) -> Hypothesis:
        if self._done:
            raise RuntimeError("stream already finished")
        self._done = True
        self._segments.append(json.loads(self._rec.FinalResult()))
        words: list[WordTiming] = []
        for seg in self._segments:
            for w in seg.get("result", []):
                if w["word"] == UNKNOWN:
                    continue
                start, end = round(float(w["start"]) * 1000), round(float(w["end"]) * 1000)
                words.append(WordTiming(str(w["word"]), start, end, float(w["conf"])))
        text = " ".join(w.word for w in words)
        confidence = float(np.mean([w.conf for w in words])) if words else 0.0
        return Hypothesis(text, confidence, words)


class VoskRecognizer:
    """A loaded Vosk model; ``vocabulary`` (biasing) restricts decoding to those words/phrases."""

    name = "vosk"

    def __init__(
        self, model_path: str | Path, vocabulary: Sequence[str] | None = None, sample_rate: int = 16_000
    ) -> None:
        path = Path(model_path).expanduser()
        if not path.is_dir() or not is_vosk_model(path):
            raise EngineUnavailable(missing_model_message(path))
        try:
            import vosk
        except ImportError as exc:
            raise EngineUnavailable(f"vosk is not installed ({exc}); pip install vosk") from None
        vosk.SetLogLevel(-1)
        self.model_path = path
        self.sample_rate = sample_rate
        try:
            self.model = vosk.Model(str(path))
        except Exception as exc:  # vosk raises a bare Exception when Kaldi cannot load it
            raise EngineUnavailable(f"Vosk could not load the model at {path} ({exc}); re-download it") from None
        self.grammar: str | None = None
        if vocabulary and not has_runtime_graph(path):
            log.warning("the Vosk model at %s has a static graph (no graph/Gr.fst): vocabulary biasing is not possible "
                        "with it, decoding without", path)
        elif vocabulary:
            known = [p for p in vocabulary if all(self.model.vosk_model_find_word(w) >= 0 for w in p.split())]
            dropped = len(vocabulary) - len(known)
            if dropped:
                log.info("%d vocabulary entries are not in the Vosk model's lexicon and were left out", dropped)
            if known:
                # "[unk]" keeps words outside the vocabulary from being forced onto it, where the
                # model has it.
                has_unk = self.model.vosk_model_find_word(UNKNOWN) >= 0
                self.grammar = json.dumps([*known, UNKNOWN] if has_unk else known, ensure_ascii=False)
            else:
                log.warning("no vocabulary entry is known to the Vosk model; decoding without biasing")

    def stream(self) -> VoskStream:
        return VoskStream(self)
