"""One message on its way to the EO, and the outcomes it can end in."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from workers.runtime.messages import Stages

OutcomeName = Literal["delivered", "blocked", "maybe_delivered", "failed", "undelivered", "answered"]
"""``answered``: the buyer's spoken yes or no to a pending confirmation, given to the Avatar
Controller instead of the EO (:mod:`transcript.confirm_answer`)."""


@dataclass
class Job:
    """A built message waiting for delivery, and what happened to it so far."""

    message_id: str
    body: dict[str, Any]
    deadline: float
    """Seconds on the worker's clock (``clock.now_ms() / 1000``) after which it is no longer
    sent (the TTL); turned into a ``time.monotonic()`` deadline for the HTTP client when sent."""
    stages: Stages
    """Stage timestamps (:class:`~workers.runtime.messages.Stage`), completed as it is delivered."""
    recorded: bool = False
    """Its one outcome is recorded (never a second one)."""

    def expired(self, now_s: float) -> bool:
        """Its TTL has run out at ``now_s`` on the worker's clock."""
        return now_s >= self.deadline

    def monotonic_deadline(self, now_s: float) -> float:
        """The TTL as the HTTP client takes it: a ``time.monotonic()`` deadline for its real
        retries and timeouts, as much later as the job has left at ``now_s`` on the worker's clock."""
        return time.monotonic() + max(0.0, self.deadline - now_s)
