"""A roster's competition in the ledger: its fair schedule, cycle after cycle, and its standings.

The schedule is planned when first needed (by the console's Next round or ``humaine-env tournament
plan``) and stored at once, so a restarted room goes on with the same order; when its rounds are
used up, the next cycle is planned - a new permutation under the same rules
(:mod:`avatar.competition.schedule`). Another roster (an agent or a buyer added, renamed or
removed) is another competition: the rounds the old roster had left are dropped, its rows kept.
With ``[tournament] seed`` the plan is the same on every machine.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from typing import Any

from avatar.books.records import day_of
from avatar.competition.schedule import RosterError, fairness_problems, plan_cycle
from avatar.competition.settings import TournamentSettings
from avatar.competition.standings import Standings, standings
from avatar.competition.store import CompetitionStore, ScheduledSlot, roster_key
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)


class ScheduleError(Exception):
    """The roster cannot be scheduled; the message names the key."""


class Tournament:
    """The competition of the configured roster (or, without one, the day's rounds)."""

    def __init__(self, store: CompetitionStore, settings: TournamentSettings, avatars: Sequence[str]) -> None:
        self.store = store
        self.settings = settings
        self.avatars = list(avatars)
        self.roster = roster_key(list(settings.agents), settings.buyers) if settings.enabled else None
        """The key of the roster's rows (None: no roster configured)."""

    def plan(self) -> list[ScheduledSlot]:
        """The roster's whole schedule, planned now when none is left to play."""
        if self.roster is None:
            return []
        dropped = self.store.drop_planned(self.roster)
        if dropped:
            log.warning("the roster changed: %d planned round(s) of the previous roster dropped", dropped)
        if not self.store.slots(self.roster, ("planned",)):
            self._plan_cycle()
        return self.store.slots(self.roster)

    def _plan_cycle(self) -> None:
        assert self.roster is not None
        cycle = self.store.last_cycle(self.roster) + 1
        seed = self.settings.seed
        rng = random.Random(f"{seed}:{cycle}") if seed is not None else random.Random()
        try:
            slots = plan_cycle(list(self.settings.agents), self.settings.buyers, rng, cycle=cycle)
        except RosterError as exc:
            raise ScheduleError(f"[tournament]: {exc}") from None
        self.store.add_cycle(self.roster, cycle, slots)
        log.info("competition: cycle %d planned, %d rounds", cycle, len(slots))

    def next_slot(self) -> ScheduledSlot | None:
        """The scheduled round Next round takes (the next cycle is planned when one is used up)."""
        if self.roster is None:
            return None
        planned = self.store.slots(self.roster, ("planned",))
        if not planned:
            self.plan()
            planned = self.store.slots(self.roster, ("planned",))
        return planned[0] if planned else None

    def upcoming(self) -> list[ScheduledSlot]:
        return self.store.slots(self.roster, ("planned",)) if self.roster is not None else []

    def fairness(self) -> dict[int, list[str]]:
        """Per planned cycle, what of the fairness rules its rounds break (empty lists: none)."""
        if self.roster is None:
            return {}
        cycles: dict[int, list[Any]] = {}
        for slot in self.store.slots(self.roster):
            if slot.put_back_from is None and slot.state != "dropped":
                cycles.setdefault(slot.cycle, []).append(slot.slot)
        return {cycle: fairness_problems(slots) for cycle, slots in cycles.items()}

    def standings(self) -> Standings:
        """The roster's standings over all its rounds (without a roster: the day's rounds, by avatar)."""
        if self.roster is not None:
            rounds = self.store.finished_rounds(roster=self.roster)
            return standings(rounds, self.avatars, list(self.settings.agents), self.settings.buyers)
        return standings(self.store.finished_rounds(day=day_of(now_ms())), self.avatars)
