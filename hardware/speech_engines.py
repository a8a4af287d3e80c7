"""Which engine speaks a voice, and what speaks instead when it cannot.

A voice is ``(engine, voice)``: ``espeak`` (espeak-ng, in-process: always there, the
fallback), ``festival`` (a Festival voice name) or ``piper`` (a packaged Piper voice or a
``.onnx`` path). Engines are made once per voice and process and kept: loading one takes
0.2-1.5 s, which must not be paid by the first reply (nor by every speaker a test starts).

A voice that cannot be loaded gives one line naming what to install and the espeak-ng voice
that speaks instead (the avatar's ``fallback``), so a machine without Festival or Piper still
has both avatars talking, each still recognisably itself.
"""

from __future__ import annotations

import atexit
import logging
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Literal, Protocol, get_args

from hardware.speech_types import SpeakerError, SpeechEvent, VoiceSettings
from hardware.tts_espeak import EspeakEngine

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

EngineName = Literal["espeak", "festival", "piper"]
ENGINES: tuple[str, ...] = get_args(EngineName)
FALLBACK_ENGINE: EngineName = "espeak"
"""espeak-ng is in-process and always there: the last resort."""


class SpeechEngine(Protocol):
    """What the speaker needs of an engine."""

    sample_rate: int

    def check_voice(self, settings: VoiceSettings) -> None: ...

    def synthesize(self, ssml: str, settings: VoiceSettings,
                   on_audio: Callable[[bytes, list[SpeechEvent]], bool]) -> None: ...


def _make(engine: str, voice: str) -> SpeechEngine:
    if engine == "espeak":
        return EspeakEngine()
    if engine == "festival":
        from hardware.tts_festival import FestivalEngine

        return FestivalEngine(voice)
    if engine == "piper":
        from hardware.tts_piper import PiperEngine

        return PiperEngine(voice)
    raise SpeakerError(f"no speech engine {engine!r}; choose one of {', '.join(ENGINES)}")


_SHARED: dict[tuple[str, str], SpeechEngine] = {}
"""Sentence engines made in this process, by (engine, voice): a voice takes 0.2-1.5 s and a
few hundred MB to load, so every speaker of the process (one in a controller; many in tests and
benchmarks) shares it. Their rendering is serialised per engine. Closed when the process ends."""
_SHARED_LOCK = threading.Lock()


def _shared(engine: str, voice: str) -> SpeechEngine:
    with _SHARED_LOCK:
        if (engine, voice) not in _SHARED:
            _SHARED[(engine, voice)] = _make(engine, voice)
        return _SHARED[(engine, voice)]


@atexit.register
def _close_shared() -> None:
    """A Festival process of ours must not outlive us."""
    with _SHARED_LOCK:
        engines = list(_SHARED.values())
        _SHARED.clear()
    for engine in engines:
        close = getattr(engine, "close", None)
        if close is not None:
            close()


class EngineSet:
    """The engines of the voices in use, each made and loaded once, with their fallbacks."""

    def __init__(self, espeak: SpeechEngine | None = None) -> None:
        self._engines: dict[tuple[str, str], SpeechEngine] = {}
        self._resolved: dict[VoiceSettings, tuple[SpeechEngine, VoiceSettings]] = {}
        self._lock = threading.Lock()
        if espeak is not None:
            self._engines[(FALLBACK_ENGINE, "")] = espeak

    def _engine(self, settings: VoiceSettings) -> SpeechEngine:
        key = (settings.engine, "" if settings.engine == FALLBACK_ENGINE else settings.voice)
        if key not in self._engines:
            self._engines[key] = _make(settings.engine, settings.voice) if settings.engine == FALLBACK_ENGINE \
                else _shared(settings.engine, settings.voice)
        return self._engines[key]

    def resolve(self, settings: VoiceSettings) -> tuple[SpeechEngine, VoiceSettings]:
        """The engine that speaks ``settings`` and the settings it speaks with: the voice's own,
        or its espeak-ng fallback (one line, once per voice) when the voice cannot be loaded."""
        with self._lock:
            if settings in self._resolved:
                return self._resolved[settings]
            try:
                engine = self._engine(settings)
                engine.check_voice(settings)
                resolved = (engine, settings)
            except SpeakerError as exc:
                if settings.engine == FALLBACK_ENGINE or not settings.fallback:
                    raise
                fallback = replace(settings, engine=FALLBACK_ENGINE, voice=settings.fallback, pitch=None)
                log.warning("%s; speaking with espeak-ng %s instead", exc, settings.fallback)
                engine = self._engine(fallback)
                engine.check_voice(fallback)
                resolved = (engine, fallback)
            self._resolved[settings] = resolved
            return resolved

    def close(self) -> None:
        """Nothing to release: espeak-ng is process-wide, and the sentence engines are shared
        by the process's speakers (closed when it ends)."""
