"""Voice-activity segmentation: turns a block stream into utterances.

A frame classifier (webrtcvad, or Silero VAD: :mod:`workers.microphone.vad_silero`,
``[microphone] vad_engine``) classifies each 10/20/30 ms frame. An utterance starts when most frames of a short
window are voiced (so a click does not open one), and it includes the audio of the pre-roll
before that point, because the detector fires only after the first syllable has begun and the
recognizer needs that onset. It ends after ``hangover_ms`` of mostly unvoiced frames, so short
pauses between words do not split a sentence; the reported end is the last voiced frame, which
is when the speaker actually stopped (the reference point for end-of-speech latency).

A word's soft ending (the /s/ of "eggs", "dollars", "Americans") is quieter than its vowel: in a
room with a background it can fall under the margin a frame needs to *open* speech while still
standing clear over the background. So speech is released with hysteresis: after the last frame
over the margin, the frames that still stand ``release_margin_db`` over the background (up to
``release_max_ms``) are the word's release tail and belong to the utterance; it ends where the
tail does, not at the last loud frame.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import webrtcvad
from numpy.typing import NDArray

from hardware.audio import SAMPLE_RATE, AudioBlock, level_dbfs
from workers.runtime.messages import new_id

START_WINDOW_MS = 200
"""Window over which the start decision is made."""
START_RATIO = 0.6
"""Share of voiced frames in that window needed to open an utterance."""
DEFAULT_NOISE_MARGIN_DB = 10.0
"""How far over the room's background a frame must be to count as speech (0: no such test).
Measured on the project's six-talker babble (``bench/stt.py --snr``): 3 % of babble frames stand
10 dB over the 10th percentile of the last 5 s, 13 % stand 8 dB over it, 33 % 6 dB; the voiced
frames of a buyer 10 dB over the babble mostly do."""
BACKGROUND_WINDOW_MS = 5000
"""How much recent audio the background level is taken from."""
BACKGROUND_PERCENTILE = 10.0
"""The background is the level this share of recent frames stays under: pauses between words
keep it at the room's level while the buyer talks."""
BACKGROUND_WARMUP_MS = 500
"""Audio heard before the background is trusted; until then only the absolute floor applies."""
DEFAULT_RELEASE_MARGIN_DB = 3.0
"""How far over the background a frame after the last loud one must stand to be the word's
release tail (a soft final /s/, a breathy vowel's end); see the module's docstring and
docs/microphone.md#word-endings for the figures it was chosen from."""
RELEASE_MAX_MS = 200
"""The longest release tail: a fricative's end is under this, and a background that hovers just
over the release margin (babble) cannot hold an utterance open with it."""


@dataclass
class SpeechStart:
    utterance_id: str
    t_ms: int
    """Capture time of the first sample handed to the recognizer (pre-roll included)."""
    onset_ms: int
    """When the detector decided speech began (first voiced frame of the start window)."""
    samples: NDArray[np.int16]


@dataclass
class SpeechAudio:
    utterance_id: str
    samples: NDArray[np.int16]
    voiced: bool = True
    """Whether the voice activity detector heard speech in this frame (pauses, hangover: not)."""


@dataclass
class SpeechEnd:
    utterance_id: str
    t_ms: int
    """End of the last voiced frame: when the speaker stopped."""
    forced: bool = False
    """True when the maximum utterance length cut it."""


SegmentEvent = SpeechStart | SpeechAudio | SpeechEnd


class FrameClassifier(Protocol):
    """Says whether one frame of int16 samples is speech (frames in order)."""

    continuous: bool
    """True: it must hear every frame (a recurrent model's state and context run on); False:
    frames under the energy floor are not given to it (webrtcvad's adaptive noise model was
    measured that way)."""

    def is_speech(self, samples: NDArray[np.int16]) -> bool: ...


