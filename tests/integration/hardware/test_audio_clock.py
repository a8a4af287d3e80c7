"""The shared clock: virtual time runs faster than real time and never goes backwards."""

from __future__ import annotations

import threading
import time

from hardware.clock import Clock, RealClock, VirtualClock


def test_real_clock_tracks_wall_time() -> None:
    clock = RealClock()
    assert isinstance(clock, Clock)
    before = time.time_ns() // 1_000_000
    assert abs(clock.now_ms() - before) < 1000
    target = clock.now_ms() + 30
    assert clock.sleep_until(target)
    assert clock.now_ms() >= target


def test_virtual_clock_as_fast_as_possible_jumps() -> None:
    clock = VirtualClock(start_ms=1_000_000, speed=None)
    assert clock.now_ms() == 1_000_000
    started = time.monotonic()
    assert clock.sleep_until(1_000_000 + 3_600_000)
    assert time.monotonic() - started < 1.0
    assert clock.now_ms() == 1_000_000 + 3_600_000
    clock.sleep_until(5)  # the past: no effect, never backwards
    assert clock.now_ms() == 1_000_000 + 3_600_000


def test_virtual_clock_speed_scales_waiting() -> None:
    clock = VirtualClock(start_ms=0, speed=20.0)
    started = time.monotonic()
    assert clock.sleep_until(1000)  # one virtual second = 50 ms at 20x
    elapsed = time.monotonic() - started
    assert clock.now_ms() >= 1000
    assert elapsed < 0.9


def test_virtual_clock_sleep_is_interruptible() -> None:
    clock = VirtualClock(start_ms=0, speed=1.0)
    stop = threading.Event()
    threading.Timer(0.05, stop.set).start()
    assert clock.sleep_until(60_000, stop) is False
