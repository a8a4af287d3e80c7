"""Which round human utterances belong to, and whether they may be relayed now.

The current EO exits on a ``/relayMessage`` for a round it does not know, so the worker only
relays while the Avatar Controller's retained round state says a round is in a relaying phase
(or the configuration names a round explicitly).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from workers.runtime.messages import RoundState


@dataclass(frozen=True)
class RoundCheck:
    round_id: int | str | None
    reason: str = ""
    """Why there is no relayable round (empty when there is one)."""

    @property
    def active(self) -> bool:
        return self.round_id is not None


class RoundTracker:
    def __init__(
        self, override: int | str | None, relay_phases: Sequence[str], deadline_grace_ms: float = 2000.0
    ) -> None:
        self.override = override
        self.relay_phases = tuple(relay_phases)
        self.deadline_grace_ms = deadline_grace_ms
        self._state: RoundState | None = None
        self._unreadable = ""
        self._lock = threading.Lock()

    def update(self, state: RoundState) -> None:
        with self._lock:
            self._state = state
            self._unreadable = ""

    def unreadable(self, reason: str) -> None:
        """An unreadable round state arrived (dropped by the bus). The round is unknown, as if
        none had arrived; its owner, the Avatar Controller, publishes its own over it at once."""
        with self._lock:
            self._unreadable = reason

    @property
    def known(self) -> bool:
        """True once a round state was received (or the configuration names the round)."""
        return self.override is not None or self.state is not None

    @property
    def state(self) -> RoundState | None:
        with self._lock:
            return self._state

    def check(self, now_ms: float) -> RoundCheck:
        if self.override is not None:
            return RoundCheck(self.override)
        with self._lock:
            state, unreadable = self._state, self._unreadable
        if state is None and unreadable:
            return RoundCheck(None, f"the round state on the bus is unreadable ({unreadable[:80]}); "
                                    "the Avatar Controller was not there to replace it")
        if state is None:
            return RoundCheck(None, "no round state received from the Avatar Controller")
        if state.round_id is None:
            return RoundCheck(None, f"no round (phase {state.phase})")
        if state.phase not in self.relay_phases:
            return RoundCheck(None, f"round {state.round_id} is in phase {state.phase!r}")
        if state.phase_deadline is not None and now_ms > state.phase_deadline + self.deadline_grace_ms:
            return RoundCheck(None, f"round {state.round_id} phase {state.phase!r} passed its deadline")
        return RoundCheck(state.round_id)