@dataclass
class WebrtcFrames:
    """webrtcvad as a :class:`FrameClassifier`."""

    aggressiveness: int = 2
    continuous: bool = False
    _vad: webrtcvad.Vad = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 <= self.aggressiveness <= 3:
            raise ValueError(f"VAD aggressiveness must be 0..3, got {self.aggressiveness}")
        self._vad = webrtcvad.Vad(self.aggressiveness)

    def is_speech(self, samples: NDArray[np.int16]) -> bool:
        return bool(self._vad.is_speech(samples.astype("<i2").tobytes(), SAMPLE_RATE))


@dataclass
class BackgroundLevel:
    """The level the microphone hears most of the time, followed as the room changes.

    Babble is speech to any voice detector, and over the absolute energy floor in a hall: what
    tells the buyer at the microphone from the crowd is that they stand well over it. A low
    percentile of the last few seconds' frame levels tracks the crowd and not the buyer, whose
    pauses between words sit on the crowd's level."""

    window_ms: int = BACKGROUND_WINDOW_MS
    percentile: float = BACKGROUND_PERCENTILE
    warmup_ms: int = BACKGROUND_WARMUP_MS
    _levels: collections.deque[float] = field(default_factory=collections.deque, init=False, repr=False)
    _heard_ms: int = field(default=0, init=False)

    def observe(self, dbfs: float, frame_ms: int) -> float | None:
        """Add one frame's level; the background so far, or ``None`` while warming up."""
        self._levels.append(dbfs)
        while len(self._levels) * frame_ms > self.window_ms:
            self._levels.popleft()
        self._heard_ms += frame_ms
        if self._heard_ms < self.warmup_ms:
            return None
        return float(np.percentile(self._levels, self.percentile))


@dataclass
class _Frame:
    samples: NDArray[np.int16]
    t_ms: int
    voiced: bool
    level_dbfs: float = -120.0


