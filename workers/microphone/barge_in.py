"""Barge-in: the buyer starts talking while an avatar speaks, and the avatar should yield.

While an avatar speaks the microphone hears it (echo), so voice activity alone cannot tell the
buyer from the avatar. The detector learns how loud the echo is during this very stretch of
avatar speech (a high percentile of the block levels, so the avatar's loudest syllables count)
and fires when the microphone is louder than that by ``margin_db`` for most of ``min_ms``: a
person near the microphone talking over a loudspeaker across the room. The speaking events give
the spans; the level margin keeps the avatar's own voice from triggering it (measured on the
avatar's WAVs played into the microphone path, ``bench/barge_in.py``).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from hardware.audio import level_dbfs

REFERENCE_PERCENTILE = 90.0
"""The echo reference: this percentile of the block levels heard while the avatar speaks."""
HOLD_SHARE = 0.6
"""Share of the blocks in the last ``min_ms`` that must be over the threshold."""


@dataclass
class BargeInDetector:
    """Per block: is the buyer talking over the avatar? Fires once per stretch of avatar speech."""

    margin_db: float = 6.0
    min_ms: int = 300
    reference_ms: int = 400
    """Avatar speech heard before the detector may fire: the echo reference needs it."""
    window_ms: int = 3000
    """How much recent echo the reference is taken from."""
    _levels: collections.deque[float] = field(default_factory=collections.deque, init=False)
    _recent: collections.deque[bool] = field(default_factory=collections.deque, init=False)
    _fired: bool = field(default=False, init=False)
    last_reference_db: float | None = field(default=None, init=False)

    def reset(self) -> None:
        """The avatar stopped: the next stretch of its speech is judged afresh."""
        self._levels.clear()
        self._recent.clear()
        self._fired = False
        self.last_reference_db = None

    def relearn(self) -> None:
        """The echo changed under the detector (the canceller moved its alignment, and re-adapts
        meanwhile): what it learnt of the echo no longer holds, so it learns again for
        ``reference_ms`` before it may fire. A barge-in already fired in this stretch stands."""
        self._levels.clear()
        self._recent.clear()
        self.last_reference_db = None

    def process(
        self, samples: NDArray[np.int16], block_ms: int, avatar_speaking: bool, can_fire: Callable[[], bool] = lambda: True
    ) -> float | None:
        """The block's level (dBFS) when this block completes a barge-in, else ``None``.
        ``can_fire`` is asked only when the levels say barge-in; False (no utterance open yet,
        the canceller not trusted now): keep learning, decide again at the next block."""
        if not avatar_speaking:
            if self._levels or self._fired:
                self.reset()
            return None
        level = level_dbfs(samples)
        window = max(1, self.window_ms // block_ms)
        if len(self._levels) < max(1, self.reference_ms // block_ms):
            self._levels.append(level)
            return None
        reference = float(np.percentile(np.fromiter(self._levels, float), REFERENCE_PERCENTILE))
        self.last_reference_db = reference
        over = level > reference + self.margin_db
        self._recent.append(over)
        span = max(1, self.min_ms // block_ms)
        while len(self._recent) > span:
            self._recent.popleft()
        if not over:
            self._levels.append(level)
            while len(self._levels) > window:
                self._levels.popleft()
        if self._fired or len(self._recent) < span or sum(self._recent) < HOLD_SHARE * span or not over:
            return None
        if not can_fire():
            return None
        self._fired = True
        return level
