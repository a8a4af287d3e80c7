"""The small interface every speech-recognition engine implements.

A :class:`Recognizer` holds the loaded model (expensive, once per process); each utterance gets
a fresh :class:`RecognizerStream` fed with 16 kHz int16 audio as it arrives, asked for interim
text now and then, and finished once for the final hypothesis. Word times are milliseconds
from the first sample fed to the stream; the worker adds the utterance's capture time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray


class EngineUnavailable(Exception):
    """The engine or its model is missing; the message says what and how to fix it."""


@dataclass(frozen=True)
class WordTiming:
    word: str
    start_ms: int
    end_ms: int
    conf: float = 1.0
    heard: str = ""
    """What the decoder wrote where normalisation wrote this one word, kept only when the
    pieces did not make one well-formed amount ("$4 .0 .0." written ``$4``): the words the
    text no longer shows, for the final's doubt (:mod:`workers.microphone.prices`). Empty for
    every word an engine gives."""


@dataclass(frozen=True)
class Hypothesis:
    text: str
    confidence: float = 1.0
    words: list[WordTiming] = field(default_factory=list)


class RecognizerStream(Protocol):
    def accept(self, samples: NDArray[np.int16]) -> None: ...

    def partial(self) -> str:
        """The current best guess for the utterance so far (may change)."""
        ...

    def final(self) -> Hypothesis:
        """Finish the utterance; the stream must not be used afterwards."""
        ...


@runtime_checkable
class SpeculativeStream(Protocol):
    """A stream that can start its final decode early, in the pause after speech, so the final
    is (nearly) ready when the pause turns out to be the utterance's end (Whisper decodes whole
    utterances; its decode would otherwise start only after the hangover)."""

    def speculate(self) -> None:
        """Start decoding what was fed so far as the final (the speaker may be done)."""
        ...

    def retract(self) -> None:
        """The speaker went on: the speculative decode is not the final."""
        ...


class Recognizer(Protocol):
    name: str
    """Engine name as published in transcripts (``whisper``, ``vosk``, ``pocketsphinx``)."""

    def stream(self) -> RecognizerStream: ...
