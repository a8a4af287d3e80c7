"""The speaker: text (with espeak-ng SSML) → speech audio on the sound card or in WAV files.

Synthesis goes through pyttsx3's ctypes binding of libespeak-ng (``pyttsx3.drivers._espeak``),
the same engine ``pyttsx3.init()`` drives on Linux. We call it one level lower than
``pyttsx3.Engine`` for three reasons the avatar needs and the Engine API does not give:

* **SSML**: pyttsx3 never sets espeak's SSML flag, so ``<prosody>`` would be read out as
  "less than prosody"; here the text is synthesised as SSML.
* **Streaming**: pyttsx3's espeak driver renders the whole utterance before playing it; here
  each buffer is written to the output as soon as espeak produces it, so the first sample
  leaves within tens of milliseconds even for a 100-word message.
* **Timing**: the word and ``<mark>`` events pyttsx3 turns into ``started-word`` callbacks
  carry their position in the audio (``audio_position``); we fire them when the output
  *reaches* that position, not when synthesis passes it (synthesis runs ~100x real time),
  which is what gesture timing and the speaking begin/end bracket need.
* **Phonemes**: espeak-ng is initialised with phoneme events, so each buffer also says which
  phoneme starts where in the audio - the engine's own timing, which the avatar turns into
  mouth shapes. These are handed over as soon as they are synthesised (ahead of the audio they
  describe), so a display can schedule them against the audio clock.

Voices, rate and volume use pyttsx3's conventions (voice ids as ``pyttsx3`` lists them,
volume 0.0-1.0, rate in words per minute). This module knows nothing about MQTT or HUMAINE.
"""

from __future__ import annotations

import ctypes
import logging
import re
import threading
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

log = logging.getLogger(__name__)

BLOCK_S = 0.02
"""Granularity of output writes, hence of pacing and event timing (20 ms)."""
ESPEAK_BUFFER_MS = 40
"""espeak hands audio over in buffers of about this length: small enough for a quick first
sample, large enough to keep callback overhead negligible."""
SOUNDCARD_LEAD_S = 0.12
"""How far ahead of the audible position we keep the sound card's buffer filled."""
SAMPLE_WIDTH = 2
"""16-bit signed mono PCM, espeak-ng's native output."""
EVENT_PHONEME = 7
"""``espeakEVENT_PHONEME`` (speak_lib.h; pyttsx3's binding names only types 0-6)."""
INITIALIZE_PHONEME_EVENTS = 0x0001
"""``espeakINITIALIZE_PHONEME_EVENTS``: report a phoneme event as each phoneme starts."""
PHONEME_NAME_BYTES = 8
"""A phoneme event's ``id`` holds the phoneme's mnemonic as ``char string[8]``."""

INSTALL_HINT = "install espeak-ng (Debian/Ubuntu: apt-get install espeak-ng libespeak-ng1)"


class SpeakerError(Exception):
    """A speaker problem, worded for the operator (missing engine, voice, or device)."""


# -- voices -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class VoiceSettings:
    """How one avatar sounds. ``voice`` is an espeak-ng voice name or id, optionally with a
    variant (``en-us+f3``: American English, female variant 3)."""

    voice: str = "en-us"
    rate: int = 175
    """Words per minute (espeak's default is 175)."""
    volume: float = 1.0
    """0.0-2.0 (pyttsx3's scale: 1.0 is espeak's normal volume)."""
    pitch: int | None = None
    """0-100, ``None`` keeps the voice's own (50)."""


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


@dataclass
class SpokenUtterance:
    """What one :meth:`Speaker.speak` produced."""

    name: str
    sample_rate: int
    samples: int = 0
    path: Path | None = None
    words: list[SpeechEvent] = field(default_factory=list)
    marks: list[SpeechEvent] = field(default_factory=list)
    phonemes: list[SpeechEvent] = field(default_factory=list)
    """Every phoneme of the audio that was output, in order (``at`` is not set: they are
    handed over when synthesised, not fired when reached)."""
    requested_at: float = 0.0
    first_audio_at: float | None = None
    """``time.monotonic()`` right after the first samples were handed to the output."""
    began_at: float | None = None
    ended_at: float | None = None
    cancelled: bool = False
    cut: bool = False
    """The audio reached ``max_s`` and the rest was not spoken."""

    @property
    def duration_s(self) -> float:
        return self.samples / self.sample_rate if self.sample_rate else 0.0


