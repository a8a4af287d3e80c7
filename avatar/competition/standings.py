"""The competition's standings, from the EO's round totals in the room's ledger.

The platform ranks the seller agents twice: by their mean individual utility over their rounds (a
seller's utility is its profit, as the EO's utility generator rates it) and by the mean social
welfare of their rounds (the sum of the utilities of everyone in the round: the buyer and both
sellers); a buyer's score is the total of their utilities. Everything here comes from the EO's
``roundTotals`` (``/receiveRoundTotals``), which are keyed by avatar name and ``Human`` and list
only those who dealt (a participant missing from them dealt nothing: utility 0); the room maps
avatars to agents with its record of the round's start. A round without totals (lost, or ended
without them reaching the room), or whose totals lack a utility (the EO's utility generator did
not answer), counts in no standing and is listed as unscored, with why.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from avatar.books.records import TOTALS_GRACE_MS, LedgerRound, participant_totals, utility_of
from avatar.competition.store import Launch
from humaine_platform.models import HUMAN
from workers.runtime.messages import now_ms

CENTS: Final = 2
"""How long after they are due the totals of a round ended early are still waited for."""
UNNAMED_BUYER: Final = "(unnamed)"
CSV_COLUMNS: Final = ("kind", "name", "rounds", "utility_mean", "welfare_mean", "utility_total", "note")


@dataclass(frozen=True)
class RoundScore:
    """One scored round: each participant's utility and the round's social welfare."""

    round_id: int | str
    buyer: str
    buyer_utility: float
    agents: dict[str, float]
    """Agent (as the room's roster names it) -> its utility in this round."""

    @property
    def welfare(self) -> float:
        return self.buyer_utility + sum(self.agents.values())


@dataclass(frozen=True)
class Unscored:
    round: int | str
    day: str
    buyer: str
    agents: list[str]
    reason: str


def score(rnd: LedgerRound, launch: Launch | None, avatars: Sequence[str]) -> RoundScore | Unscored | None:
    """What round ``rnd`` adds to the standings, or why it adds nothing (None: its totals are
    still to come)."""
    seats = {s.avatar: s.agent for s in launch.seats} if launch is not None else {a: a for a in avatars}
    buyer = rnd.buyer or UNNAMED_BUYER
    totals = rnd.totals
    due = launch.ends_ms if launch is not None else None
    if totals is None and rnd.phase != "lost" and due is not None and now_ms() < due + TOTALS_GRACE_MS:
        return None  # ended by the operator on the platform's EO: its totals come at the round's own end
    if rnd.phase == "lost" or not isinstance(totals, Mapping):
        reason = rnd.note or ("lost" if rnd.phase == "lost" else "the EO's totals never reached the room")
        return Unscored(rnd.round_id, rnd.day, buyer, list(seats.values()), reason)
    utilities: dict[str, float] = {}
    for name in (HUMAN, *seats):
        value = utility_of(participant_totals(totals, name)) if name in totals else 0.0
        if value is None:
            return Unscored(rnd.round_id, rnd.day, buyer, list(seats.values()),
                            f"the EO's totals give no utility for {name} (its utility generator did not answer)")
        utilities[name] = value
    return RoundScore(rnd.round_id, buyer, utilities[HUMAN], {agent: utilities[avatar] for avatar, agent in seats.items()})


@dataclass(frozen=True)
class AgentStanding:
    name: str
    rounds: int
    utility_mean: float
    welfare_mean: float


@dataclass(frozen=True)
class BuyerStanding:
    name: str
    rounds: int
    utility_total: float


@dataclass(frozen=True)
class Standings:
    agents: list[AgentStanding] = field(default_factory=list)
    """By mean individual utility, best first (the other ranking: :attr:`by_welfare`)."""
    buyers: list[BuyerStanding] = field(default_factory=list)
    unscored: list[Unscored] = field(default_factory=list)

    @property
    def by_welfare(self) -> list[AgentStanding]:
        return sorted(self.agents, key=lambda a: (-a.welfare_mean, a.name))

    def winners(self) -> dict[str, str | None]:
        """The two categories' leaders, of the agents that played (an agent of the roster with no
        round yet leads nothing)."""
        played = [a for a in self.agents if a.rounds > 0]
        by_welfare = [a for a in self.by_welfare if a.rounds > 0]
        return {"best_utility": played[0].name if played else None, "best_welfare": by_welfare[0].name if by_welfare else None}

    def body(self) -> dict[str, Any]:
        """``GET /operator/standings.json``."""
        return {"agents": [asdict(a) for a in self.agents], "buyers": [asdict(b) for b in self.buyers],
                "unscored": [asdict(u) for u in self.unscored], **self.winners()}

    def csv_text(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for a in self.agents:
            writer.writerow(("agent", a.name, a.rounds, f"{a.utility_mean:.2f}", f"{a.welfare_mean:.2f}", "", ""))
        for b in self.buyers:
            writer.writerow(("buyer", b.name, b.rounds, "", "", f"{b.utility_total:.2f}", ""))
        for u in self.unscored:
            writer.writerow(("unscored", u.round, "", "", "", "", u.reason))  # the round, and why it is not scored
        return out.getvalue()


def standings(rounds: Iterable[tuple[LedgerRound, Launch | None]], avatars: Sequence[str],
              roster: Sequence[str] = (), buyers: Sequence[str] = ()) -> Standings:
    """The standings of these finished rounds; every agent and buyer of the roster is listed, with
    0 rounds until they have played one."""
    per_agent: dict[str, list[tuple[float, float]]] = {name: [] for name in roster}
    per_buyer: dict[str, list[float]] = {name: [] for name in buyers}
    unscored: list[Unscored] = []
    for rnd, launch in rounds:
        found = score(rnd, launch, avatars)
        if found is None:
            continue
        if isinstance(found, Unscored):
            unscored.append(found)
            continue
        for agent, utility in found.agents.items():
            per_agent.setdefault(agent, []).append((utility, found.welfare))
        per_buyer.setdefault(found.buyer, []).append(found.buyer_utility)
    agents = [AgentStanding(name, len(scores), _mean([u for u, _ in scores]), _mean([w for _, w in scores]))
              for name, scores in per_agent.items()]
    agents.sort(key=lambda a: (-a.utility_mean, a.name))
    buyer_rows = [BuyerStanding(name, len(values), round(sum(values), CENTS)) for name, values in per_buyer.items()]
    buyer_rows.sort(key=lambda b: (-b.utility_total, b.name))
    return Standings(agents, buyer_rows, unscored)


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), CENTS) if values else 0.0
