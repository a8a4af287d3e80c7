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
    "UtteranceCallbacks",
    "UtterancePlayback",
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
    """Where utterances go. ``realtime`` sinks are paced by the speaker at playback speed.

    The three figures are read-only here, so a sink may hold them as attributes or compute
    them (a sound card knows its latency only once its stream is open)."""

    @property
    def realtime(self) -> bool: ...

    @property
    def latency_s(self) -> float:
        """Time from a write to the samples being audible."""
        ...

    @property
    def lead_s(self) -> float:
        """How far ahead of the audible position writes may run."""
        ...

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

    def __init__(self, directory: str | Path, realtime: bool = True, instead_of: str = "") -> None:
        self.directory = Path(directory)
        self.realtime = realtime
        self.instead_of = instead_of
        """Why there is no sound card, when these files stand in for it (``auto``)."""
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


@dataclass(frozen=True)
class UtteranceCallbacks:
    """What :meth:`Speaker.speak` tells its caller, and when (see :class:`Speaker`)."""

    on_begin: Callable[[], None] | None = None
    on_end: Callable[[SpokenUtterance], None] | None = None
    on_word: SpeechCallback | None = None
    on_mark: SpeechCallback | None = None
    on_phonemes: Callable[[list[SpeechEvent]], None] | None = None


@dataclass(frozen=True)
class _Pacing:
    """When the output plays an utterance's samples: the moment it began and the sink's figures,
    read once then (a sound card knows its latency only once its stream is open, and a
    :class:`~hardware.speaker_stream.TeeSink` computes each figure over its sinks)."""

    began_at: float
    realtime: bool
    latency_s: float
    lead_s: float

    def audible_at(self, audio_s: float) -> float:
        """When the sample ``audio_s`` into the utterance is heard (0: at once, for a sink that
        is not realtime)."""
        return self.began_at + self.latency_s + audio_s if self.realtime else 0.0


