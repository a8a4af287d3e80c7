"""The buyer's lips as the microphone's cue: still over a span the camera saw is a bystander,
moving is the buyer, too little seen says nothing (the utterance is kept, as without a camera).

The transcriber dropping a bystander's final and barge-in is in tests/integration/avatar/test_barge_in.py (real
voices); the camera measuring the lips on rendered faces in tests/integration/sessions/test_sessions_render.py; the
whole loop on a generated session with a bystander in tests/integration/sessions/test_sessions_replay.py."""

from __future__ import annotations

import math

import pytest

from workers.microphone.lips import HISTORY_MS, MIN_MOTION, LipWatch
from workers.runtime.messages import HeadPose

FRAME_MS = 66


def pose(t_ms: int, mouth: float | None) -> HeadPose:
    return HeadPose(source="camera", yaw=0.0, pitch=0.0, roll=0.0, confidence=0.9, frame_ts=t_ms, mouth_open=mouth)


def feed(watch: LipWatch, start: int, end: int, opening: object) -> None:
    for t in range(start, end, FRAME_MS):
        watch.on_headpose(pose(t, opening(t) if callable(opening) else opening))  # type: ignore[arg-type]


def talking(t: int) -> float:
    """A jaw opening and closing four times a second over a mouth that rests slightly open."""
    return 0.12 + 0.08 * abs(math.sin(2 * math.pi * 2.0 * t / 1000))


def still(t: int) -> float:
    return 0.12 + 0.004 * ((t // FRAME_MS) % 3 - 1)  # landmark jitter


def test_moving_lips_are_the_buyer_and_still_ones_a_bystander() -> None:
    watch = LipWatch()
    feed(watch, 0, 3000, still)
    feed(watch, 3000, 6000, talking)
    assert watch.moved(500, 2500) is False and watch.still(500, 2500)
    assert watch.moved(3200, 5800) is True and not watch.still(3200, 5800)
    # a bystander's words that run into the buyer's: the lips moved over the span
    assert watch.moved(2000, 4000) is True


@pytest.mark.parametrize("frames", ["none", "no mouth", "too few", "half the span"])
def test_what_the_camera_did_not_see_says_nothing(frames: str) -> None:
    watch = LipWatch()
    if frames == "no mouth":
        feed(watch, 0, 3000, None)
    elif frames == "too few":
        feed(watch, 0, 3 * FRAME_MS, still)
    elif frames == "half the span":
        feed(watch, 0, 1000, still)  # the face was lost after 1 s of a 3 s utterance
    assert watch.moved(0, 3000) is None and not watch.still(0, 3000)


def test_frames_out_of_order_and_history_bounded() -> None:
    watch = LipWatch()
    times = list(range(0, 3000, FRAME_MS))
    for t in reversed(times):  # QoS 0 messages may arrive out of order
        watch.on_headpose(pose(t, talking(t)))
    assert watch.moved(0, 3000) is True
    feed(watch, HISTORY_MS + 10_000, HISTORY_MS + 13_000, still)
    assert watch.moved(0, 3000) is None  # forgotten
    assert watch.still(HISTORY_MS + 10_500, HISTORY_MS + 12_500)


def test_the_threshold_is_configurable() -> None:
    watch = LipWatch(min_motion=0.2)
    feed(watch, 0, 3000, talking)
    assert watch.moved(0, 3000) is False
    assert LipWatch().min_motion == MIN_MOTION
