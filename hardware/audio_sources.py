"""Opening an audio source by its spec, and listing capture devices.

The factory sits apart from :mod:`hardware.audio` (the interface every source implements) so
that the sources import the interface and the factory imports the sources: no module of the
three imports one that imports it back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hardware.audio import DEFAULT_BLOCK_MS, SPEC_HELP, AudioSource, AudioSourceError
from hardware.audio_files import FileSource, ReplaySource
from hardware.clock import REPLAY_KIND, Clock, RealClock

if TYPE_CHECKING:
    from hardware.audio_live import InputDevice


def open_source(
    spec: str,
    clock: Clock | None = None,
    block_ms: int = DEFAULT_BLOCK_MS,
    start_ms: int | None = None,
) -> AudioSource:
    """Build the source named by ``spec`` (the specs: :mod:`hardware.audio`)."""
    kind, sep, arg = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "mic":
        return _open_device(arg if sep else None, clock or RealClock(), block_ms)
    if not sep or not arg:
        raise AudioSourceError(f"audio source {spec!r} needs a path: {SPEC_HELP}")
    if kind in ("wav", "file", "raw"):
        return FileSource(arg, block_ms=block_ms, start_ms=start_ms, raw=kind == "raw")
    if kind == REPLAY_KIND:
        return ReplaySource(arg, clock=clock or RealClock(), block_ms=block_ms)
    raise AudioSourceError(f"unknown audio source {kind!r} in {spec!r}: {SPEC_HELP}")


def _open_device(device: str | None, clock: Clock, block_ms: int) -> AudioSource:
    """``mic[:DEVICE]``: the sound server's source of that name when a server runs and has one
    (its default without a name), else PortAudio's device (its default without a name)."""
    from hardware.audio_pulse import SoundServerSource, server_source_for

    found = server_source_for(device)
    if found is not None:
        return SoundServerSource(found.name, block_ms=block_ms, clock=clock, description=found.description)
    from hardware.audio_live import MicrophoneSource  # PortAudio loads only for a live device

    try:
        return MicrophoneSource(device, block_ms=block_ms, clock=clock)
    except AudioSourceError as exc:
        hint = _server_sources_hint(device)
        if not hint:
            raise
        # not "no device at all" (typed input instead) when the server has microphones: retried
        raise AudioSourceError(f"{exc}; {hint}") from None


def _server_sources_hint(device: str | None) -> str:
    """When a named device is not found anywhere: the sound server's sources too (a source
    that is unplugged now may come back; the caller retries)."""
    from hardware import sound_server

    names = [s.name for s in sound_server.list_sources() if not s.is_monitor]
    return f"sound server sources: {', '.join(names)}" if device and names else ""


def list_input_devices() -> list[InputDevice]:
    """Capture devices PortAudio sees: index, name, host API, channels, default rate, default.
    Empty when there is none (or PortAudio itself is missing)."""
    from hardware.audio_live import query_input_devices

    return query_input_devices()
