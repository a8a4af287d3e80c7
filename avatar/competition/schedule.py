"""The competition's fair schedule: which buyer and which two seller agents play each round of a cycle.

The platform assigns utility functions "generated once, by permutation" so that rounds compare the
agents on equal terms. A cycle keeps that promise on its own, so any whole number of cycles is fair:

1. Meetings come in twins. Twin set ``k`` has two seller utilities, ``u1`` (always seat 0's) and
   ``u2`` (seat 1's). When agent X plays ``u1`` against Y on ``u2``, the twin has Y on ``u1`` and X
   on ``u2``, so each pair of agents meets an even number of times, and every pair equally often.
2. As seat 0 always carries ``u1``, the twin also swaps the avatars the two play: over a cycle every
   agent sits in each seat equally often.
3. Every buyer plays the same buyer utilities, each once per cycle, in an order of their own.
4. Buyers take turns in roster order: round ``t`` (counted from 0) is buyer ``t mod B``'s.

A cycle is the shortest schedule that can keep all four: ``lcm(2M, B)`` rounds for ``M`` pairs of
agents and ``B`` buyers. Utilities appear only as keys (:func:`seller_key`, :func:`buyer_key`,
numbered from 1 like the cycles); the caller draws each when its round starts. Pure logic: the
order comes from the ``random.Random`` passed in, so a seed replays a day's schedule, and
:func:`fairness_problems` checks any stored schedule from its slots alone.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SEATS = 2
"""Seller agents in a round: the room's two avatars, in order."""
TWINS = SEATS
"""Meetings per twin set: each agent of the pair takes each seat (and so each utility) once."""
_SEAT_SUFFIXES = ("a", "b")
"""The last letter of a seller utility key, by seat: ``a`` is a set's ``u1``, ``b`` its ``u2``."""
_SHOWN = 3
"""Examples a problem line names before it only counts the rest, so a badly broken schedule still
prints one readable line per rule."""

SHAPE = "shape"
"""Label of the problems that make the slots no cycle at all (seats, length)."""
RULE_TWINS = "rule 1 (twin meetings)"
RULE_SEATS = "rule 2 (seats)"
RULE_BUYER_UTILITIES = "rule 3 (buyer utilities)"
RULE_TURNS = "rule 4 (buyer turns)"

Meeting = tuple[str, str]
"""Two agents in seat order."""


class RosterError(ValueError):
    """The roster cannot make a fair cycle: too few agents, no buyer, or a name given twice."""


@dataclass(frozen=True)
class Seat:
    """One avatar of a round: the seller agent that plays it and the seller utility it gets."""

    agent: str
    utility: str
    """A seller utility key (:func:`seller_key`)."""


@dataclass(frozen=True)
class Slot:
    """One round of a cycle: a buyer facing two seller agents."""

    buyer: str
    seats: tuple[Seat, ...]
    """In avatar order (seat 0 is the room's first avatar); :data:`SEATS` long."""
    buyer_utility: str
    """A buyer utility key (:func:`buyer_key`)."""
    twin_set: int
    """``k`` of the seller utility set this meeting and its twin use."""


def seller_key(cycle: int, twin_set: int, seat: int) -> str:
    """The key of the seller utility ``seat`` gets in twin set ``twin_set`` of ``cycle``; the one spelling of it."""
    return f"c{cycle}s{twin_set}{_SEAT_SUFFIXES[seat]}"


def buyer_key(cycle: int, k: int) -> str:
    """The key of buyer utility ``k`` of ``cycle``; the one spelling of it."""
    return f"c{cycle}b{k}"


def cycle_length(agents: int, buyers: int) -> int:
    """Rounds in one cycle: the fewest in which every pair of agents meets in whole twins, equally
    often, and every buyer has as many turns."""
    if agents < SEATS:
        raise RosterError(f"a competition needs at least {SEATS} seller agents; the roster has {agents}")
    if buyers < 1:
        raise RosterError("a competition needs at least one buyer; the roster has none")
    return math.lcm(TWINS * math.comb(agents, SEATS), buyers)


