"""The round's phase and deadlines, from the EO's round events.

The EO tells the human-side service about a round in this order (observed): ``/sendRoundMetadata``
(durations, before the warm-up), ``/setUtility``, ``/startRound`` (after the warm-up),
``/endRound`` (after the negotiation), ``/receiveRoundTotals`` (after the post-round phase).
Nobody else hears all of these, so the Avatar Controller publishes the resulting state as a
retained message: the transcript worker relays human utterances only while a round is
``round`` (the EO crashes on an unknown ``roundId``), and the display shows the timer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from orchestrator_client.models import EndRound, RoundId, RoundMetadata, RoundTotals, StartRound
from workers.runtime.messages import RoundPhase, RoundState, new_id, now_ms

WARMUP_KEY = "warmUp"
ROUND_KEY = "round"
POST_KEY = "post"


class RoundTracker:
    """Turns round events into :class:`RoundState` messages (thread-safe)."""

    def __init__(self, source: str, clock_ms: Callable[[], int] = now_ms) -> None:
        self.source = source
        self._clock = clock_ms
        self._lock = threading.Lock()
        self._state = RoundState(source=source)
        self._next_buyer = ""
        """The buyer the operator named for the next round (kept for the rounds after it too,
        as the day book does, until another is named)."""

    @property
    def state(self) -> RoundState:
        with self._lock:
            return self._state

    def _move(
        self,
        round_id: RoundId,
        phase: RoundPhase,
        length_s: float | None,
        durations: dict[str, float] | None = None,
    ) -> RoundState:
        now = self._clock()
        with self._lock:
            same_round = self._state.round_id == round_id
            kept = dict(self._state.durations) if same_round else {}
            buyer = self._state.buyer if same_round else self._next_buyer
            if durations:
                kept.update(durations)
            self._state = RoundState(
                source=self.source,
                round_id=round_id,
                phase=phase,
                durations=kept,
                phase_started=now,
                phase_deadline=None if length_s is None else now + round(length_s * 1000),
                buyer=buyer,
            )
            return self._state

    def name_buyer(self, label: str, round_id: RoundId | None = None) -> RoundState | None:
        """The buyer of the next round, and of ``round_id`` when it is the current round (with the
        platform's EO, whose rounds start there, the operator names the buyer of the round in
        progress); returns the current round's new state to publish, None when it is unchanged."""
        with self._lock:
            self._next_buyer = label
            if round_id is None or self._state.round_id != round_id or self._state.buyer == label:
                return None
            self._state = self._state.model_copy(update={"buyer": label, "ts": self._clock(), "id": new_id()})
            return self._state

    def adopt(self, state: RoundState) -> bool:
        """Take over the retained state a previous run of the controller published, so a
        restart mid-round keeps the round's id and durations. Only while nothing newer is
        known; returns whether it was taken."""
        with self._lock:
            if self._state.round_id is not None or state.round_id is None:
                return False
            self._state = state.model_copy(update={"source": self.source})
            self._next_buyer = self._next_buyer or state.buyer
            return True

    def metadata(self, body: RoundMetadata) -> RoundState:
        """Durations are known and the warm-up starts."""
        durations = {
            WARMUP_KEY: float(body.durations.warmUp),
            ROUND_KEY: float(body.durations.round),
            POST_KEY: float(body.durations.post),
        }
        return self._move(body.roundId, "warmup", durations[WARMUP_KEY], durations)

    def start(self, body: StartRound) -> RoundState:
        """The negotiation starts; its length is ``roundDuration`` when the EO sends it."""
        length = float(body.roundDuration) if body.roundDuration is not None else None
        with self._lock:
            known = self._state.durations if self._state.round_id == body.roundId else {}
            if length is None:
                length = known.get(ROUND_KEY)
        extra = {ROUND_KEY: length} if length is not None else None
        return self._move(body.roundId, "round", length, extra)

    def end(self, body: EndRound) -> RoundState:
        """The negotiation is over; the post-round allocation phase starts."""
        with self._lock:
            known = self._state.durations if self._state.round_id == body.roundId else {}
        return self._move(body.roundId, "post", known.get(POST_KEY))

    def totals(self, body: RoundTotals) -> RoundState:
        """The EO has sent the totals and forgotten the round."""
        return self._move(body.roundId, "ended", None)
