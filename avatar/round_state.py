"""The round's phase and deadlines, from the EO's round events, kept in the room's ledger.

The EO tells the human-side service about a round in this order (observed): ``/sendRoundMetadata``
(durations, before the warm-up), ``/setUtility``, ``/startRound`` (after the warm-up),
``/endRound`` (after the negotiation), ``/receiveRoundTotals`` (after the post-round phase).
Nobody else hears all of these, so the Avatar Controller writes each into the ledger and
publishes the resulting state as a retained message: the transcript worker relays human
utterances only while a round is ``round`` (the EO crashes on an unknown ``roundId``), and the
display shows the timer. A restarted controller reads the round where it was from the ledger.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import cast

from avatar.books.ledger import RoomLedger
from avatar.books.records import OPEN_PHASES, OVER_PHASES, LedgerRound
from humaine_platform.models import EndRound, RoundMetadata, RoundTotals, StartRound
from workers.runtime.messages import RoundPhase, RoundState, now_ms

log = logging.getLogger(__name__)

WARMUP_KEY = "warmUp"
ROUND_KEY = "round"
POST_KEY = "post"
DEFAULT_CURRENCY = "USD"


def state_of(rnd: LedgerRound | None, source: str) -> RoundState:
    """The retained round state of ``rnd`` (a round the EO lost, or one in a phase this version
    does not know, reads as over)."""
    if rnd is None:
        return RoundState(source=source)
    phase = cast(RoundPhase, rnd.phase) if rnd.phase in (*OPEN_PHASES, "ended") else "ended"
    return RoundState(source=source, round_id=rnd.round_id, phase=phase, durations=dict(rnd.durations),
                      phase_started=rnd.phase_started_ms, phase_deadline=rnd.phase_deadline_ms, buyer=rnd.buyer)


class RoundEvents:
    """Writes each round event of the EO into the ledger (thread-safe: the ledger is)."""

    def __init__(self, ledger: RoomLedger, clock_ms: Callable[[], int] = now_ms) -> None:
        self.ledger = ledger
        self._clock = clock_ms

    def _deadline(self, now: int, length_s: float | None) -> int | None:
        return None if length_s is None else now + round(length_s * 1000)

    def round_of(self, round_id: int | str | None) -> LedgerRound:
        """The latest round with this id; one is opened when the EO speaks of a round whose
        metadata never reached us (the controller started after it)."""
        found = self.ledger.round_for(round_id) if round_id is not None else self.ledger.current()
        if found is not None:
            return found
        now = self._clock()
        return self.ledger.begin_round(round_id if round_id is not None else "?", {}, None, DEFAULT_CURRENCY, "warmup", now, None)

    def metadata(self, body: RoundMetadata) -> LedgerRound:
        """Durations and budget are known and the warm-up starts: a new round."""
        durations = {WARMUP_KEY: float(body.durations.warmUp), ROUND_KEY: float(body.durations.round),
                     POST_KEY: float(body.durations.post)}
        now = self._clock()
        budget = body.humanBudget
        return self.ledger.begin_round(body.roundId, durations, float(budget.value), budget.currentUnit or DEFAULT_CURRENCY,
                                       "warmup", now, self._deadline(now, durations[WARMUP_KEY]))

    def start(self, body: StartRound) -> LedgerRound:
        """The negotiation starts; its length is ``roundDuration`` when the EO sends it. A round
        that is over stays over: the platform's EO goes on timing a round it was told to end
        (:mod:`humaine_platform.end_round`) and sends its late ``/startRound`` and ``/endRound``."""
        rnd = self.round_of(body.roundId)
        if rnd.phase in OVER_PHASES:
            log.info("round %s is over: the EO's late /startRound changes nothing", rnd.round_id)
            return rnd
        length = float(body.roundDuration) if body.roundDuration is not None else rnd.durations.get(ROUND_KEY)
        durations = {**rnd.durations, **({ROUND_KEY: length} if length is not None else {})}
        now = self._clock()
        self.ledger.set_phase(rnd.key, "round", now, self._deadline(now, length), durations)
        return rnd

    def end(self, body: EndRound) -> LedgerRound:
        """The negotiation is over; the post-round allocation phase starts (a round that is over stays over)."""
        rnd = self.round_of(body.roundId)
        if rnd.phase in OVER_PHASES:
            log.info("round %s is over: the EO's late /endRound changes nothing", rnd.round_id)
            return rnd
        now = self._clock()
        self.ledger.set_phase(rnd.key, "post", now, self._deadline(now, rnd.durations.get(POST_KEY)))
        return rnd

    def totals(self, body: RoundTotals) -> LedgerRound:
        """The EO has sent the totals and forgotten the round."""
        rnd = self.round_of(body.roundId)
        self.ledger.set_totals(rnd.key, {name: totals.body() for name, totals in body.roundTotals.items()}, self._clock())
        return rnd

    def adopt(self, state: RoundState) -> LedgerRound | None:
        """The retained state a previous controller published, taken up when the ledger knows
        no round at all (a new data directory): only a round still running."""
        if self.ledger.current() is not None or state.round_id is None or state.phase not in OPEN_PHASES:
            return None
        started = state.phase_started or self._clock()
        rnd = self.ledger.begin_round(state.round_id, state.durations, None, DEFAULT_CURRENCY, state.phase, started,
                                      state.phase_deadline)
        self.ledger.note(rnd.key, "taken up from the retained round state: the ledger had no record of it")
        if state.buyer:
            self.ledger.name_buyer(state.buyer, rnd.key)
        return self.ledger.round_by_key(rnd.key)