def plan_cycle(agents: Sequence[str], buyers: Sequence[str], rng: random.Random, cycle: int = 1) -> list[Slot]:
    """Cycle ``cycle`` of the competition: :func:`cycle_length` slots that keep the four rules.

    The meetings are ordered by :func:`_order_meetings` (no agent in two rounds in a row while the
    meetings left allow it); twin sets are numbered in order of first use; each buyer gets the
    cycle's buyer utilities in a shuffled order of their own. Everything random comes from ``rng``.
    """
    _check_names("agent", agents)
    _check_names("buyer", buyers)
    rounds = cycle_length(len(agents), len(buyers))
    meetings = _order_meetings(agents, rounds // (TWINS * math.comb(len(agents), SEATS)), rng)
    turns = rounds // len(buyers)
    plays = {buyer: rng.sample(range(1, turns + 1), turns) for buyer in buyers}
    slots = []
    for t, (meeting, twin_set) in enumerate(zip(meetings, _number_twin_sets(meetings), strict=True)):
        buyer = buyers[t % len(buyers)]
        seats = tuple(Seat(agent, seller_key(cycle, twin_set, seat)) for seat, agent in enumerate(meeting))
        slots.append(Slot(buyer, seats, buyer_key(cycle, plays[buyer][t // len(buyers)]), twin_set))
    return slots


def _check_names(role: str, names: Sequence[str]) -> None:
    """Refuse a blank name or one given twice: "Ada" and " ada" would be one person at the venue."""
    seen: dict[str, str] = {}
    for name in names:
        folded = name.strip().casefold()
        if not folded:
            raise RosterError(f"a blank {role} name in the roster")
        if folded in seen:
            raise RosterError(f"the {role} {name.strip()!r} is in the roster twice ({seen[folded]!r} and {name!r})")
        seen[folded] = name


def _order_meetings(agents: Sequence[str], passes: int, rng: random.Random) -> list[Meeting]:
    """Every ordered pair of agents ``passes`` times (the twins of a set are one pair in both seat
    orders), in a greedy random order.

    Each step considers the meetings left that share the fewest agents with the round before (none,
    whenever one is left that allows it: so no agent plays two rounds in a row unless every meeting
    left forces it), prefers among them those whose agents have the most rounds left (which keeps
    the last rounds from piling onto a few agents), and draws one of these with ``rng``.
    """
    left = {(first, second): passes for first in agents for second in agents if first != second}
    rounds_left = dict.fromkeys(agents, TWINS * (len(agents) - 1) * passes)
    order: list[Meeting] = []
    previous: Meeting = ("", "")  # no agent: blank names are refused
    while left:
        best: list[Meeting] = []
        best_score = (SEATS + 1, 0)  # worse than any meeting: it cannot share more than its seats
        for meeting in left:
            first, second = meeting
            score = ((first in previous) + (second in previous), -rounds_left[first] - rounds_left[second])
            if score < best_score:
                best_score, best = score, [meeting]
            elif score == best_score:
                best.append(meeting)
        previous = rng.choice(best)
        order.append(previous)
        left[previous] -= 1
        if not left[previous]:
            del left[previous]
        for agent in previous:
            rounds_left[agent] -= 1
    return order


def _number_twin_sets(meetings: Sequence[Meeting]) -> list[int]:
    """The twin set of each meeting, numbered from 1 in order of first use: the i-th meeting of X
    (seat 0) with Y shares a set with the i-th of Y (seat 0) with X, so twins stay as close as the
    order lets them."""
    times: Counter[Meeting] = Counter()
    numbers: dict[tuple[str, str, int], int] = {}
    sets = []
    for meeting in meetings:
        low, high = sorted(meeting)
        twin = (low, high, times[meeting])
        times[meeting] += 1
        sets.append(numbers.setdefault(twin, len(numbers) + 1))
    return sets


def fairness_problems(slots: Sequence[Slot]) -> list[str]:
    """What breaks the four rules: one readable line per broken rule (plus one when the slots are no
    cycle at all), empty when ``slots`` is a fair cycle.

    Everything is re-derived from the slots, never taken from how they were planned: the agents and
    buyers are those that play (buyers in order of their first turn), and a twin set is the pair of
    utility keys in its two seats, whatever ``twin_set`` says (that label is checked against it). A
    roster member who plays in no slot cannot be seen here.
    """
    if not slots:
        return [f"{SHAPE}: the schedule has no rounds"]
    meetings = [slot for slot in slots if _two_agents(slot)]
    twins = _twin_groups(meetings)
    problems = {
        SHAPE: _shape_problems(slots, meetings),
        RULE_TWINS: _twin_problems(meetings, twins),
        RULE_SEATS: _seat_problems(meetings, twins),
        RULE_BUYER_UTILITIES: _buyer_utility_problems(slots),
        RULE_TURNS: _turn_problems(slots),
    }
    return [_line(label, found) for label, found in problems.items() if found]


def _two_agents(slot: Slot) -> bool:
    return len(slot.seats) == SEATS and len({seat.agent for seat in slot.seats}) == SEATS


def _agents(slot: Slot) -> Meeting:
    first, second = (seat.agent for seat in slot.seats)
    return first, second


def _utilities(slot: Slot) -> tuple[str, str]:
    first, second = (seat.utility for seat in slot.seats)
    return first, second


def _pair(first: str, second: str) -> str:
    return f"{first} and {second}"


def _twin_groups(meetings: Iterable[Slot]) -> dict[tuple[str, str], list[Slot]]:
    """The meetings by the utility keys in their seats: a twin set is one such group of two."""
    groups: dict[tuple[str, str], list[Slot]] = defaultdict(list)
    for slot in meetings:
        groups[_utilities(slot)].append(slot)
    return groups


def _shape_problems(slots: Sequence[Slot], meetings: Sequence[Slot]) -> list[str]:
    problems = [f"round {t + 1} has {len(slot.seats)} seats, not {SEATS}" for t, slot in enumerate(slots) if len(slot.seats) != SEATS]
    problems += [f"round {t + 1} seats {slot.seats[0].agent} twice" for t, slot in enumerate(slots)
                 if len(slot.seats) == SEATS and not _two_agents(slot)]
    agents = {seat.agent for slot in meetings for seat in slot.seats}
    buyers = {slot.buyer for slot in slots}
    if len(agents) < SEATS:
        problems.append(f"{len(agents)} agent(s) play; a round needs {SEATS}")
    elif len(slots) != (rounds := cycle_length(len(agents), len(buyers))):
        problems.append(f"{len(slots)} rounds, but {len(agents)} agents and {len(buyers)} buyer(s) make a cycle of {rounds}")
    return problems


def _twin_problems(meetings: Sequence[Slot], twins: dict[tuple[str, str], list[Slot]]) -> list[str]:
    """Rule 1: each pair of utility keys is played by one pair of agents in exactly two meetings, with
    the utilities swapped between them; no key serves two sets; pairs meet evenly and equally often."""
    problems = []
    owners: dict[str, set[tuple[str, str]]] = defaultdict(set)
    labels: dict[int, set[tuple[str, str]]] = defaultdict(set)
    for utilities, group in twins.items():
        name = "/".join(utilities)
        for key in utilities:
            owners[key].add(utilities)
        for slot in group:
            labels[slot.twin_set].add(utilities)
        if utilities[0] == utilities[1]:
            problems.append(f"{utilities[0]} is in both seats")
        if len(group) != TWINS:
            problems.append(f"{name} is used in {len(group)} meeting(s), not {TWINS}")
            continue
        first, second = (_agents(slot) for slot in group)
        if set(first) != set(second):
            problems.append(f"{name} is shared by {_pair(*first)} and by {_pair(*second)}, not one pair")
        elif first == second:
            problems.append(f"{first[0]} has {utilities[0]} in both meetings of {name}")
        if len({slot.twin_set for slot in group}) > 1:
            problems.append(f"the meetings of {name} are labelled twin sets {sorted(slot.twin_set for slot in group)}")
    problems += [f"{key} serves {len(sets)} twin sets" for key, sets in owners.items() if len(sets) > 1]
    problems += [f"twin set {k} labels {len(sets)} different pairs of utilities" for k, sets in labels.items() if len(sets) > 1]
    return problems + _pair_count_problems(meetings)


def _pair_count_problems(meetings: Sequence[Slot]) -> list[str]:
    met = Counter(frozenset(_agents(slot)) for slot in meetings)
    agents = sorted({seat.agent for slot in meetings for seat in slot.seats})
    counts = {(first, second): met[frozenset((first, second))] for i, first in enumerate(agents) for second in agents[i + 1:]}
    problems = [f"{_pair(*pair)} meet {_times(n)}, an odd number" for pair, n in counts.items() if n % TWINS]
    if len(set(counts.values())) > 1:
        fewest, most = min(counts, key=counts.__getitem__), max(counts, key=counts.__getitem__)
        problems.append(f"pairs meet unequally often: {_pair(*most)} {_times(counts[most])}, {_pair(*fewest)} {_times(counts[fewest])}")
    return problems


def _seat_problems(meetings: Sequence[Slot], twins: dict[tuple[str, str], list[Slot]]) -> list[str]:
    """Rule 2: the twin swaps the two agents' seats, and each agent sits in each seat equally often."""
    problems = []
    for utilities, group in twins.items():
        if len(group) == TWINS and len({_agents(slot) for slot in group}) == 1:
            problems.append(f"{group[0].seats[0].agent} sits in seat 0 in both meetings of {'/'.join(utilities)}")
    sat: dict[str, list[int]] = defaultdict(lambda: [0] * SEATS)
    for slot in meetings:
        for seat, taken in enumerate(slot.seats):
            sat[taken.agent][seat] += 1
    for agent, times in sat.items():
        if len(set(times)) > 1:
            problems.append(f"{agent} sits " + ", ".join(f"in seat {seat} {_times(n)}" for seat, n in enumerate(times)))
    return problems


def _buyer_utility_problems(slots: Sequence[Slot]) -> list[str]:
    """Rule 3: every buyer plays every buyer utility of the cycle, each once."""
    played: dict[str, Counter[str]] = defaultdict(Counter)
    for slot in slots:
        played[slot.buyer][slot.buyer_utility] += 1
    every = dict.fromkeys(slot.buyer_utility for slot in slots)
    problems = []
    for buyer, times in played.items():
        problems += [f"{buyer} never plays {key}" for key in every if key not in times]
        problems += [f"{buyer} plays {key} {_times(n)}" for key, n in times.items() if n > 1]
    return problems


def _turn_problems(slots: Sequence[Slot]) -> list[str]:
    """Rule 4: buyers take turns in the order of their first rounds."""
    order = list(dict.fromkeys(slot.buyer for slot in slots))
    return [f"round {t + 1} is {slot.buyer}'s, but it is {order[t % len(order)]}'s turn"
            for t, slot in enumerate(slots) if slot.buyer != order[t % len(order)]]


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _line(label: str, problems: Sequence[str]) -> str:
    more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
    return f"{label}: " + "; ".join(problems[:_SHOWN]) + more
