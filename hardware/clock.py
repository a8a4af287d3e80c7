"""Clocks shared by every device source: real time for live devices, virtual time for replay.

Replay sources (recorded audio, recorded video) pace themselves with :meth:`Clock.sleep_until`
instead of ``time.sleep`` so one recorded session can run at real speed, faster, or as fast as
the consumer allows, and stamp every block/frame with :meth:`Clock.now_ms` so downstream
timestamps stay consistent whatever the speed.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

REPLAY_KIND = "replay"
"""The spec prefix of a recorded file a clock paces, audio or video (``replay:PATH``)."""


def paced_by_clock(spec: str) -> bool:
    """Whether the source ``spec`` names is a recorded file played back on a clock."""
    return spec.partition(":")[0].strip().lower() == REPLAY_KIND


@runtime_checkable
class Clock(Protocol):
    """Milliseconds since the epoch, and a way to wait until a given instant."""

    def now_ms(self) -> int: ...

    def sleep_until(self, t_ms: int, stop: threading.Event | None = None) -> bool:
        """Block until ``now_ms() >= t_ms``; False when ``stop`` was set first."""
        ...


class RealClock:
    """Wall-clock time; waiting is real waiting (interruptible by ``stop``)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def sleep_until(self, t_ms: int, stop: threading.Event | None = None) -> bool:
        while True:
            remaining = (t_ms - self.now_ms()) / 1000.0
            if remaining <= 0:
                return True
            if stop is not None:
                if stop.wait(min(remaining, 0.25)):
                    return False
            else:
                time.sleep(min(remaining, 0.25))


class VirtualClock:
    """Time that starts at ``start_ms`` and runs ``speed`` times faster than real time.

    ``speed=None`` means "as fast as possible": :meth:`sleep_until` jumps the clock forward
    immediately, so a replay is bounded only by how fast its consumer processes it, while every
    timestamp still advances exactly as it did in the recording. The clock never goes backwards.
    """

    def __init__(self, start_ms: int | None = None, speed: float | None = None) -> None:
        if speed is not None and speed <= 0:
            raise ValueError(f"clock speed must be > 0 or None (as fast as possible), got {speed}")
        self.speed = speed
        self._lock = threading.Lock()
        self._origin_virtual = time.time_ns() // 1_000_000 if start_ms is None else int(start_ms)
        self._origin_real = time.monotonic()
        self._jumped = self._origin_virtual

    def now_ms(self) -> int:
        with self._lock:
            if self.speed is None:
                return self._jumped
            elapsed = (time.monotonic() - self._origin_real) * 1000.0 * self.speed
            return self._origin_virtual + int(elapsed)

    def advance_to(self, t_ms: int) -> None:
        """Move the clock forward to ``t_ms`` (no-op if already past it)."""
        with self._lock:
            if self.speed is None:
                self._jumped = max(self._jumped, int(t_ms))
            else:
                current = self._origin_virtual + int(
                    (time.monotonic() - self._origin_real) * 1000.0 * self.speed
                )
                if t_ms > current:
                    self._origin_virtual += int(t_ms) - current

    def sleep_until(self, t_ms: int, stop: threading.Event | None = None) -> bool:
        if stop is not None and stop.is_set():
            return False
        if self.speed is None:
            self.advance_to(t_ms)
            return True
        while True:
            remaining_virtual = t_ms - self.now_ms()
            if remaining_virtual <= 0:
                return True
            wait_s = min(remaining_virtual / 1000.0 / self.speed, 0.25)
            if stop is not None:
                if stop.wait(wait_s):
                    return False
            else:
                time.sleep(wait_s)
