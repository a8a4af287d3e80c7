"""The competition's cycle keeps the four fairness rules for any roster and seed, and the checker
catches a schedule that breaks any one of them."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avatar.competition.schedule import (
    RULE_BUYER_UTILITIES,
    RULE_SEATS,
    RULE_TURNS,
    RULE_TWINS,
    SHAPE,
    RosterError,
    Seat,
    Slot,
    buyer_key,
    cycle_length,
    fairness_problems,
    plan_cycle,
    seller_key,
)

AGENTS = ("A", "B", "C")
BUYERS = ("Ada", "Ben")
SEED = 11


def plan(seed: int = SEED, agents: tuple[str, ...] = AGENTS, buyers: tuple[str, ...] = BUYERS, cycle: int = 1) -> list[Slot]:
    return plan_cycle(agents, buyers, random.Random(seed), cycle)


def agents_of(slot: Slot) -> tuple[str, ...]:
    return tuple(seat.agent for seat in slot.seats)


def rules(lines: list[str]) -> list[str]:
    """The label of each problem line (what precedes its colon)."""
    return [line.split(":")[0] for line in lines]


def twin_of(slots: list[Slot], t: int) -> int:
    return next(i for i, slot in enumerate(slots) if i != t and slot.twin_set == slots[t].twin_set)


@settings(max_examples=150, database=None, deadline=None)
@given(agents=st.integers(2, 7), buyers=st.integers(1, 5), seed=st.integers())
def test_any_roster_and_seed_make_a_fair_cycle(agents: int, buyers: int, seed: int) -> None:
    slots = plan(seed, tuple(f"agent{i}" for i in range(agents)), tuple(f"buyer{j}" for j in range(buyers)))
    assert len(slots) == cycle_length(agents, buyers)
    assert fairness_problems(slots) == []
    # the promise of the order: a round shares an agent with the round before only when every
    # meeting still to come would have as well
    for t in range(1, len(slots)):
        before = set(agents_of(slots[t - 1]))
        if before & set(agents_of(slots[t])):
            assert all(before & set(agents_of(later)) for later in slots[t:])


@pytest.mark.parametrize(("agents", "buyers", "rounds"), [(2, 1, 2), (2, 3, 6), (3, 2, 6), (4, 5, 60), (20, 40, 760)])
def test_a_cycle_is_the_shortest_whole_number_of_twins_and_turns(agents: int, buyers: int, rounds: int) -> None:
    assert cycle_length(agents, buyers) == rounds


def test_three_agents_two_buyers_take_turns() -> None:
    slots = plan()
    assert len(slots) == 6
    assert [slot.buyer for slot in slots] == ["Ada", "Ben"] * 3


def test_each_pair_meets_twice_with_swapped_utilities_and_seats() -> None:
    slots = plan()
    for twin_set in {slot.twin_set for slot in slots}:
        first, second = (slot for slot in slots if slot.twin_set == twin_set)
        u1, u2 = seller_key(1, twin_set, 0), seller_key(1, twin_set, 1)
        x, y = agents_of(first)
        assert first.seats == (Seat(x, u1), Seat(y, u2))
        assert second.seats == (Seat(y, u1), Seat(x, u2))
    assert Counter(frozenset(agents_of(slot)) for slot in slots) == {frozenset(pair): 2 for pair in ("AB", "AC", "BC")}
    for seat in (0, 1):
        assert Counter(slot.seats[seat].agent for slot in slots) == dict.fromkeys(AGENTS, 2)


def test_both_buyers_play_the_same_three_buyer_utilities() -> None:
    slots = plan()
    every = {buyer_key(1, k) for k in (1, 2, 3)}
    for buyer in BUYERS:
        played = [slot.buyer_utility for slot in slots if slot.buyer == buyer]
        assert sorted(played) == sorted(every)


def test_keys_carry_the_cycle() -> None:
    slots = plan(cycle=4)
    assert {slot.seats[0].utility for slot in slots} == {seller_key(4, k, 0) for k in (1, 2, 3)}
    assert {slot.buyer_utility for slot in slots} == {buyer_key(4, k) for k in (1, 2, 3)}
    assert fairness_problems(slots) == []


def test_a_seed_replays_its_plan_and_another_seed_orders_it_otherwise() -> None:
    roster = ("A", "B", "C", "D", "E")
    assert plan(1, roster) == plan(1, roster)
    assert [agents_of(slot) for slot in plan(1, roster)] != [agents_of(slot) for slot in plan(2, roster)]


def test_the_next_cycle_is_a_new_permutation() -> None:
    rng = random.Random(SEED)
    roster = ("A", "B", "C", "D", "E")
    first, second = plan_cycle(roster, BUYERS, rng, 1), plan_cycle(roster, BUYERS, rng, 2)
    assert fairness_problems(second) == []
    assert [agents_of(slot) for slot in first] != [agents_of(slot) for slot in second]


@pytest.mark.parametrize(("agents", "buyers", "named"), [
    (["A"], ["Ada"], "seller agents"),
    (["A", "B"], [], "buyer"),
    (["A", "B"], ["Ada", " ada"], "buyer 'ada'"),
    (["A", "a"], ["Ada"], "agent 'a'"),
    (["A", " "], ["Ada"], "blank agent"),
])
def test_a_roster_that_cannot_be_fair_is_refused(agents: list[str], buyers: list[str], named: str) -> None:
    with pytest.raises(RosterError, match=named):
        plan_cycle(agents, buyers, random.Random(SEED))


def test_a_fair_plan_has_no_problems_to_report() -> None:
    assert fairness_problems(plan()) == []


def test_swapping_the_utilities_of_a_meeting_breaks_the_twins() -> None:
    slots = plan()
    first, second = slots[0].seats
    slots[0] = replace(slots[0], seats=(replace(first, utility=second.utility), replace(second, utility=first.utility)))
    assert RULE_TWINS in rules(fairness_problems(slots))


def test_a_meeting_labelled_with_another_twin_set_is_caught() -> None:
    slots = plan()
    slots[0] = replace(slots[0], twin_set=slots[twin_of(slots, 0)].twin_set + 1)
    assert rules(fairness_problems(slots)) == [RULE_TWINS]


def test_a_twin_set_moved_to_another_pair_makes_pairs_meet_unequally() -> None:
    slots = plan(agents=("A", "B", "C", "D"), buyers=("Ada",))
    t = next(i for i, slot in enumerate(slots) if set(agents_of(slot)) == {"A", "B"})
    for i in (t, twin_of(slots, t)):
        renamed = tuple(replace(seat, agent="C" if seat.agent == "B" else seat.agent) for seat in slots[i].seats)
        slots[i] = replace(slots[i], seats=renamed)
    lines = fairness_problems(slots)
    assert rules(lines) == [RULE_TWINS]
    assert "unequally" in lines[0]


def test_a_repeated_buyer_utility_is_caught() -> None:
    slots = plan()
    slots[0] = replace(slots[0], buyer_utility=slots[2].buyer_utility)
    assert rules(fairness_problems(slots)) == [RULE_BUYER_UTILITIES]


def test_buyers_out_of_turn_are_caught() -> None:
    slots = plan()
    slots[2], slots[3] = (replace(slots[2], buyer=slots[3].buyer, buyer_utility=slots[3].buyer_utility),
                          replace(slots[3], buyer=slots[2].buyer, buyer_utility=slots[2].buyer_utility))
    assert rules(fairness_problems(slots)) == [RULE_TURNS]


def test_a_twin_that_keeps_the_seats_is_caught() -> None:
    slots = plan()
    twin = twin_of(slots, 0)
    slots[twin] = replace(slots[twin], seats=tuple(replace(seat, agent=agent) for seat, agent in zip(slots[twin].seats, agents_of(slots[0]),
                                                                                                      strict=True)))
    assert {RULE_SEATS, RULE_TWINS} <= set(rules(fairness_problems(slots)))


def test_a_missing_round_is_no_cycle() -> None:
    assert SHAPE in rules(fairness_problems(plan()[:-1]))
    assert rules(fairness_problems([])) == [SHAPE]


def test_a_badly_broken_schedule_gives_one_line_per_rule() -> None:
    slots = [replace(slot, buyer_utility=buyer_key(1, t + 1)) for t, slot in enumerate(plan(agents=("A", "B", "C", "D", "E")))]
    lines = fairness_problems(slots)
    assert rules(lines) == [RULE_BUYER_UTILITIES]
    assert "more)" in lines[0]
