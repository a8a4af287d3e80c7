"""The sound server (PulseAudio, or PipeWire's pulse server) as the suite sees it: its
microphones (sources) and loudspeakers (sinks) by name, its defaults, and their latencies.

Reached the way every libpulse client reaches it (``PULSE_SERVER``, ``PULSE_RUNTIME_PATH``,
``XDG_RUNTIME_DIR`` from the environment), through ``pulsectl``. Each call opens its own short
connection with a short timeout: a machine without a sound server answers "none" in well under
a second and nothing here raises for it: callers get empty lists and ``None``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeVar

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 0.5
"""How long to wait for the server to answer: a local server answers in milliseconds."""
CLIENT_NAME = "humaine-env"
INVALID_INDEX = 0xFFFFFFFF
"""libpulse's PA_INVALID_INDEX: a source's ``monitor_of_sink`` when it monitors no sink."""

DeviceKind = Literal["source", "sink"]
T = TypeVar("T")


@dataclass(frozen=True)
class SoundDevice:
    """One source (a microphone, or a sink's monitor) or sink (a loudspeaker) of the server."""

    name: str
    """What ``mic:NAME`` / ``soundcard:NAME`` take, e.g. ``alsa_input.usb-…`` or ``room_mic``."""
    description: str
    kind: DeviceKind
    rate: int
    channels: int
    default: bool
    monitor_of: str | None = None
    """For a source that is a sink's monitor (what the sink plays): that sink's name."""

    @property
    def is_monitor(self) -> bool:
        return self.monitor_of is not None

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "monitor": self.is_monitor}


@functools.cache
def _pulse_class() -> Any:
    """``pulsectl.Pulse`` whose connection returns as soon as the server answers.

    pulsectl 24.12's ``connect(timeout=...)`` polls its main loop until the deadline even after
    the context is ready (its poll clears the stop flag the connect set), so every query took the
    whole :data:`CONNECT_TIMEOUT_S`: half a second of a capture's presence check each second, in
    the thread that hands its audio over. Stopping the loop from the state callback ends the wait
    at ``READY``; a server that never answers still times out."""
    import pulsectl

    if not hasattr(pulsectl.Pulse, "_pulse_state_cb"):  # another pulsectl: its own connect as it is
        return pulsectl.Pulse

    class Pulse(pulsectl.Pulse):  # type: ignore[misc]
        def _pulse_state_cb(self, ctx: Any, userdata: Any) -> None:
            super()._pulse_state_cb(ctx, userdata)
            if self.connected is not None:
                self._loop_stop = True

    return Pulse


@contextmanager
def _connection() -> Iterator[Any]:
    """A connected ``pulsectl.Pulse``, or ``None`` when no server answers (or libpulse or
    pulsectl are missing)."""
    try:
        import pulsectl
    except (ImportError, OSError) as exc:
        log.debug("no pulsectl: %s", exc)
        yield None
        return
    pulse = _pulse_class()(CLIENT_NAME, connect=False)
    try:
        pulse.connect(timeout=CONNECT_TIMEOUT_S)
    except pulsectl.PulseError as exc:
        log.debug("no sound server: %s", exc)
        pulse.close()
        yield None
        return
    try:
        yield pulse
    finally:
        pulse.close()


def _ask(question: Callable[[Any], T], otherwise: T) -> T:
    """``question(pulse)`` on a fresh connection; ``otherwise`` when there is no server or it
    fails meanwhile (a server that stops between two calls is the same as none)."""
    with _connection() as pulse:
        if pulse is None:
            return otherwise
        import pulsectl  # importable: it connected

        try:
            return question(pulse)
        except (pulsectl.PulseError, OSError) as exc:
            log.debug("sound server query failed: %s", exc)
            return otherwise


def server_reachable() -> bool:
    """Whether a sound server answers (within :data:`CONNECT_TIMEOUT_S`)."""
    with _connection() as pulse:
        return pulse is not None


