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

import logging
import threading
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hardware.speech_engines import EngineSet
from hardware.speech_types import SAMPLE_WIDTH, SpeakerError, SpeechEvent, VoiceSettings
from hardware.tts_espeak import EspeakEngine, list_voices

if TYPE_CHECKING:
    from hardware.speech_process import SpeechProcess

__all__ = [
    "SAMPLE_WIDTH",
    "AudioSink",
    "EspeakEngine",
    "SoundCardSink",
    "Speaker",
    "SpeakerError",
    "SpeechEvent",
    "SpokenUtterance",
    "VoiceSettings",
    "WavSink",
    "list_voices",
]

log = logging.getLogger(__name__)

BLOCK_S = 0.02
"""Granularity of output writes, hence of pacing and event timing (20 ms)."""
SOUNDCARD_LEAD_S = 0.12
"""How far ahead of the audible position we keep the sound card's buffer filled."""


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
        self.instead_of = ""
        """Why there is no sound card, when these files stand in for it (``auto``)."""

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
    All callbacks run on the calling thread of :meth:`speak`.

    ``engines``: where the voices are loaded and synthesised - by default an
    :class:`~hardware.speech_engines.EngineSet` in this process (``engine`` its espeak-ng), or a
    :class:`~hardware.speech_process.SpeechProcess` (a supervised child process: a crash of an
    engine fails the utterance, not this process). :meth:`close` closes them."""

    def __init__(
        self,
        sink: AudioSink,
        engine: EspeakEngine | None = None,
        engines: EngineSet | SpeechProcess | None = None,
    ) -> None:
        self.sink = sink
        self.engines: EngineSet | SpeechProcess = engines if engines is not None else EngineSet(espeak=engine or EspeakEngine())
        self._cancel = threading.Event()

    def check_voice(self, voice: VoiceSettings) -> VoiceSettings:
        """Load ``voice``'s engine now (not at the first reply); the settings that will really
        speak (the espeak-ng fallback when the voice is missing). Raises :class:`SpeakerError`
        when neither can."""
        return self.engines.resolve(voice)[1]

    def cancel(self) -> None:
        """Stop the current utterance (shutdown); the next :meth:`speak` runs normally."""
        self._cancel.set()

    def close(self) -> None:
        self.cancel()
        self.sink.close()
        self.engines.close()

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
        engine, voice = self.engines.resolve(voice)
        rate = engine.sample_rate
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
            engine.synthesize(ssml, voice, on_audio)
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
