"""Paced replay (``--speed``) puts frames and audio on the session's own clock: frames carry
their recorded times from ``frames.csv`` however late the camera opened, the replay clock waits
for the workers' models, and the paced run decides what the fast run decides."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from hardware.clock import RealClock, VirtualClock
from hardware.video import open_source
from sessions.evaluate import score
from sessions.format import CameraInfo, Session, SessionInfo, SessionWriter
from sessions.generate import generate
from sessions.replay import replay
from sessions.together import HeldClock
from tests.support.helpers import PS_DOMAIN, QUICK_SESSION
from workers.runtime.config import Config

START = 1_000_000
IRREGULAR = [START + 40, START + 140, START + 230, START + 370, START + 400]
"""Capture times with jitter and a dropped frame: not ``index / fps``."""


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    info = SessionInfo("env", START, 1_000, ["Celia", "Watson"], {}, CameraInfo(32, 24, 10.0))
    with SessionWriter(tmp_path / "s", info) as writer:
        for i, t in enumerate(IRREGULAR):
            writer.add_frame(np.full((24, 32, 3), 40 * i, np.uint8), t)
    return tmp_path / "s" / "video.mp4"


def _times(spec: str, clock: object) -> list[int]:
    source = open_source(spec, 32, 24, 10.0, clock=clock)  # type: ignore[arg-type]
    try:
        return [f.t_ms for f in iter(source.read, None)]
    finally:
        source.close()


def test_replayed_frames_carry_their_recorded_times(recording: Path) -> None:
    late = VirtualClock(START, None)
    late.advance_to(START + 1_500)  # the camera opened 1.5 s into the session (model loading)
    assert _times(f"replay:{recording}", late) == IRREGULAR
    assert _times(f"video:{recording}", VirtualClock(START, None)) == IRREGULAR
    paced = VirtualClock(START, 50.0)
    assert _times(f"replay:{recording}", paced) == IRREGULAR
    assert paced.now_ms() >= IRREGULAR[-1]  # and it was paced by them


def test_an_old_recording_on_a_real_clock_starts_now(recording: Path) -> None:
    before = RealClock().now_ms()
    times = _times(f"replay:{recording}", RealClock())
    assert before <= times[0] <= RealClock().now_ms()
    assert [t - times[0] for t in times] == [t - IRREGULAR[0] for t in IRREGULAR]


def test_held_clock_waits_for_release() -> None:
    clock = HeldClock(START, 10.0)
    stop = threading.Event()
    woke: list[int] = []
    sleeper = threading.Thread(target=lambda: woke.append(int(clock.sleep_until(START + 100, stop))))
    sleeper.start()
    time.sleep(0.2)
    assert clock.now_ms() == START and not woke
    clock.release()
    sleeper.join(5)
    assert woke == [1] and clock.now_ms() >= START + 100
    stop.set()
    assert clock.sleep_until(START + 100_000, stop) is False


def test_paced_replay_decides_like_the_fast_one(mosquitto: object, make_config: Callable[..., Config]) -> None:
    session = Session(generate(QUICK_SESSION))
    config = make_config(mosquitto.url, **PS_DOMAIN)  # type: ignore[attr-defined]
    fast = replay(session, config)
    paced = replay(session, config, speed=2.0)
    assert [m["message"]["text"] for m in paced.messages] == [m["message"]["text"] for m in fast.messages]
    frames = {hp["frame_ts"] for hp in paced.of_type("headpose")}
    assert frames <= set(session.frame_times()) and len(frames) > 0.9 * len(session.frame_times())
    fast_summary, paced_summary = score(fast).summary(), score(paced).summary()
    # at the session's pace the camera keeps up with what the machine gives it: on a loaded
    # machine it skips frames (up to a tenth, above), which may move one gaze decision
    one = 1 / max(1, fast_summary["utterances"])
    assert paced_summary["addressee_accuracy"] >= fast_summary["addressee_accuracy"] - one - 1e-9, (fast_summary, paced_summary)
    assert paced_summary["latency_p95_ms"] is not None and paced_summary["latency_p95_ms"] < 5_000, paced_summary
