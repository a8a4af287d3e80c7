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
        from hardware.audio_live import MicrophoneSource  # PortAudio loads only for a live device

        return MicrophoneSource(arg if sep else None, block_ms=block_ms, clock=clock or RealClock())
    if not sep or not arg:
        raise AudioSourceError(f"audio source {spec!r} needs a path: {SPEC_HELP}")
    if kind in ("wav", "file", "raw"):
        return FileSource(arg, block_ms=block_ms, start_ms=start_ms, raw=kind == "raw")
    if kind == REPLAY_KIND:
        return ReplaySource(arg, clock=clock or RealClock(), block_ms=block_ms)
    raise AudioSourceError(f"unknown audio source {kind!r} in {spec!r}: {SPEC_HELP}")


def list_input_devices() -> list[InputDevice]:
    """Capture devices PortAudio sees: index, name, host API, channels, default rate, default.
    Empty when there is none (or PortAudio itself is missing)."""
    from hardware.audio_live import query_input_devices

    return query_input_devices()