class UtterancePlayback:
    """One utterance on its way out: the engine's buffers written to the sink in blocks of
    :data:`BLOCK_S`, paced at playback speed for a realtime sink, its word and mark events held
    until the output reaches them, its audio cut at ``max_samples``.

    :meth:`on_audio` is the engine's ``on_audio``; :meth:`play_out` waits for the last sample
    to be heard; :meth:`finish` closes the utterance in the sink. ``cancel`` set stops it."""

    def __init__(
        self,
        sink: AudioSink,
        result: SpokenUtterance,
        callbacks: UtteranceCallbacks,
        cancel: threading.Event,
        max_samples: int | None = None,
    ) -> None:
        self.result = result
        self._sink = sink
        self._callbacks = callbacks
        self._cancel = cancel
        self._max_samples = max_samples
        self._block_bytes = max(int(result.sample_rate * BLOCK_S), 1) * SAMPLE_WIDTH
        self._pending: list[SpeechEvent] = []
        """Word and mark events synthesised but not reached yet, in audio order."""
        self._pacing: _Pacing | None = None
        """Set when the first samples go out (None before)."""

    def on_audio(self, pcm: bytes, events: list[SpeechEvent]) -> bool:
        """One buffer from the engine: phonemes handed over, audio written (paced), due events
        fired. False stops the synthesis (cancelled, or the audio reached ``max_samples``)."""
        if self._cancel.is_set():
            self.result.cancelled = True
            return False
        if self._pacing is None:
            self._begin()
        phonemes = [e for e in events if e.kind == "phoneme"]
        self._pending.extend(e for e in events if e.kind != "phoneme")
        self._pending.sort(key=lambda e: e.audio_ms)
        pcm, phonemes = self._cut(pcm, phonemes)
        if phonemes:
            self.result.phonemes.extend(phonemes)
            if self._callbacks.on_phonemes:
                self._callbacks.on_phonemes(phonemes)
        if not self._write(pcm):
            self.result.cancelled = True
            return False
        self._fire_due(time.monotonic())
        return not self.result.cut

    def play_out(self) -> None:
        """After synthesis: wait until the last sample is audible, firing the events it
        reaches on the way; then whatever is left (unless cancelled)."""
        if self._pacing is None:
            return
        end_at = self._pacing.audible_at(self.result.samples / self.result.sample_rate)
        while not self.result.cancelled:
            now = time.monotonic()
            self._fire_due(now)
            if now >= end_at:
                break
            next_due = self._due(self._pending[0]) if self._pending else end_at
            if self._cancel.wait(max(min(next_due, end_at) - now, 0.0)):
                self.result.cancelled = True
        if not self.result.cancelled:
            self._fire_due(time.monotonic(), force=True)

    def finish(self) -> None:
        """Close the utterance in the sink and report it, if any audio went out."""
        if self._pacing is None:
            return
        self.result.path = self._sink.end()
        self.result.ended_at = time.monotonic()
        if self._callbacks.on_end:
            self._callbacks.on_end(self.result)

    def _begin(self) -> None:
        sink = self._sink
        sink.begin(self.result.name, self.result.sample_rate)
        if self._callbacks.on_begin:
            self._callbacks.on_begin()
        self._pacing = _Pacing(time.monotonic(), sink.realtime, sink.latency_s, sink.lead_s)
        self.result.began_at = self._pacing.began_at

    def _cut(self, pcm: bytes, phonemes: list[SpeechEvent]) -> tuple[bytes, list[SpeechEvent]]:
        """``pcm`` and its ``phonemes`` up to ``max_samples``; events past it are dropped."""
        limit = self._max_samples
        if limit is None or self.result.samples + len(pcm) // SAMPLE_WIDTH < limit:
            return pcm, phonemes
        self.result.cut = True
        end_ms = limit * 1000 // self.result.sample_rate
        self._pending = [e for e in self._pending if e.audio_ms <= end_ms]  # never said: never reported
        return pcm[: (limit - self.result.samples) * SAMPLE_WIDTH], [e for e in phonemes if e.audio_ms < end_ms]

    def _write(self, pcm: bytes) -> bool:
        """Write ``pcm`` block by block, firing due events before each; False when cancelled
        while waiting for the output to catch up."""
        for offset in range(0, len(pcm), self._block_bytes):
            self._fire_due(time.monotonic())
            block = pcm[offset : offset + self._block_bytes]
            self._sink.write(block)
            self.result.samples += len(block) // SAMPLE_WIDTH
            if self.result.first_audio_at is None:
                self.result.first_audio_at = time.monotonic()
            pacing = self._pacing
            if pacing is not None and pacing.realtime:
                target = pacing.began_at + self.result.samples / self.result.sample_rate - pacing.lead_s
                delay = target - time.monotonic()
                if delay > 0 and self._cancel.wait(delay):
                    return False
        return True

    def _due(self, event: SpeechEvent) -> float:
        """When the output reaches ``event`` (0: at once, for a sink that is not realtime)."""
        return self._pacing.audible_at(event.audio_ms / 1000.0) if self._pacing is not None else 0.0

    def _fire_due(self, now: float, force: bool = False) -> None:
        while self._pending and (force or self._due(self._pending[0]) <= now):
            event = self._pending.pop(0)
            fired = SpeechEvent(event.kind, event.name, event.audio_ms, event.text_position, now)
            if fired.kind == "word":
                self.result.words.append(fired)
                if self._callbacks.on_word:
                    self._callbacks.on_word(fired)
            else:
                self.result.marks.append(fired)
                if self._callbacks.on_mark:
                    self._callbacks.on_mark(fired)


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
        playback = UtterancePlayback(
            self.sink,
            SpokenUtterance(name=name, sample_rate=rate, requested_at=time.monotonic()),
            UtteranceCallbacks(on_begin, on_end, on_word, on_mark, on_phonemes),
            self._cancel,
            max_samples=None if max_s is None else max(int(max_s * rate), 0),
        )
        try:
            engine.synthesize(ssml, voice, playback.on_audio)
            playback.play_out()
        finally:
            playback.finish()
        return playback.result