class _EspeakBinding:
    """The process-wide libespeak-ng state (espeak can be initialised once per process)."""

    lock = threading.RLock()
    module: Any = None
    sample_rate = 0

    @classmethod
    def get(cls) -> Any:
        with cls.lock:
            if cls.module is not None:
                return cls.module
            try:
                from pyttsx3.drivers import _espeak
                from pyttsx3.drivers.espeak import EspeakDriver
            except Exception as exc:  # the binding raises RuntimeError when the .so is absent
                raise SpeakerError(f"espeak-ng library not found ({exc}); {INSTALL_HINT}") from None
            rate = _espeak.Initialize(_espeak.AUDIO_OUTPUT_SYNCHRONOUS, ESPEAK_BUFFER_MS, None, INITIALIZE_PHONEME_EVENTS)
            if rate <= 0:
                raise SpeakerError(f"espeak-ng could not be initialised; {INSTALL_HINT}")
            # pyttsx3's own espeak driver would initialise espeak a second time (and take over
            # the synthesis callback); tell it the library is already up.
            EspeakDriver._moduleInitialized = True
            cls.sample_rate = rate
            cls.module = _espeak
            return _espeak


def list_voices() -> list[Any]:
    """The installed voices as ``pyttsx3.voice.Voice`` objects (id, name, languages, gender)."""
    _EspeakBinding.get()
    from pyttsx3.drivers.espeak import EspeakDriver

    with _EspeakBinding.lock:
        return list(EspeakDriver.getProperty("voices"))


_MARK = re.compile(r"""<mark\s+name\s*=\s*["']([^"']*)["']\s*/>""")


_TOKEN = re.compile(r"[^\s<>]+")
"""A written word in the SSML: the run of characters up to the next space or tag (espeak's
reported lengths are not reliable enough to cut the word out)."""
_TRAILING_PUNCTUATION = ".,;:!?\"')"


class _MarkTracker:
    """Makes every ``<mark>`` fire exactly once, in document order.

    espeak-ng reports most marks itself, but drops a mark that opens a sentence
    (``fifty.<mark name="gesture:nod"/> Deal?`` yields no mark event). So a mark espeak has
    not reported by the time the next word starts is fired with that word - the word-callback
    timing pyttsx3 users know - and one still missing at the end fires with the last sample.
    A late report of a mark already fired that way is ignored."""

    def __init__(self, ssml: str) -> None:
        self.pending = [(m.end(), m.group(1)) for m in _MARK.finditer(ssml)]

    def reported(self, name: str) -> bool:
        for index, (_, pending_name) in enumerate(self.pending):
            if pending_name == name:
                del self.pending[index]
                return True
        return False

    def before_word(self, text_start: int, audio_ms: int) -> list[SpeechEvent]:
        due = [p for p in self.pending if p[0] <= text_start]
        self.pending = [p for p in self.pending if p[0] > text_start]
        return [SpeechEvent("mark", name, audio_ms) for _, name in due]

    def remaining(self, audio_ms: int) -> list[SpeechEvent]:
        due, self.pending = self.pending, []
        return [SpeechEvent("mark", name, audio_ms) for _, name in due]


