"""Recorded media started together: one clock, held until the workers reading them are ready.

Loading MediaPipe or a speech model takes seconds, and more on a loaded machine. A recorded
audio file and a recorded video file each take their origin from the clock when their worker
starts reading them; on a clock already running meanwhile each would be anchored wherever it
happened to be when its worker got ready, and audio and video would then disagree by the
difference - the buyer's gaze and lips of one moment judged against words of another. In the
room the session starts once the devices are live; here it starts once both workers are.

Used by the paced replay (:mod:`sessions.replay`) and by a recording whose media are
recorded files (:mod:`sessions.record`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Protocol

from hardware.clock import VirtualClock

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 120.0
"""How long the clock waits for the workers to load their models."""
READY_GRACE_S = 0.05
"""...and then this long, for the audio source to take its origin from the held clock."""
READY_POLL_S = 0.02


class HeldClock:
    """A clock held at ``start_ms`` until :meth:`release`, then a :class:`VirtualClock` running
    ``speed`` times real time from there (see the module docstring)."""

    def __init__(self, start_ms: int, speed: float) -> None:
        self.start_ms = start_ms
        self.speed = speed
        self._released = threading.Event()
        self._clock: VirtualClock | None = None

    def release(self) -> None:
        if not self._released.is_set():
            self._clock = VirtualClock(self.start_ms, self.speed)
            self._released.set()

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def now_ms(self) -> int:
        return self._clock.now_ms() if self._clock is not None else self.start_ms

    def sleep_until(self, t_ms: int, stop: threading.Event | None = None) -> bool:
        if stop is not None and stop.is_set():
            return False
        if t_ms <= self.now_ms():
            return True
        while not self._released.wait(0.05):
            if stop is not None and stop.is_set():
                return False
        assert self._clock is not None
        return self._clock.sleep_until(t_ms, stop)


class Perceiving(Protocol):
    """A worker reading a medium (the camera and microphone workers)."""

    @property
    def media_open(self) -> bool:
        """Its model is loaded and its source open: what it reads from now on is perceived."""
        ...


def start_together(clock: HeldClock, workers: Sequence[tuple[Perceiving, threading.Thread]],
                   stop: threading.Event | None = None, timeout_s: float = READY_TIMEOUT_S) -> bool:
    """Release ``clock`` once every worker has its medium open (or has ended); False when
    ``stop`` came first (the clock stays held: nothing was perceived)."""
    waiting = stop if stop is not None else threading.Event()
    deadline = time.monotonic() + timeout_s
    while not all(worker.media_open or not thread.is_alive() for worker, thread in workers):
        if time.monotonic() >= deadline:
            log.warning("workers not ready after %.0f s; starting the media clock anyway", timeout_s)
            break
        if waiting.wait(READY_POLL_S):
            return False
    if waiting.wait(READY_GRACE_S):
        return False
    clock.release()
    return True