def _device(info: Any, kind: DeviceKind, default_name: str) -> SoundDevice:
    monitor_of = getattr(info, "monitor_of_sink_name", None) if kind == "source" else None
    monitor_index = getattr(info, "monitor_of_sink", None)
    is_monitor = kind == "source" and monitor_index is not None and monitor_index != INVALID_INDEX
    return SoundDevice(
        name=str(info.name),
        description=str(info.description or info.name),
        kind=kind,
        rate=int(info.sample_spec.rate),
        channels=int(info.channel_count),
        default=info.name == default_name,
        monitor_of=str(monitor_of) if is_monitor and monitor_of else None,
    )


def list_sources() -> list[SoundDevice]:
    """Every source, monitors included (``is_monitor``)."""

    def ask(pulse: Any) -> list[SoundDevice]:
        default = pulse.server_info().default_source_name
        return [_device(s, "source", default) for s in pulse.source_list()]

    return _ask(ask, [])


def list_sinks() -> list[SoundDevice]:
    def ask(pulse: Any) -> list[SoundDevice]:
        default = pulse.server_info().default_sink_name
        return [_device(s, "sink", default) for s in pulse.sink_list()]

    return _ask(ask, [])


def default_sink_name() -> str | None:
    return _ask(lambda pulse: str(pulse.server_info().default_sink_name) or None, None)


def default_source_name() -> str | None:
    return _ask(lambda pulse: str(pulse.server_info().default_source_name) or None, None)


def monitor_source_name(sink: str | None = None) -> str | None:
    """The source that hears what ``sink`` plays (the default sink when ``None``)."""

    def ask(pulse: Any) -> str | None:
        name = sink or pulse.server_info().default_sink_name
        return str(pulse.get_sink_by_name(name).monitor_source_name) or None

    return _ask(ask, None)


def latency_ms(name: str, kind: DeviceKind) -> float | None:
    """The device's current latency in ms: how much audio is between a stream and the device's
    converter now (its configured latency while it reports none, as an idle device does);
    ``None`` when there is no such device."""
    return _latency(name, kind, "latency")


def configured_latency_ms(name: str, kind: DeviceKind) -> float | None:
    """The latency the device is set to now (the smallest its streams asked for), in ms: what
    audio written now waits once the device runs, steadier than :func:`latency_ms` while the
    device settles after a stream arrives."""
    return _latency(name, kind, "configured_latency")


def _latency(name: str, kind: DeviceKind, field: str) -> float | None:
    def ask(pulse: Any) -> float:
        info = pulse.get_sink_by_name(name) if kind == "sink" else pulse.get_source_by_name(name)
        latency_us = getattr(info, field) or info.configured_latency
        return float(latency_us) / 1000.0

    return _ask(ask, None)


@dataclass(frozen=True)
class StreamPlace:
    """Where a recording stream is: ``answered`` False when the server could not be asked (then
    nothing is known); else ``source`` is the source it records from, ``None`` when it is gone."""

    answered: bool
    source: str | None = None


def stream_source(stream_name: str) -> StreamPlace:
    """The source a recording stream named ``stream_name`` (its ``media.name``) records from now."""

    def ask(pulse: Any) -> StreamPlace:
        for output in pulse.source_output_list():
            if output.proplist.get("media.name") == stream_name:
                return StreamPlace(True, str(pulse.source_info(output.source).name))
        return StreamPlace(True, None)

    return _ask(ask, StreamPlace(False))


def match_device(devices: Sequence[SoundDevice], wanted: str) -> SoundDevice | None:
    """The device ``wanted`` names: its exact name first, then the first whose name or
    description contains it (case-insensitive); ``None`` when none does."""
    wanted = wanted.strip()
    if not wanted:
        return None
    for device in devices:
        if device.name == wanted:
            return device
    folded = wanted.lower()
    for device in devices:
        if folded in device.name.lower() or folded in device.description.lower():
            return device
    return None