class EspeakEngine:
    """Streaming SSML synthesis with espeak-ng. One utterance at a time per process."""

    def __init__(self) -> None:
        self._espeak = _EspeakBinding.get()
        self.sample_rate = _EspeakBinding.sample_rate
        self._callback_ref: Any = None

    def check_voice(self, settings: VoiceSettings) -> None:
        """Raise :class:`SpeakerError` when espeak-ng does not know the voice."""
        with _EspeakBinding.lock:
            self._apply(settings)

    def _apply(self, settings: VoiceSettings) -> None:
        es = self._espeak
        if es.SetVoiceByName(settings.voice.encode("utf-8")) != es.EE_OK:
            raise SpeakerError(
                f"espeak-ng has no voice {settings.voice!r}; list them with "
                f"`espeak-ng --voices=en` (a variant is added as +f3, +m3, ...)"
            )
        es.SetParameter(es.RATE, int(settings.rate), 0)
        es.SetParameter(es.VOLUME, round(settings.volume * 100), 0)
        if settings.pitch is not None:
            es.SetParameter(es.PITCH, int(settings.pitch), 0)

    def synthesize(
        self,
        ssml: str,
        settings: VoiceSettings,
        on_audio: Callable[[bytes, list[SpeechEvent]], bool],
    ) -> None:
        """Synthesise ``ssml`` (an espeak-ng SSML document) with ``settings``, calling
        ``on_audio(pcm, events)`` for each buffer as it is produced (on this thread).
        ``on_audio`` returns False to abort. Raises the first exception ``on_audio`` raised."""
        es = self._espeak
        failure: list[BaseException] = []
        marks = _MarkTracker(ssml)
        produced = [0]
        last_word = [0]

        def callback(wav: Any, numsamples: int, events: Any) -> int:
            try:
                found: list[SpeechEvent] = []
                i = 0
                while True:
                    ev = events[i]
                    if ev.type == es.EVENT_LIST_TERMINATED:
                        break
                    if ev.type == es.EVENT_MSG_TERMINATED:
                        found.extend(marks.remaining(produced[0] * 1000 // self.sample_rate))
                        break
                    if ev.type == es.EVENT_WORD:
                        start = max(ev.text_position - 1, 0)
                        # after a sentence end espeak-ng reports positions one character late
                        # ("eal" for "Deal"): move back to the start of the word
                        while 0 < start < len(ssml) and ssml[start - 1].isalnum() and ssml[start].isalnum():
                            start -= 1
                        found.extend(marks.before_word(start, ev.audio_position))
                        # words only move forward; espeak-ng sometimes ends an utterance with a
                        # word event pointing back at the text's start
                        backwards = start < last_word[0]
                        last_word[0] = max(last_word[0], start)
                        skip = backwards or ssml.rfind("<", 0, start + 1) > ssml.rfind(">", 0, start)
                        token = None if skip else _TOKEN.match(ssml, start)
                        word = token.group(0).rstrip(_TRAILING_PUNCTUATION) if token else ""
                        if word:
                            found.append(SpeechEvent("word", word, ev.audio_position, start))
                    elif ev.type == EVENT_PHONEME:
                        raw = ctypes.string_at(ctypes.addressof(ev.id), PHONEME_NAME_BYTES).split(b"\0", 1)[0]
                        if raw:
                            found.append(SpeechEvent("phoneme", raw.decode("ascii", "replace"), ev.audio_position))
                    elif ev.type == es.EVENT_MARK and ev.id.name:
                        name = ev.id.name.decode("utf-8", "replace")
                        if marks.reported(name):
                            found.append(SpeechEvent("mark", name, ev.audio_position))
                    i += 1
                pcm = ctypes.string_at(wav, numsamples * SAMPLE_WIDTH) if numsamples > 0 else b""
                produced[0] += numsamples if numsamples > 0 else 0
                if not pcm and not found:
                    return 0
                return 0 if on_audio(pcm, found) else 1
            except BaseException as exc:  # re-raised after synthesis returns
                failure.append(exc)
                return 1

        with _EspeakBinding.lock:
            self._apply(settings)
            self._callback_ref = callback
            es.SetSynthCallback(callback)
            flags = es.SSML | es.CHARS_UTF8 | es.ENDPAUSE
            rc = es.Synth(ssml, flags=flags)
        if failure:
            raise failure[0]
        if rc != es.EE_OK:
            raise SpeakerError(f"espeak-ng refused the text (error {rc})")


# -- outputs ----------------------------------------------------------------------------------
class AudioSink(Protocol):
    """Where utterances go. ``realtime`` sinks are paced by the speaker at playback speed."""

    realtime: bool
    latency_s: float
    """Time from a write to the samples being audible."""
    lead_s: float
    """How far ahead of the audible position writes may run."""

    def begin(self, name: str, sample_rate: int) -> None: ...

    def write(self, pcm: bytes) -> None: ...

    def end(self) -> Path | None: ...

    def close(self) -> None: ...

    def describe(self) -> str: ...


class WavSink:
    """Writes each utterance to ``DIR/<ms>-<name>.wav`` (16-bit mono).

    With ``realtime`` (the default) the speaker paces writes at playback speed, so speaking
    events, gestures and the display behave exactly as with a sound card: the stand-in for
    machines without audio and for tests. ``realtime=False`` writes as fast as espeak
    synthesises (recordings, batch checks)."""

    latency_s = 0.0
    lead_s = 0.0

    def __init__(self, directory: str | Path, realtime: bool = True) -> None:
        self.directory = Path(directory)
        self.realtime = realtime
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpeakerError(f"cannot create WAV output directory {self.directory}: {exc}") from None
        self._wave: wave.Wave_write | None = None
        self._path: Path | None = None

    def describe(self) -> str:
        return f"wav:{self.directory}" + ("" if self.realtime else " (fast)")

    def begin(self, name: str, sample_rate: int) -> None:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:80]
        self._path = self.directory / f"{time.time_ns() // 1_000_000}-{safe}.wav"
        self._wave = wave.open(str(self._path), "wb")
        self._wave.setnchannels(1)
        self._wave.setsampwidth(SAMPLE_WIDTH)
        self._wave.setframerate(sample_rate)

    def write(self, pcm: bytes) -> None:
        if self._wave is not None:
            self._wave.writeframesraw(pcm)

    def end(self) -> Path | None:
        if self._wave is not None:
            self._wave.close()
            self._wave = None
        return self._path

    def close(self) -> None:
        self.end()


class SoundCardSink:
    """The default (or a named) output device through PortAudio (``sounddevice``).

    The stream stays open between utterances: opening one costs tens of milliseconds, which
    would be added to every reply's time-to-first-audio."""

    realtime = True
    lead_s = SOUNDCARD_LEAD_S

    def __init__(self, device: str | int | None = None) -> None:
        self.device = device
        self.latency_s = 0.0
        self._stream: Any = None
        self._rate = 0
        self._check()

    def describe(self) -> str:
        return f"soundcard:{self.device}" if self.device is not None else "soundcard"

    @staticmethod
    def _sounddevice() -> Any:
        try:
            import sounddevice
        except OSError as exc:  # PortAudio library missing
            raise SpeakerError(
                f"PortAudio not available ({exc}); install libportaudio2, or use --speaker wav:DIR"
            ) from None
        return sounddevice

    def _check(self) -> None:
        """Fail at start-up, not at the first reply, when there is no output device."""
        sounddevice = self._sounddevice()
        try:
            sounddevice.query_devices(self.device, "output")
        except Exception as exc:  # ValueError / PortAudioError: no such device
            raise SpeakerError(
                f"no audio output {self.describe()!r} ({exc}); list devices with `humaine-env devices`, "
                f"or use --speaker wav:DIR"
            ) from None

    def _open(self, sample_rate: int) -> None:
        sounddevice = self._sounddevice()
        try:
            stream = sounddevice.RawOutputStream(
                samplerate=sample_rate, channels=1, dtype="int16", device=self.device, latency="low"
            )
            stream.start()
        except Exception as exc:  # sounddevice raises PortAudioError / ValueError
            raise SpeakerError(
                f"cannot open audio output {self.describe()!r} ({exc}); list devices with "
                f"`humaine-env devices`, or use --speaker wav:DIR"
            ) from None
        self._stream, self._rate = stream, sample_rate
        self.latency_s = float(stream.latency)

    def begin(self, name: str, sample_rate: int) -> None:
        if self._stream is None or self._rate != sample_rate:
            self.close()
            self._open(sample_rate)

    def write(self, pcm: bytes) -> None:
        self._stream.write(pcm)

    def end(self) -> Path | None:
        return None

    def close(self) -> None:
        if self._stream is not None:
            try:
                self._stream.stop()
                self._stream.close()
            finally:
                self._stream = None


# -- the speaker ------------------------------------------------------------------------------
SpeechCallback = Callable[[SpeechEvent], None]


class Speaker:
    """Speaks one utterance at a time into a sink, paced at playback speed for realtime sinks.

    ``on_begin`` runs just before the first sample is written; ``on_end`` after the last one
    is audible (for a sound card: written and played out). Word and mark callbacks run when
    the output reaches them; ``on_phonemes`` gets each buffer's phonemes before that buffer is
    written (after ``on_begin`` for the first one), i.e. ahead of the audio they describe.
    All callbacks run on the calling thread of :meth:`speak`."""

    def __init__(self, sink: AudioSink, engine: EspeakEngine | None = None) -> None:
        self.sink = sink
        self.engine = engine or EspeakEngine()
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop the current utterance (shutdown); the next :meth:`speak` runs normally."""
        self._cancel.set()

    def close(self) -> None:
        self.cancel()
        self.sink.close()

    def speak(
        self,
        ssml: str,
        voice: VoiceSettings,
        name: str = "utterance",
        on_begin: Callable[[], None] | None = None,
        on_end: Callable[[SpokenUtterance], None] | None = None,
        on_word: SpeechCallback | None = None,
        on_mark: SpeechCallback | None = None,
        max_s: float | None = None,
        on_phonemes: Callable[[list[SpeechEvent]], None] | None = None,
    ) -> SpokenUtterance:
        """Synthesise and output ``ssml``; returns when the audio has been played out.
        ``max_s``: at most this much audio (pauses included), the rest is not synthesised, so
        no text can hold the output longer (``result.cut``)."""
        self._cancel.clear()
        rate = self.engine.sample_rate
        max_samples = None if max_s is None else max(int(max_s * rate), 0)
        result = SpokenUtterance(name=name, sample_rate=rate, requested_at=time.monotonic())
        sink = self.sink
        pending: list[SpeechEvent] = []
        block_bytes = max(int(rate * BLOCK_S), 1) * SAMPLE_WIDTH
        state: dict[str, float] = {}

        def due(event: SpeechEvent) -> float:
            if not sink.realtime:
                return 0.0
            return state["t0"] + sink.latency_s + event.audio_ms / 1000.0

        def fire_due(now: float, force: bool = False) -> None:
            while pending and (force or due(pending[0]) <= now):
                event = pending.pop(0)
                fired = SpeechEvent(event.kind, event.name, event.audio_ms, event.text_position, now)
                if fired.kind == "word":
                    result.words.append(fired)
                    if on_word:
                        on_word(fired)
                else:
                    result.marks.append(fired)
                    if on_mark:
                        on_mark(fired)

        def on_audio(pcm: bytes, events: list[SpeechEvent]) -> bool:
            if self._cancel.is_set():
                result.cancelled = True
                return False
            if "t0" not in state:
                sink.begin(name, rate)
                if on_begin:
                    on_begin()
                result.began_at = state["t0"] = time.monotonic()
            phonemes = [e for e in events if e.kind == "phoneme"]
            pending.extend(e for e in events if e.kind != "phoneme")
            pending.sort(key=lambda e: e.audio_ms)
            if max_samples is not None and result.samples + len(pcm) // SAMPLE_WIDTH >= max_samples:
                pcm = pcm[: (max_samples - result.samples) * SAMPLE_WIDTH]
                result.cut = True
                end_ms = max_samples * 1000 // rate
                pending[:] = [e for e in pending if e.audio_ms <= end_ms]  # never said: never reported
                phonemes = [e for e in phonemes if e.audio_ms < end_ms]
            if phonemes:
                result.phonemes.extend(phonemes)
                if on_phonemes:
                    on_phonemes(phonemes)
            for offset in range(0, len(pcm), block_bytes):
                fire_due(time.monotonic())
                block = pcm[offset : offset + block_bytes]
                sink.write(block)
                result.samples += len(block) // SAMPLE_WIDTH
                if result.first_audio_at is None:
                    result.first_audio_at = time.monotonic()
                if sink.realtime:
                    target = state["t0"] + result.samples / rate - sink.lead_s
                    delay = target - time.monotonic()
                    if delay > 0 and self._cancel.wait(delay):
                        result.cancelled = True
                        return False
            fire_due(time.monotonic())
            return not result.cut

        try:
            self.engine.synthesize(ssml, voice, on_audio)
            if "t0" in state:
                end_at = state["t0"] + sink.latency_s + result.samples / rate if sink.realtime else 0.0
                while not result.cancelled:
                    now = time.monotonic()
                    fire_due(now)
                    if now >= end_at:
                        break
                    next_due = due(pending[0]) if pending else end_at
                    if self._cancel.wait(max(min(next_due, end_at) - now, 0.0)):
                        result.cancelled = True
                if not result.cancelled:
                    fire_due(time.monotonic(), force=True)
        finally:
            if "t0" in state:
                result.path = sink.end()
                result.ended_at = time.monotonic()
                if on_end:
                    on_end(result)
        return result
