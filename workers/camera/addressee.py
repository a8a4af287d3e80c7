"""Which avatar the buyer addresses, from the (smoothed) head pose of each frame.

Each frame is classified to the nearest target within ``tolerance_deg`` (distance in the
yaw/pitch plane), else nobody; no face is nobody. The published attention only changes after
the new candidate has held for ``min_dwell_ms`` on most frames (see :meth:`update`), and the
current target is kept out to ``tolerance + hysteresis``, so one noisy frame — a blink, a
mis-fitted mesh, a hand passing the face — never flips the addressee.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from workers.camera.settings import Target
from workers.runtime.messages import NOBODY

MIN_FRAMES = 2
"""Frames a new candidate needs besides the dwell time."""
CONFIRM_SHARE = 0.7
"""Share of the frames since a candidate appeared that must agree with it to confirm it."""
ABANDON_SHARE = 0.5
"""A pending candidate seen on less than this share of the frames since it appeared is dropped."""


@dataclass(frozen=True)
class AttentionChange:
    target: str
    previous: str
    since: int
    """Frame time (ms since the epoch) when the new target was first seen."""


def angular_distance(yaw: float, pitch: float, target: Target) -> float:
    return math.hypot(yaw - target.yaw, pitch - target.pitch)


class AddresseeClassifier:
    def __init__(
        self,
        targets: Mapping[str, Target],
        tolerance_deg: float = 15.0,
        hysteresis_deg: float = 5.0,
        min_dwell_ms: int = 300,
    ) -> None:
        self.targets = dict(targets)
        self.tolerance_deg = tolerance_deg
        self.hysteresis_deg = hysteresis_deg
        self.min_dwell_ms = min_dwell_ms
        self.current = NOBODY
        self.since: int | None = None
        self._candidate: str | None = None
        self._candidate_since = 0
        self._candidate_frames = 0
        self._pending_total = 0

    def reset(self, target: str = NOBODY) -> None:
        """Forget any pending candidate and make ``target`` current (camera lost, restart)."""
        self.current, self.since = target, None
        self._candidate, self._candidate_frames = None, 0

    def candidate(self, yaw: float | None, pitch: float | None) -> str:
        """The target this single frame points at (no dwell, with hysteresis for the current one)."""
        if yaw is None or pitch is None:
            return NOBODY
        best, best_distance = NOBODY, math.inf
        for name, target in self.targets.items():
            distance = angular_distance(yaw, pitch, target)
            limit = self.tolerance_deg + (self.hysteresis_deg if name == self.current else 0.0)
            if distance <= limit and distance < best_distance:
                best, best_distance = name, distance
        if self.current != NOBODY and best != self.current:
            # Hysteresis: the current target wins while still inside its widened tolerance.
            current = self.targets.get(self.current)
            if current and angular_distance(yaw, pitch, current) <= self.tolerance_deg + self.hysteresis_deg:
                if best == NOBODY or angular_distance(yaw, pitch, current) <= best_distance + self.hysteresis_deg:
                    return self.current
        return best

    def update(self, yaw: float | None, pitch: float | None, t_ms: int) -> AttentionChange | None:
        """Feed one frame (``None`` angles: no face); returns a change when attention moves.

        A different target first becomes *pending*. It is confirmed once it has been pending for
        ``min_dwell_ms``, on at least :data:`MIN_FRAMES` frames, on at least
        :data:`CONFIRM_SHARE` of the frames since, and on the latest frame. Stray frames while
        pending (a blink, a mis-fit) only lower its share; it is dropped when its share falls
        below :data:`ABANDON_SHARE`.
        """
        if self.since is None:
            self.since = t_ms
        seen = self.candidate(yaw, pitch)
        if self._candidate is None:
            if seen != self.current:
                self._pend(seen, t_ms)
            return None
        self._pending_total += 1
        if seen == self._candidate:
            self._candidate_frames += 1
        elif self._pending_total >= MIN_FRAMES and self._candidate_frames < ABANDON_SHARE * self._pending_total:
            self._candidate = None
            if seen != self.current:
                self._pend(seen, t_ms)
            return None
        if (
            seen == self._candidate
            and self._candidate_frames >= MIN_FRAMES
            and self._candidate_frames >= CONFIRM_SHARE * self._pending_total
            and t_ms - self._candidate_since >= self.min_dwell_ms
        ):
            change = AttentionChange(seen, self.current, self._candidate_since)
            self.current, self.since = seen, self._candidate_since
            self._candidate = None
            return change
        return None

    def _pend(self, target: str, t_ms: int) -> None:
        self._candidate, self._candidate_since = target, t_ms
        self._candidate_frames = self._pending_total = 1
