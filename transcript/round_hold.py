"""Complete utterances held until the first round state is known.

A restarted worker gets its queued finals before the retained round state: they wait for it
(in the order spoken) rather than being judged against no round; each waits no longer than its
TTL, and at most :data:`MAX_HELD_FOR_ROUND` wait at once."""

from __future__ import annotations

from transcript.merging import Utterance

MAX_HELD_FOR_ROUND = 100
"""Utterances held while no round state is known yet (beyond it the oldest goes on without
one, to be recorded as undelivered); each is held no longer than its TTL."""


class RoundHold:
    """The utterances waiting for a round state, oldest first."""

    def __init__(self, ttl_s: float, max_held: int = MAX_HELD_FOR_ROUND) -> None:
        self._ttl_s = ttl_s
        self._max_held = max_held
        self._held: list[Utterance] = []

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, utterance: Utterance) -> Utterance | None:
        """Hold ``utterance``; the oldest one when too many wait (it goes on unheld)."""
        self._held.append(utterance)
        return self._held.pop(0) if len(self._held) > self._max_held else None

    def release(self, now_s: float, everything: bool) -> list[Utterance]:
        """The utterances to go on now: all of them with ``everything`` (a round state is known,
        or the worker stops), else those whose TTL ran out at ``now_s`` on the worker's clock."""
        released: list[Utterance] = []
        kept: list[Utterance] = []
        for utterance in self._held:
            (released if everything or now_s >= utterance.arrived_mono + self._ttl_s else kept).append(utterance)
        self._held = kept
        return released
