"""What the speaker and every speech engine share: voices, events in audio time, errors.

Kept apart from :mod:`hardware.speaker` so that the engines (espeak-ng, Festival, Piper) and
the speaker that drives them all stand on it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SAMPLE_WIDTH = 2
"""16-bit signed mono PCM: what every engine hands over."""


class SpeakerError(Exception):
    """A speaker problem, worded for the operator (missing engine, voice, or device)."""


# -- voices -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class VoiceSettings:
    """How one avatar sounds: an ``engine`` (``espeak``, ``festival``, ``piper``; see
    :mod:`hardware.speech_engines`) and its ``voice``. An espeak-ng voice is a name or id,
    optionally with a variant (``en-us+f3``: American English, female variant 3)."""

    voice: str = "en-us"
    rate: int = 175
    """Words per minute (espeak's default is 175)."""
    volume: float = 1.0
    """0.0-2.0 (pyttsx3's scale: 1.0 is espeak's normal volume)."""
    pitch: int | None = None
    """0-100, ``None`` keeps the voice's own (50)."""
    engine: str = "espeak"
    fallback: str | None = None
    """The espeak-ng voice that speaks when ``engine``'s voice cannot be loaded."""


@dataclass(frozen=True)
class SpeechEvent:
    """A point in an utterance's audio: a word or a phoneme starting, or a ``<mark>`` reached."""

    kind: Literal["word", "mark", "phoneme"]
    name: str
    """The word as written in the input, the mark's name, or the phoneme's espeak-ng mnemonic
    (``t``, ``u:``, ``aI``; ``_`` and ``_:`` are pauses)."""
    audio_ms: int
    """Offset of the event in the utterance's audio."""
    text_position: int = 0
    """0-based character offset in the synthesised (SSML) text; 0 for marks."""
    at: float = 0.0
    """``time.monotonic()`` when the output reached the event (set when fired)."""
