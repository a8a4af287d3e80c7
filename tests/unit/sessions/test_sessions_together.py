"""Recorded media started together: the held clock is released once every worker reading a
medium is ready, never before, and not at all when the recording is stopped first."""

from __future__ import annotations

import logging
import threading

import pytest

from hardware.clock import paced_by_clock
from sessions.together import HeldClock, start_together

START = 1_700_000_000_000


class LoadingWorker:
    """Ready on the ``ready_at``-th look (its model loads meanwhile)."""

    def __init__(self, ready_at: int) -> None:
        self.ready_at = ready_at
        self.looks = 0

    @property
    def media_open(self) -> bool:
        self.looks += 1
        return self.looks >= self.ready_at


def finished_thread() -> threading.Thread:
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()
    return thread


def test_released_once_the_slowest_worker_is_ready() -> None:
    clock = HeldClock(START, 1.0)
    camera, mic = LoadingWorker(ready_at=5), LoadingWorker(ready_at=2)
    alive = threading.main_thread()
    assert start_together(clock, [(mic, alive), (camera, alive)])
    assert clock.released and camera.looks == 5
    assert clock.now_ms() >= START


def test_a_worker_that_ended_does_not_hold_the_others() -> None:
    clock = HeldClock(START, 1.0)
    failed = LoadingWorker(ready_at=10**9)  # no model: its thread ended without opening a medium
    assert start_together(clock, [(failed, finished_thread()), (LoadingWorker(1), threading.main_thread())])
    assert clock.released


def test_stopped_while_loading_leaves_the_clock_held() -> None:
    clock = HeldClock(START, 1.0)
    stop = threading.Event()
    stop.set()
    assert not start_together(clock, [(LoadingWorker(10**9), threading.main_thread())], stop)
    assert not clock.released and clock.now_ms() == START
    assert clock.sleep_until(START + 1, stop) is False


def test_workers_never_ready_start_the_clock_after_the_timeout(caplog: pytest.LogCaptureFixture) -> None:
    clock = HeldClock(START, 1.0)
    with caplog.at_level(logging.WARNING, logger="sessions.together"):
        assert start_together(clock, [(LoadingWorker(10**9), threading.main_thread())], timeout_s=0.0)
    assert clock.released
    assert [r.getMessage() for r in caplog.records] == ["workers not ready after 0 s; starting the media clock anyway"]


@pytest.mark.parametrize(("spec", "paced"), [("replay:/a/audio.wav", True), ("REPLAY:/a/video.mp4", True),
                                             ("wav:/a/audio.wav", False), ("mic", False), ("webcam:0", False),
                                             ("video:/a/video.mp4", False)])
def test_only_replayed_files_are_paced_by_a_clock(spec: str, paced: bool) -> None:
    assert paced_by_clock(spec) is paced
