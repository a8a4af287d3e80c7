"""Sentence-at-a-time speech engines (Festival, Piper) behind the speaker's engine contract.

The speaker (:class:`hardware.speaker.Speaker`) drives an engine through one call,
``synthesize(ssml, settings, on_audio)``, and expects audio buffers with their word, mark and
phoneme events in audio time - what espeak-ng's callback gives. Neural and HTS engines render
a whole phrase at once instead, in tens to hundreds of milliseconds. This module makes them fit:

* the SSML is read into phrases and pauses (:mod:`formats.speech_script`);
* a producer thread renders phrase after phrase while the speaker plays the previous one, so
  only the first phrase's rendering is heard as latency; that first phrase is kept short
  (``lead_words``) for engines slow enough to need it;
* each rendering's own timing (Festival's segments, Piper's phoneme alignments) becomes the
  word, mark and phoneme events, offset by where the phrase sits in the utterance;
* a phrase's leading silence beyond :data:`LEAD_SILENCE_MS` is trimmed, so a reply does not
  start with the engine's padding.

Phonemes are reported as espeak-ng mnemonics (``S``, ``aI``, ``_``) whatever the engine's own
alphabet, so the avatar's mouth shapes (``avatar.visemes``) need one table only.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from formats import speech_script
from formats.speech_script import Pause, Phrase
from hardware.speech_types import SpeechEvent, VoiceSettings

log = logging.getLogger(__name__)

DEFAULT_RATE_WPM = 175
"""The words-per-minute setting at which a sentence engine speaks at its voice's own pace
(espeak-ng's default rate: the same avatar setting means the same speed with every engine)."""
LEAD_SILENCE_MS = 40
"""Silence kept before a phrase's first phoneme; the engine's padding beyond it is cut."""
PAUSE_PHONEME = "_"
AHEAD = 2
"""Phrases rendered ahead of the one playing: enough to hide rendering, bounded in memory."""


@dataclass
class Rendering:
    """One phrase as an engine rendered it."""

    pcm: np.ndarray
    """int16 mono samples at the engine's rate."""
    phonemes: list[tuple[int, str]] = field(default_factory=list)
    """``(ms, espeak-ng mnemonic)`` in order."""
    word_starts: list[int] = field(default_factory=list)
    """Start (ms) of each word the engine said, in order."""


def map_word_starts(engine_starts: list[int], words: int, end_ms: int) -> list[int]:
    """Start times for our ``words`` words from the engine's word starts.

    Engines expand some tokens ("25" → "twenty five") or join others; when the counts differ,
    word ``i`` of ours takes the start of the engine word at the same fraction of the phrase."""
    if not words:
        return []
    if not engine_starts:
        return [round(end_ms * i / words) for i in range(words)]
    if len(engine_starts) == words:
        return list(engine_starts)
    return [engine_starts[min(len(engine_starts) - 1, math.floor(i * len(engine_starts) / words))] for i in range(words)]


class ChunkedEngine:
    """Base of the sentence engines: subclasses implement :meth:`render` (and :meth:`load`)."""

    name = "chunked"
    lead_words = 0
    """Words in the first phrase when it is longer (0: never split): for engines whose render
    time of a whole first sentence would be heard as a late reply."""

    def __init__(self, voice: str) -> None:
        self.voice = voice
        self.sample_rate = 0
        self._lock = threading.Lock()

    # -- for subclasses --------------------------------------------------------------------
    def render(self, phrase: Phrase, settings: VoiceSettings) -> Rendering:
        raise NotImplementedError

    def check_voice(self, settings: VoiceSettings) -> None:
        """Raise ``SpeakerError`` when the voice cannot speak (the engine loads it here)."""

    # -- the speaker's contract ------------------------------------------------------------
    def synthesize(self, ssml: str, settings: VoiceSettings, on_audio: Callable[[bytes, list[SpeechEvent]], bool]) -> None:
        """Render ``ssml`` phrase by phrase and hand each to ``on_audio`` with its events."""
        self.check_voice(settings)
        pieces = speech_script.read(ssml)
        first = next((i for i, piece in enumerate(pieces) if isinstance(piece, Phrase)), None)
        if first is not None:
            pieces[first:first + 1] = speech_script.split_lead(pieces[first], self.lead_words)  # type: ignore[arg-type]
        rendered: queue.Queue[tuple[object, Rendering | BaseException | None]] = queue.Queue(maxsize=AHEAD)
        stop = threading.Event()

        def produce() -> None:
            for index, piece in enumerate(pieces):
                if stop.is_set():
                    return
                try:
                    if isinstance(piece, Pause):
                        result: Rendering | BaseException = Rendering(np.zeros(piece.ms * self.sample_rate // 1000, np.int16))
                    else:
                        before_pause = index + 1 < len(pieces) and isinstance(pieces[index + 1], Pause)
                        with self._lock:
                            result = self._shaped(self.render(piece, settings), piece, settings, before_pause)
                except BaseException as exc:  # handed to the consumer, raised on the speaker's thread
                    result = exc
                while not stop.is_set():
                    try:
                        rendered.put((piece, result), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if isinstance(result, BaseException):
                    return
            rendered.put((None, None))

        producer = threading.Thread(target=produce, name=f"{self.name}-render", daemon=True)
        producer.start()
        offset_ms = 0.0
        try:
            while True:
                piece, result = rendered.get()
                if result is None:
                    return
                if isinstance(result, BaseException):
                    raise result
                events: list[SpeechEvent] = []
                at = round(offset_ms)
                if isinstance(piece, Pause):
                    events += [SpeechEvent("mark", name, at) for name in piece.marks]
                    events.append(SpeechEvent("phoneme", PAUSE_PHONEME, at))
                elif isinstance(piece, Phrase):
                    duration = len(result.pcm) * 1000 // max(self.sample_rate, 1)
                    starts = map_word_starts(result.word_starts, len(piece.words), duration)
                    marks = dict.fromkeys(range(len(piece.words) + 1), ())
                    for index, mark in piece.marks:
                        marks[min(index, len(piece.words))] += (mark,)  # type: ignore[operator]
                    for index, word in enumerate(piece.words):
                        events += [SpeechEvent("mark", name, at + starts[index]) for name in marks[index]]
                        events.append(SpeechEvent("word", word.strip(".,;:!?\"')("), at + starts[index]))
                    events += [SpeechEvent("mark", name, at + duration) for name in marks[len(piece.words)]]
                    events += [SpeechEvent("phoneme", name, at + ms) for ms, name in result.phonemes]
                offset_ms += len(result.pcm) * 1000 / max(self.sample_rate, 1)
                if not on_audio(result.pcm.tobytes(), events):
                    return
        finally:
            stop.set()
            while producer.is_alive():  # let it finish the phrase it renders, then end
                try:
                    rendered.get_nowait()
                except queue.Empty:
                    producer.join(0.05)

    def _shaped(self, rendering: Rendering, phrase: Phrase, settings: VoiceSettings, before_pause: bool = False) -> Rendering:
        """Leading padding trimmed and loudness applied (the engines render at full scale).
        ``before_pause``: a ``<break>`` follows, and its length replaces the engine's own
        phrase-end silence (kept to :data:`LEAD_SILENCE_MS`), so a break lasts what it says."""
        voiced = next((ms for ms, name in rendering.phonemes if name != PAUSE_PHONEME), None)
        trim_ms = max(0, (voiced or 0) - LEAD_SILENCE_MS)
        end = len(rendering.pcm)
        if before_pause and rendering.phonemes and rendering.phonemes[-1][1] == PAUSE_PHONEME:
            end = min(end, (rendering.phonemes[-1][0] + LEAD_SILENCE_MS) * self.sample_rate // 1000)
        pcm = rendering.pcm[trim_ms * self.sample_rate // 1000:end]
        gain = settings.volume * phrase.prosody.volume
        if abs(gain - 1.0) > 1e-3:
            pcm = np.clip(pcm.astype(np.float32) * gain, -32768, 32767).astype(np.int16)
        return Rendering(
            np.ascontiguousarray(pcm, dtype=np.int16),
            [(max(ms - trim_ms, 0), name) for ms, name in rendering.phonemes],
            [max(ms - trim_ms, 0) for ms in rendering.word_starts],
        )


def rate_factor(settings: VoiceSettings, phrase: Phrase) -> float:
    """How much faster than the voice's own pace to speak: the avatar's rate over
    :data:`DEFAULT_RATE_WPM`, times the phrase's ``<prosody rate>``."""
    return max(settings.rate / DEFAULT_RATE_WPM * phrase.prosody.rate, 0.1)


def semitones(settings: VoiceSettings, phrase: Phrase) -> float:
    """The pitch shift in semitones: the ``<prosody pitch>`` factor, and the avatar's ``pitch``
    (0-100, 50 the voice's own) as up to half an octave either way."""
    shift = 12.0 * math.log2(max(phrase.prosody.pitch, 1e-3))
    if settings.pitch is not None:
        shift += (settings.pitch - 50) / 50 * 6.0
    return shift
