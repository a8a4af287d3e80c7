"""The buyer's lips, as the camera saw them: speech heard while they were still is a bystander's.

In a hall the microphone hears more than the buyer: somebody behind them remarks on a price, a
visitor calls an avatar's name. The camera worker measures the buyer's lip gap on every frame
(:func:`workers.camera.mouth.mouth_opening`, ``HeadPose.mouth_open``); here those samples are
kept for a while, and an utterance (or a barge-in) is asked about once it has been heard:

- the lips moved over the span (the spread between the quieter and the wider openings, the
  10th and 90th percentiles, reaches ``min_motion``): the buyer talks;
- they stayed still over a span the camera covered: a bystander; the utterance is dropped and
  so is a barge-in;
- too few frames over the span (no camera, nobody in front of it, the face lost): the cue says
  nothing and the utterance is kept, as without it.
"""

from __future__ import annotations

import bisect
import threading

import numpy as np

from workers.runtime.messages import HeadPose

HISTORY_MS = 120_000
"""Samples older than this (relative to the newest) are forgotten."""
MIN_MOTION = 0.025
"""Lip-gap spread (over the outer eye-corner distance) that counts as moving, between what
``bench/lips.py`` measured on rendered faces whose jaw follows their speech: the buyer's 36
sentences spread 0.038-0.135 (p10 0.053), the lips held still under sensor noise while 18
bystanders talked 0.003-0.016."""
MIN_FRAMES = 4
"""Fewer frames than this over a span: the camera did not see enough to say."""
MIN_COVERAGE = 0.5
"""...or frames over less than this share of the span."""
EDGE_MS = 100
"""Frames this far around a span count too (the lips part just before the sound)."""


class LipWatch:
    """Feed it the camera's head poses; ask it whether the lips moved over a span of audio."""

    def __init__(self, min_motion: float = MIN_MOTION) -> None:
        self.min_motion = min_motion
        self._lock = threading.Lock()
        self._times: list[int] = []
        self._openings: list[float] = []

    def on_headpose(self, pose: HeadPose) -> None:
        if pose.mouth_open is None:
            return
        with self._lock:
            if self._times and pose.frame_ts < self._times[-1]:
                at = bisect.bisect_right(self._times, pose.frame_ts)
                self._times.insert(at, pose.frame_ts)
                self._openings.insert(at, pose.mouth_open)
            else:
                self._times.append(pose.frame_ts)
                self._openings.append(pose.mouth_open)
            horizon = self._times[-1] - HISTORY_MS
            drop = bisect.bisect_left(self._times, horizon)
            if drop:
                del self._times[:drop], self._openings[:drop]

    def moved(self, start_ms: int, end_ms: int) -> bool | None:
        """Whether the buyer's lips moved between ``start_ms`` and ``end_ms`` (capture times);
        ``None`` when the camera did not see enough of that span to say."""
        with self._lock:
            lo = bisect.bisect_left(self._times, start_ms - EDGE_MS)
            hi = bisect.bisect_right(self._times, end_ms + EDGE_MS)
            times, openings = self._times[lo:hi], self._openings[lo:hi]
        span = max(1, end_ms - start_ms)
        if len(times) < MIN_FRAMES or (min(times[-1], end_ms) - max(times[0], start_ms)) < MIN_COVERAGE * span:
            return None
        low, high = np.percentile(openings, (10, 90))
        return bool(high - low >= self.min_motion)

    def still(self, start_ms: int, end_ms: int) -> bool:
        """True only when the camera saw the span and the lips did not move over it."""
        return self.moved(start_ms, end_ms) is False
