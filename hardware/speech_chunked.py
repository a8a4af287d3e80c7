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
from numpy.typing import NDArray

from formats import speech_script
from formats.speech_script import Pause, Phrase, Piece
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

    pcm: NDArray[np.int16]
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


def lead_pieces(ssml: str, lead_words: int) -> list[Piece]:
    """The pieces of ``ssml``, its first phrase split into a short lead (``lead_words``, 0:
    never) so that a slow engine's first audio comes early."""
    pieces = speech_script.read(ssml)
    for index, piece in enumerate(pieces):
        if isinstance(piece, Phrase):
            pieces[index : index + 1] = speech_script.split_lead(piece, lead_words)
            break
    return pieces


def phrase_events(phrase: Phrase, rendering: Rendering, at: int, duration: int) -> list[SpeechEvent]:
    """A rendered phrase's word, mark and phoneme events, starting at ``at`` ms in the
    utterance: each mark with the word it stands before (or at the phrase's ``duration``)."""
    words = phrase.words
    starts = map_word_starts(rendering.word_starts, len(words), duration)
    marks: list[list[str]] = [[] for _ in range(len(words) + 1)]
    for index, mark in phrase.marks:
        marks[min(index, len(words))].append(mark)
    events: list[SpeechEvent] = []
    for index, word in enumerate(words):
        events += [SpeechEvent("mark", name, at + starts[index]) for name in marks[index]]
        events.append(SpeechEvent("word", word.strip(".,;:!?\"')("), at + starts[index]))
    events += [SpeechEvent("mark", name, at + duration) for name in marks[len(words)]]
    events += [SpeechEvent("phoneme", name, at + ms) for ms, name in rendering.phonemes]
    return events


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
        ahead = _RenderAhead(self, lead_pieces(ssml, self.lead_words), settings)
        ahead.start()
        offset_ms = 0.0
        try:
            while (item := ahead.next()) is not None:
                piece, rendering = item
                events = self._events(piece, rendering, round(offset_ms))
                offset_ms += len(rendering.pcm) * 1000 / max(self.sample_rate, 1)
                if not on_audio(rendering.pcm.tobytes(), events):
                    return
        finally:
            ahead.stop()

    def render_piece(self, piece: Piece, settings: VoiceSettings, before_pause: bool) -> Rendering:
        """``piece`` as it will be heard: a pause as silence, a phrase rendered (one at a time
        per engine) and shaped (see :meth:`_shaped`)."""
        if isinstance(piece, Pause):
            return Rendering(np.zeros(piece.ms * self.sample_rate // 1000, np.int16))
        with self._lock:
            return self._shaped(self.render(piece, settings), piece, settings, before_pause)

    def _events(self, piece: Piece, rendering: Rendering, at: int) -> list[SpeechEvent]:
        """The events of a rendered piece that starts ``at`` ms into the utterance."""
        if isinstance(piece, Pause):
            return [*(SpeechEvent("mark", name, at) for name in piece.marks), SpeechEvent("phoneme", PAUSE_PHONEME, at)]
        duration = len(rendering.pcm) * 1000 // max(self.sample_rate, 1)
        return phrase_events(piece, rendering, at, duration)

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


class _RenderAhead:
    """The producer thread: renders an utterance's pieces in order, at most :data:`AHEAD`
    ahead of the one playing. A rendering's exception is handed over in its place (and raised
    on the speaker's thread by :meth:`next`); nothing is rendered after it."""

    def __init__(self, engine: ChunkedEngine, pieces: list[Piece], settings: VoiceSettings) -> None:
        self._engine = engine
        self._pieces = pieces
        self._settings = settings
        self._rendered: queue.Queue[tuple[Piece, Rendering] | BaseException | None] = queue.Queue(maxsize=AHEAD)
        """Rendered pieces in order; ``None`` after the last."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name=f"{engine.name}-render", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def next(self) -> tuple[Piece, Rendering] | None:
        """The next piece with its rendering (waits for it); ``None`` after the last."""
        item = self._rendered.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def stop(self) -> None:
        """Stop rendering: the producer finishes the piece it renders, then ends."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._rendered.get_nowait()
            except queue.Empty:
                self._thread.join(0.05)

    def _produce(self) -> None:
        for index, piece in enumerate(self._pieces):
            if self._stop.is_set():
                return
            before_pause = index + 1 < len(self._pieces) and isinstance(self._pieces[index + 1], Pause)
            try:
                item: tuple[Piece, Rendering] | BaseException = (
                    piece, self._engine.render_piece(piece, self._settings, before_pause))
            except BaseException as exc:  # handed to the consumer, raised on the speaker's thread
                item = exc
            self._hand_over(item)
            if isinstance(item, BaseException):
                return
        self._rendered.put(None)

    def _hand_over(self, item: tuple[Piece, Rendering] | BaseException) -> None:
        """Queue ``item``, waiting for room unless stopped."""
        while not self._stop.is_set():
            try:
                self._rendered.put(item, timeout=0.1)
                return
            except queue.Full:
                continue


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
