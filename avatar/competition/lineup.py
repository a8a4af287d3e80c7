"""Who plays the round Next round starts: its buyer and sellers (the schedule's next round, or the
configured sellers and the buyer the operator named), each participant's utility function, and
every seat's agent answering - what the EO's ``/initializeRound`` is then made of.

A round is set up here and started by :class:`~avatar.competition.control.RoundControl`; what
cannot be set up is :class:`Refused` in one line naming the cause.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from avatar.books.ledger import RoomLedger
from avatar.competition.agents import AgentPrograms, AgentStartError
from avatar.competition.schedule import SEATS
from avatar.competition.settings import RoundsSettings, TournamentSettings
from avatar.competition.store import CompetitionStore, Launch, ScheduledSlot, SeatPlan
from avatar.competition.tournament import ScheduleError, Tournament
from avatar.competition.utilities import UtilitySource
from humaine_platform import endpoints as ep
from humaine_platform.answers import PlatformCallError
from humaine_platform.models import HUMAN, Durations, InitializeRound, NegotiatorInfo, RoundId, ServiceEntry
from humaine_platform.reachable import answers_soon
from workers.runtime.messages import now_ms


class Refused(Exception):
    """Next or End round cannot be done now; the message says why, in words, in one line."""


@dataclass(frozen=True)
class RoundPlan:
    """The round Next round is about to start."""

    buyer: str
    slot: ScheduledSlot | None
    seats: tuple[tuple[str, str], ...]
    """``(avatar, agent)`` in avatar order."""
    utility_keys: dict[str, str]
    """``Human`` or an avatar -> the schedule's key of its utility (absent: drawn afresh)."""


def initialize_round(round_id: RoundId, seats: Sequence[SeatPlan], utilities: Mapping[str, dict[str, Any]],
                     durations: Mapping[str, float]) -> InitializeRound:
    """The EO's ``/initializeRound`` of a round set up: every seat where the EO reaches its agent."""
    agents = []
    for seat in seats:
        where = ServiceEntry.of_url(seat.url)
        agents.append(NegotiatorInfo(name=seat.avatar, protocol=where.protocol, host=where.host, port=where.port,
                                     utilityFunction=utilities[seat.avatar]))
    return InitializeRound(roundId=round_id, agents=agents, human={"utilityFunction": utilities[HUMAN]},
                           durations=Durations.model_validate(dict(durations)))


class RoundLineup:
    """The participants of the next round, their utilities and their agents."""

    def __init__(self, ledger: RoomLedger, store: CompetitionStore, avatars: Sequence[str], *, rounds: RoundsSettings,
                 tournament: TournamentSettings, competition: Tournament, utilities: UtilitySource,
                 agents: AgentPrograms) -> None:
        self.ledger = ledger
        self.store = store
        self.avatars = list(avatars)
        self.rounds = rounds
        self.tournament = tournament
        self.competition = competition
        self.utilities = utilities
        self.agents = agents

    def plan(self, buyer: str | None) -> RoundPlan:
        """The schedule's next round, or - without a roster - the avatars as their own sellers and
        ``buyer`` (else the one named on the console)."""
        if self.competition.roster is None:
            named = buyer if buyer is not None else self.ledger.next_buyer()
            return RoundPlan(named, None, tuple((avatar, avatar) for avatar in self.avatars), {})
        if len(self.avatars) != SEATS:
            raise Refused(f"a competition's round has {SEATS} sellers, and the room has {len(self.avatars)} avatars ([core] avatars)")
        try:
            slot = self.competition.next_slot()
        except ScheduleError as exc:
            raise Refused(str(exc)) from None
        if slot is None:
            raise Refused("the schedule has no round left")
        seats = tuple((avatar, seat.agent) for avatar, seat in zip(self.avatars, slot.slot.seats, strict=True))
        keys = {avatar: seat.utility for avatar, seat in zip(self.avatars, slot.slot.seats, strict=True)}
        keys[HUMAN] = slot.slot.buyer_utility
        return RoundPlan(slot.slot.buyer, slot, seats, keys)

    async def utilities_of(self, plan: RoundPlan) -> dict[str, dict[str, Any]]:
        """Each participant's utility function: a scheduled key's first draw (kept), else a new draw."""
        roles = {HUMAN: ep.BUYER_ROLE, **{avatar: ep.SELLER_ROLE for avatar, _agent in plan.seats}}
        found: dict[str, dict[str, Any]] = {}
        for who, role in roles.items():
            key = plan.utility_keys.get(who, "")
            kept = self.store.utility(key) if key else None
            if kept is not None:
                found[who] = kept
                continue
            try:
                drawn = await self.utilities.draw(role, key)
            except PlatformCallError as exc:
                raise Refused(f"no {role} utility: {exc}") from None
            found[who] = self.store.keep_utility(key, role, drawn, self.utilities.source, now_ms()) if key else drawn
        return found

    async def seats_of(self, launch: Launch, plan: RoundPlan) -> list[SeatPlan]:
        """Every seat's agent, answering: the ones with a ``command`` started for this round."""
        seats: list[SeatPlan] = []
        sellers = self.rounds.seller_urls(self.avatars)
        try:
            for seat, (avatar, agent) in zip(launch.seats, plan.seats, strict=True):
                entry = self.tournament.agents.get(agent) if self.competition.roster is not None else None
                if entry is not None and entry.command:
                    running = await self.agents.start(launch, agent, avatar, entry)
                    seats.append(SeatPlan(avatar, agent, running.url, seat.utility_key))
                    continue
                url = entry.url if entry is not None else sellers[avatar]
                if not await answers_soon(url):
                    key = f"[tournament] agents.{agent}.url" if entry is not None else f"[rounds] sellers.{avatar}"
                    raise Refused(f"agent {agent} ({avatar}) does not answer at {url}: start it, or fix {key}")
                seats.append(SeatPlan(avatar, agent, url.rstrip("/"), seat.utility_key))
        except AgentStartError as exc:
            raise Refused(str(exc)) from None
        return seats

    async def forget(self, launch: Launch) -> None:
        """A start that never reached the EO: the programs it started stopped (off the event loop,
        which answers the EO meanwhile), its id free again."""
        await asyncio.to_thread(self.agents.stop_round, launch.id, "its round did not start")
        self.store.forget_launch(launch.id)
