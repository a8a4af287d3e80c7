"""Whether the microphone worker cancels the room's echo, and with what reference.

The reference is the monitor of the sound server's sink the avatars play on (``[microphone]
echo_reference``, the default sink when empty): it carries what that loudspeaker really plays,
captured by the server that plays it, and the sink's latency says how much later it sounds. That
latency is asked again while the loudspeaker plays (:class:`OutputDelay`): an idle sink reports
the longest it may buffer (PulseAudio: up to 2 s), and settles at what its streams ask (the
avatars' speaker: a fraction of a second) only once they play.

There is no reference for a file or replayed source (nothing was played while it was recorded),
with no sound server (PortAudio straight to a card, a headset) or with ``echo_cancel = "off"``:
then speech over an avatar is dropped as echo, as it always was, and the start says so once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from hardware import sound_server
from hardware.audio import AudioSource, is_device
from hardware.audio_pulse import SoundServerSource
from hardware.clock import Clock
from workers.microphone.echo_cancel import EchoCanceller, PlayedAudio, ReferenceReader
from workers.microphone.settings import MicrophoneSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reference:
    """The monitor to capture and the sink's output delay."""

    sink: str
    monitor: str
    output_delay_ms: float


def find_reference(settings: MicrophoneSettings) -> Reference | str:
    """The reference the settings and the machine give, or why there is none (one line)."""
    if settings.echo_cancel == "off":
        return "echo cancellation is off ([microphone] echo_cancel)"
    if not is_device(settings.source):
        return f"the source {settings.source!r} is not a live microphone"
    if not sound_server.server_reachable():
        return "no sound server plays the room's loudspeaker"
    sink = settings.echo_reference or sound_server.default_sink_name()
    monitor = sound_server.monitor_source_name(sink) if sink else None
    if not sink or not monitor:
        return f"the sound server has no sink {settings.echo_reference!r}" if settings.echo_reference else "the sound server has no sink"
    return Reference(sink, monitor, sound_server.latency_ms(sink, "sink") or 0.0)


LATENCY_EVERY_S = 1.0
"""How often the sink's latency is asked while the loudspeaker plays."""
LATENCY_MOVE_MS = 10.0
"""A change of the sink's latency smaller than this leaves the alignment alone (the filter's lead
and span absorb it; moving it costs the filter a little re-adaptation)."""
WATCH_S = 0.1
"""How soon after the loudspeaker starts playing its sink's latency is asked: the alignment the
filter learns from the first syllables on is then the right one."""


class OutputDelay:
    """Keeps the canceller's output delay at the sink's latency while the loudspeaker plays, on a
    thread of its own (the question goes to the sound server; the audio path never waits for it):
    asked as the loudspeaker starts, then every :data:`LATENCY_EVERY_S` while it plays."""

    def __init__(self, sink: str, canceller: EchoCanceller, every_s: float = LATENCY_EVERY_S,
                 ask: Callable[[str], float | None] | None = None) -> None:
        self.sink = sink
        self.canceller = canceller
        self.every_s = every_s
        self._ask = ask or (lambda name: sound_server.configured_latency_ms(name, "sink"))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="echo-output-delay", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asked_at: float | None = None
        while not self._stop.wait(WATCH_S):
            if not self.canceller.playing:
                asked_at = None
            elif asked_at is None or time.monotonic() - asked_at >= self.every_s:
                asked_at = time.monotonic()
                try:
                    self.follow(self._ask(self.sink))
                except Exception as exc:  # the alignment stays as it is; the thread goes on
                    log.debug("asking the latency of %s failed: %s", self.sink, exc)

    def follow(self, latency_ms: float | None) -> None:
        """Take the sink's latency as the output delay when it moved (None: not known now)."""
        stated = self.canceller.output_delay_ms
        if latency_ms is None or abs(latency_ms - stated) < LATENCY_MOVE_MS:
            return
        log.info("the loudspeaker %s now plays %.0f ms after its monitor (was %.0f ms)", self.sink, latency_ms, stated)
        self.canceller.set_output_delay(latency_ms)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)


class RoomEcho:
    """The worker's canceller and the thread that feeds it what the loudspeaker plays."""

    def __init__(self, reference: Reference, settings: MicrophoneSettings, clock: Clock,
                 on_error: Callable[[str], None]) -> None:
        self.reference = reference
        played = PlayedAudio()
        self.canceller = EchoCanceller(played, reference.output_delay_ms, settings.block_ms, settings.echo_filter_ms)
        self.reader = ReferenceReader(self._opener(settings.block_ms, clock), played, self._failed, settings.retry_s)
        self.output_delay = OutputDelay(reference.sink, self.canceller)
        self._on_error = on_error
        self.error = ""
        """Why the reference last failed (empty while it has not): the canceller then has nothing to cancel."""
        self.reader.start()

    def _opener(self, block_ms: int, clock: Clock) -> Callable[[], AudioSource]:
        monitor = self.reference.monitor
        return lambda: SoundServerSource(monitor, block_ms=block_ms, clock=clock, description="echo reference")

    def _failed(self, reason: str) -> None:
        self.error = reason
        self._on_error(reason)

    def describe(self) -> str:
        return f"echo cancelled: reference {self.reference.monitor} ({self.reference.output_delay_ms:.0f} ms output delay)"

    def health(self) -> dict[str, object]:
        stats = self.canceller.stats
        return {"echo_reference": self.reference.monitor, "echo_erle_db": stats.erle_db,
                "echo_cpu": round(stats.cpu_share, 4), "echo_reference_blocks": self.reader.played.blocks,
                "echo_reference_late": self.reader.played.late, "echo_moved_refused": self.canceller.moved_refused,
                "echo_output_delay_ms": round(self.canceller.output_delay_ms),
                "echo_delay_measured_ms": self.canceller.delay.measured_ms, "echo_delay_offset_ms": self.canceller.delay.offset_ms,
                "echo_reference_error": self.error}

    def close(self) -> None:
        self.output_delay.close()
        self.reader.close()
        self.canceller.close()


def room_echo(settings: MicrophoneSettings, clock: Clock, on_error: Callable[[str], None]) -> RoomEcho | None:
    """The canceller when there is a reference; otherwise ``None``, said once (why, and that
    speech over an avatar is dropped as echo meanwhile)."""
    found = find_reference(settings)
    if isinstance(found, str):
        log.info("no echo reference (%s): speech while an avatar speaks is %s as echo",
                 found, "dropped" if settings.echo_mode == "drop" else "tagged")
        return None
    echo = RoomEcho(found, settings, clock, on_error)
    log.info("%s", echo.describe())
    return echo
