"""espeak-ng through pyttsx3's ctypes binding: streaming SSML synthesis with word, mark and
phoneme events (see :mod:`hardware.speaker` for why it is driven one level below pyttsx3).
In-process and always installed: the fallback of every other engine's voice."""

from __future__ import annotations

import ctypes
import re
import threading
from collections.abc import Callable
from typing import Any

from hardware.speech_types import SAMPLE_WIDTH, SpeakerError, SpeechEvent, VoiceSettings

ESPEAK_BUFFER_MS = 40
"""espeak hands audio over in buffers of about this length: small enough for a quick first
sample, large enough to keep callback overhead negligible."""
EVENT_PHONEME = 7
"""``espeakEVENT_PHONEME`` (speak_lib.h; pyttsx3's binding names only types 0-6)."""
INITIALIZE_PHONEME_EVENTS = 0x0001
"""``espeakINITIALIZE_PHONEME_EVENTS``: report a phoneme event as each phoneme starts."""
PHONEME_NAME_BYTES = 8
"""A phoneme event's ``id`` holds the phoneme's mnemonic as ``char string[8]``."""

INSTALL_HINT = "install espeak-ng (Debian/Ubuntu: apt-get install espeak-ng libespeak-ng1)"


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


def word_start(ssml: str, reported: int) -> int:
    """Where the word espeak-ng reports at 1-based ``reported`` starts in ``ssml``: after a
    sentence end espeak-ng reports positions one character late ("eal" for "Deal"), so move
    back to the start of the word."""
    start = max(reported - 1, 0)
    while 0 < start < len(ssml) and ssml[start - 1].isalnum() and ssml[start].isalnum():
        start -= 1
    return start


class _Synthesis:
    """One utterance's run through espeak-ng's synthesis callback: each buffer and its events
    (words cut out of the SSML, marks made to fire once, phonemes by mnemonic) handed to
    ``on_audio``. An exception in ``on_audio`` stops the run and is kept for the caller."""

    def __init__(self, espeak: Any, ssml: str, sample_rate: int, on_audio: Callable[[bytes, list[SpeechEvent]], bool]) -> None:
        self._es = espeak
        self._ssml = ssml
        self._sample_rate = sample_rate
        self._on_audio = on_audio
        self._marks = _MarkTracker(ssml)
        self._produced = 0
        """Samples synthesised so far."""
        self._last_word = 0
        """Text position of the furthest word reported so far."""
        self.failure: BaseException | None = None
        """The first exception ``on_audio`` raised (re-raised after synthesis returns)."""

    def callback(self, wav: Any, numsamples: int, events: Any) -> int:
        """espeak-ng's ``t_espeak_callback``: 0 to go on, 1 to abort."""
        try:
            found = self._read(events)
            pcm = ctypes.string_at(wav, numsamples * SAMPLE_WIDTH) if numsamples > 0 else b""
            self._produced += numsamples if numsamples > 0 else 0
            if not pcm and not found:
                return 0
            return 0 if self._on_audio(pcm, found) else 1
        except BaseException as exc:  # re-raised after synthesis returns
            if self.failure is None:
                self.failure = exc
            return 1

    def _read(self, events: Any) -> list[SpeechEvent]:
        """The events of one buffer (espeak's list ends with a terminator event)."""
        es = self._es
        found: list[SpeechEvent] = []
        i = 0
        while True:
            ev = events[i]
            if ev.type == es.EVENT_LIST_TERMINATED:
                break
            if ev.type == es.EVENT_MSG_TERMINATED:
                found.extend(self._marks.remaining(self._produced * 1000 // self._sample_rate))
                break
            if ev.type == es.EVENT_WORD:
                found.extend(self._word(ev.text_position, ev.audio_position))
            elif ev.type == EVENT_PHONEME:
                raw = ctypes.string_at(ctypes.addressof(ev.id), PHONEME_NAME_BYTES).split(b"\0", 1)[0]
                if raw:
                    found.append(SpeechEvent("phoneme", raw.decode("ascii", "replace"), ev.audio_position))
            elif ev.type == es.EVENT_MARK and ev.id.name:
                name = ev.id.name.decode("utf-8", "replace")
                if self._marks.reported(name):
                    found.append(SpeechEvent("mark", name, ev.audio_position))
            i += 1
        return found

    def _word(self, text_position: int, audio_ms: int) -> list[SpeechEvent]:
        """A word starting: the marks before it, then the word as written (none when espeak
        points into a tag or back at a word already passed)."""
        ssml = self._ssml
        start = word_start(ssml, text_position)
        found = self._marks.before_word(start, audio_ms)
        # words only move forward; espeak-ng sometimes ends an utterance with a word event
        # pointing back at the text's start
        backwards = start < self._last_word
        self._last_word = max(self._last_word, start)
        skip = backwards or ssml.rfind("<", 0, start + 1) > ssml.rfind(">", 0, start)
        token = None if skip else _TOKEN.match(ssml, start)
        word = token.group(0).rstrip(_TRAILING_PUNCTUATION) if token else ""
        if word:
            found.append(SpeechEvent("word", word, audio_ms, start))
        return found


class EspeakEngine:
    """Streaming SSML synthesis with espeak-ng. One utterance at a time per process."""

    def __init__(self) -> None:
        self._espeak = _EspeakBinding.get()
        self.sample_rate = _EspeakBinding.sample_rate

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
        run = _Synthesis(es, ssml, self.sample_rate, on_audio)
        with _EspeakBinding.lock:
            self._apply(settings)
            # pyttsx3 keeps the callback's ctypes wrapper in its module (SynthCallback) until the next one
            es.SetSynthCallback(run.callback)
            flags = es.SSML | es.CHARS_UTF8 | es.ENDPAUSE
            rc = es.Synth(ssml, flags=flags)
        if run.failure is not None:
            raise run.failure
        if rc != es.EE_OK:
            raise SpeakerError(f"espeak-ng refused the text (error {rc})")