@dataclass
class Segmenter:
    """Feed blocks with :meth:`process`; it yields start/audio/end events in stream order."""

    aggressiveness: int = 2
    preroll_ms: int = 300
    hangover_ms: int = 500
    max_utterance_ms: int = 20_000
    energy_floor_dbfs: float = -55.0
    """Frames quieter than this are silence whatever webrtcvad says: its adaptive noise model
    can take a quiet, steady background for speech for seconds after a loud utterance."""
    classifier: FrameClassifier | None = None
    """What tells speech from the rest; ``None``: webrtcvad at ``aggressiveness``."""
    noise_margin_db: float = DEFAULT_NOISE_MARGIN_DB
    """A frame is speech only this far over the room's :class:`BackgroundLevel` (0: off)."""
    release_margin_db: float = DEFAULT_RELEASE_MARGIN_DB
    """After speech, a frame this far over the background is still the word's release tail
    (only with the noise margin on: without a background there is nothing to measure it by)."""
    release_max_ms: int = RELEASE_MAX_MS
    """The release tail ends this long after the last loud frame at the latest."""
    _background: BackgroundLevel = field(default_factory=BackgroundLevel, init=False, repr=False)
    _ring: collections.deque[_Frame] = field(init=False, repr=False)
    _window: collections.deque[bool] = field(init=False, repr=False)
    _current: str | None = field(default=None, init=False)
    _last_voiced_end: int = field(default=0, init=False)
    _last_loud_end: int = field(default=0, init=False)
    _releasing: bool = field(default=False, init=False)
    _release_dbfs: float | None = field(default=None, init=False)
    _started_at: int = field(default=0, init=False)
    _frame_ms: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.preroll_ms < 0 or self.hangover_ms <= 0:
            raise ValueError("preroll_ms must be >= 0 and hangover_ms > 0")
        if self.classifier is None:
            self.classifier = WebrtcFrames(self.aggressiveness)
        self._ring = collections.deque()
        self._window = collections.deque()

    @property
    def in_speech(self) -> bool:
        return self._current is not None

    def process(self, block: AudioBlock) -> Iterator[SegmentEvent]:
        frame_ms = round(block.duration_ms)
        if frame_ms not in (10, 20, 30):
            raise ValueError(f"VAD frames must be 10, 20 or 30 ms, got {block.duration_ms} ms")
        self._frame_ms = frame_ms
        assert self.classifier is not None
        level = level_dbfs(block.samples)
        loud = level > self._threshold_dbfs(level, frame_ms)
        speech = self.classifier.is_speech(block.samples) if loud or self.classifier.continuous else False
        voiced = loud and speech
        frame = _Frame(block.samples, block.t_ms, voiced, level)
        if self._current is None:
            yield from self._idle(frame, frame_ms)
        else:
            yield from self._speaking(frame, frame_ms)

    def _threshold_dbfs(self, level: float, frame_ms: int) -> float:
        """The level a frame must pass to be heard at all: the absolute floor, or the room's
        background plus the margin where that is higher (a hall's babble, a crowd far off)."""
        if self.noise_margin_db <= 0:
            return self.energy_floor_dbfs
        background = self._background.observe(level, frame_ms)
        if background is None:
            self._release_dbfs = None
            return self.energy_floor_dbfs
        self._release_dbfs = max(self.energy_floor_dbfs, background + self.release_margin_db)
        return max(self.energy_floor_dbfs, background + self.noise_margin_db)

    def _in_release(self, frame: _Frame, frame_ms: int) -> bool:
        """Whether ``frame``, not loud enough to be speech, is the release tail of the speech
        before it (see the module's docstring)."""
        if not self._releasing or self._release_dbfs is None:
            return False
        self._releasing = (
            frame.level_dbfs > self._release_dbfs and frame.t_ms + frame_ms - self._last_loud_end <= self.release_max_ms
        )
        return self._releasing

    def _idle(self, frame: _Frame, frame_ms: int) -> Iterator[SegmentEvent]:
        self._ring.append(frame)
        window_n = max(1, START_WINDOW_MS // frame_ms)
        keep = window_n + max(0, self.preroll_ms // frame_ms)
        while len(self._ring) > keep:
            self._ring.popleft()
        recent = list(self._ring)[-window_n:]
        if len(recent) < window_n or sum(f.voiced for f in recent) < START_RATIO * window_n:
            return
        onset = next(f.t_ms for f in recent if f.voiced)
        frames = list(self._ring)
        self._ring.clear()
        self._current = new_id()
        self._started_at = frames[0].t_ms
        self._last_voiced_end = self._last_loud_end = frame.t_ms + frame_ms
        self._releasing = True
        self._window.clear()
        yield SpeechStart(self._current, frames[0].t_ms, onset, np.concatenate([f.samples for f in frames]))

    def _speaking(self, frame: _Frame, frame_ms: int) -> Iterator[SegmentEvent]:
        assert self._current is not None
        uid = self._current
        if frame.voiced:
            self._last_voiced_end = self._last_loud_end = frame.t_ms + frame_ms
            self._releasing = True
        elif self._in_release(frame, frame_ms):
            frame.voiced = True  # the word's release tail: speech still, for the end and the pause
            self._last_voiced_end = frame.t_ms + frame_ms
        yield SpeechAudio(uid, frame.samples, frame.voiced)
        self._window.append(frame.voiced)
        hang_n = max(1, self.hangover_ms // frame_ms)
        while len(self._window) > hang_n:
            self._window.popleft()
        # End when the hangover window is (almost) all silence: a stray voiced frame in a
        # pause must not keep the utterance open forever.
        quiet = len(self._window) == hang_n and sum(self._window) <= hang_n // 10
        too_long = frame.t_ms + frame_ms - self._started_at >= self.max_utterance_ms
        if quiet or too_long:
            self._current = None
            self._window.clear()
            yield SpeechEnd(uid, self._last_voiced_end, forced=too_long and not quiet)

    def flush_silently(self) -> None:
        """Forget any open utterance without reporting it (privacy pause)."""
        self._current = None
        self._window.clear()
        self._ring.clear()

    def flush(self) -> Iterator[SegmentEvent]:
        """End of stream: close an open utterance."""
        if self._current is not None:
            uid, self._current = self._current, None
            self._window.clear()
            yield SpeechEnd(uid, self._last_voiced_end)
        self._ring.clear()
