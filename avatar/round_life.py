"""The round's life as the room follows it: the EO's round events into the ledger
(:class:`~avatar.round_state.RoundEvents`), then the retained round state, the display's timer
and every view of the round's books brought up to date."""

from __future__ import annotations

import logging

from avatar.competition.store import HUMAN_SERVICES_FACT
from avatar.page_events import RoundEvent, UtilityEvent
from avatar.room import Room
from avatar.round_state import state_of
from humaine_platform.endpoints import HUMAN_SERVICE_NAMES
from humaine_platform.models import EndRound, RoundMetadata, RoundTotals, SetUtility, StartRound
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import RoundState, now_ms

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

ROUND_VIEW = {"round_id", "phase", "durations", "phase_started", "phase_deadline"}
"""The round state's fields the display shows."""

class RoundLife:
    """Each round event of the EO written down, then shown everywhere it is seen."""

    def __init__(self, avatars: list[str], room: Room) -> None:
        self._avatars = list(avatars)
        self._room = room
        self._cut_prompts = 0

    @property
    def cut_prompts(self) -> int:
        """How many confirmations :meth:`take_up` found cut by the previous run."""
        return self._cut_prompts

    def take_up(self) -> None:
        """A restart: the round goes on from the ledger. Confirmations the previous run left
        unanswered were cut with its connections (the platform EO exits on that): said here, and
        the round's books are then checked against the EO's (:mod:`avatar.reconcile`)."""
        cut = self._room.ledger.cut_waiting_prompts()
        self._cut_prompts = len(cut)
        current = self._room.ledger.current()
        if cut and current is not None:
            text = (f"the Avatar Controller stopped while {len(cut)} confirmation(s) of round {current.round_id} waited: the EO "
                    f"got no answer to them (the platform's EO exits then; the stand-in does not book them)")
            log.error("%s", text)
            self._room.ledger.note(current.key, text)
        if current is not None and current.open:
            log.info("continuing round %s (phase %s) from the room's ledger", current.round_id, current.phase)
        self._room.books.changed()

    def state(self) -> RoundState:
        """The round as the ledger has it, as the retained round state."""
        return state_of(self._room.ledger.current(), self._room.source)

    def refresh(self) -> None:
        """The round as the ledger has it: the retained round state, the display's timer, and
        every view of the round's books."""
        state = self.state()
        self._room.bus.publish(self._room.bus.topics.round_state(), state)
        self._room.hub.set_round(RoundEvent(**state.model_dump(include=ROUND_VIEW), now=now_ms()))
        self._room.books.changed()

    def metadata(self, body: RoundMetadata) -> None:
        self._room.round_events.metadata(body)
        self.refresh()

    def start(self, body: StartRound) -> None:
        self._room.round_events.start(body)
        self.refresh()

    def end(self, body: EndRound) -> None:
        self._room.round_events.end(body)
        self.refresh()

    def totals(self, body: RoundTotals) -> None:
        self._room.round_events.totals(body)
        self.refresh()

    def set_utility(self, body: SetUtility) -> None:
        """The buyer's utility function: the buyer page shows what each good is worth."""
        log.info("utility for %s (round %s): %s", body.name, body.roundId, ", ".join(body.utility))
        self._room.hub.emit(UtilityEvent(name=body.name, roundId=body.roundId, goods=list(body.utility)))
        rnd = self._room.round_events.round_of(body.roundId)
        self._room.ledger.set_utility(rnd.key, body.utility)
        if body.name and body.name not in self._avatars:
            # the name the EO calls this service by (its negotiatorsInfo): ending a round on the
            # platform's EO names it again (humaine_platform.end_round)
            known = self._room.ledger.recall(HUMAN_SERVICES_FACT) or []
            if body.name not in known:
                self._room.ledger.remember(HUMAN_SERVICES_FACT, [*known, body.name][-len(HUMAN_SERVICE_NAMES):])
        self._room.books.changed()

    def name_buyer(self, label: str, running: bool) -> None:
        """The operator named the buyer: of the next rounds, and of the round running when
        ``running`` (the round's records are filed under the name)."""
        current = self._room.ledger.current()
        self._room.ledger.name_buyer(label, current.key if running and current is not None and current.open else None)
        self.refresh()

    def undelivered(self, round_id: object) -> None:
        """One of the buyer's utterances in this round never reached the EO (the day book counts them)."""
        if round_id is not None and self._room.ledger.count_undelivered(round_id):
            self._room.books.changed()

    def on_retained(self, _topic: str, message: RoundState) -> None:
        """The retained round state a previous controller published (MQTT thread)."""
        adopted = self._room.round_events.adopt(message)
        if adopted is not None:
            log.info("continuing round %s (phase %s) from the retained round state", adopted.round_id, adopted.phase)
            self.refresh()
