"""The competition's standings, from EO round totals kept in a real (in-memory) ledger."""

from __future__ import annotations

import csv
import io
from typing import Any

from avatar.books.ledger import RoomLedger
from avatar.books.records import day_of
from avatar.competition.standings import UNNAMED_BUYER, standings
from avatar.competition.store import CompetitionStore, SeatPlan
from avatar.room_ledger import ledger_in_memory
from workers.runtime.messages import now_ms

AVATARS = ["Celia", "Watson"]


def utility(value: float | None) -> dict[str, Any]:
    return {"currencyUnit": "USD", "value": value}


def play(ledger: RoomLedger, round_id: str, buyer: str, seats: dict[str, str] | None, totals: dict[str, Any] | None,
         lost: bool = False) -> None:
    """A round (started by the room when ``seats``, avatar -> agent, are given) and what the EO sent at its end."""
    if seats is not None:
        plans = [SeatPlan(avatar, agent, "http://127.0.0.1:1") for avatar, agent in seats.items()]
        CompetitionStore(ledger).add_launch(round_id, now_ms(), buyer, None, plans, {}, {}, "platform")
    else:
        ledger.name_buyer(buyer)
    key = ledger.begin_round(round_id, {"warmUp": 1, "round": 60, "post": 10}, 50.0, "USD", "warmup", now_ms(), None).key
    if lost:
        ledger.set_phase(key, "lost", now_ms(), None, note="the EO no longer knows it")
    elif totals is not None:
        ledger.set_totals(key, totals, now_ms())
    else:
        ledger.set_phase(key, "ended", now_ms(), None, note="the EO's totals never reached the room")


def today(ledger: RoomLedger) -> list[Any]:
    return CompetitionStore(ledger).finished_rounds(day=day_of(now_ms()))


def test_means_of_utility_and_welfare_per_agent_and_totals_per_buyer_from_the_eos_totals() -> None:
    ledger = ledger_in_memory()
    # r1: Ada buys from A (as Celia); B (as Watson) dealt nothing and is missing from the totals: 0
    play(ledger, "r1", "Ada", {"Celia": "A", "Watson": "B"},
         {"Human": {"cost": 3.0, "utility": utility(20.5)}, "Celia": {"revenue": 3.0, "utility": utility(1.25)}})
    # r2: Ben, with B as Celia and A as Watson; both dealt, the buyer saved no allocation (0)
    play(ledger, "r2", "Ben", {"Celia": "B", "Watson": "A"},
         {"Human": {"utility": utility(0)}, "Celia": {"utility": utility(0.5)}, "Watson": {"utility": utility(0.75)}})
    table = standings(today(ledger), AVATARS)
    agents = {a.name: (a.rounds, a.utility_mean, a.welfare_mean) for a in table.agents}
    # welfare: r1 = 20.5 + 1.25 + 0 = 21.75; r2 = 0 + 0.5 + 0.75 = 1.25; both agents played both
    assert agents == {"A": (2, 1.0, 11.5), "B": (2, 0.25, 11.5)}
    assert [a.name for a in table.agents] == ["A", "B"]  # by mean utility, best first
    assert {b.name: (b.rounds, b.utility_total) for b in table.buyers} == {"Ada": (1, 20.5), "Ben": (1, 0.0)}
    assert table.unscored == []
    assert table.body()["agents"][0] == {"name": "A", "rounds": 2, "utility_mean": 1.0, "welfare_mean": 11.5}
    assert (table.body()["best_utility"], table.body()["best_welfare"]) == ("A", "A")  # a tie goes by name


def test_a_round_without_totals_or_with_a_missing_utility_counts_in_no_standing_and_says_why() -> None:
    ledger = ledger_in_memory()
    play(ledger, "r1", "Ada", {"Celia": "A", "Watson": "B"}, None, lost=True)
    play(ledger, "r2", "Ada", {"Celia": "A", "Watson": "B"}, None)
    play(ledger, "r3", "Ada", {"Celia": "A", "Watson": "B"},
         {"Human": {"utility": utility(3.0)}, "Celia": {"utility": None}})  # the EO's utility generator was away
    play(ledger, "r4", "Ada", {"Celia": "A", "Watson": "B"}, {"Human": {"utility": utility(float("nan"))}})  # no number
    table = standings(today(ledger), AVATARS, roster=["A", "B", "C"], buyers=["Ada", "Ben"])
    assert [(u.round, u.reason) for u in table.unscored] == [
        ("r1", "the EO no longer knows it"),
        ("r2", "the EO's totals never reached the room"),
        ("r3", "the EO's totals give no utility for Celia (its utility generator did not answer)"),
        ("r4", "the EO's totals give no utility for Human (its utility generator did not answer)"),
    ]
    # the whole roster is listed, with no rounds yet
    assert {a.name: a.rounds for a in table.agents} == {"A": 0, "B": 0, "C": 0}
    assert table.winners() == {"best_utility": None, "best_welfare": None}  # nobody leads before playing
    assert {b.name: b.rounds for b in table.buyers} == {"Ada": 0, "Ben": 0}
    assert table.csv_text().splitlines()[0] == "kind,name,rounds,utility_mean,welfare_mean,utility_total,note"
    rows = list(csv.DictReader(io.StringIO(table.csv_text())))
    assert next((r["name"], r["utility_total"], r["note"]) for r in rows if r["kind"] == "unscored") == \
        ("r1", "", "the EO no longer knows it")  # why, in its own column


def test_a_round_the_room_did_not_start_counts_for_the_avatars_and_the_named_buyer() -> None:
    ledger = ledger_in_memory()
    play(ledger, "r1", "", None, {"Human": {"utility": utility(1.0)}, "Watson": {"utility": utility(2.0)}})
    table = standings(today(ledger), AVATARS)
    assert {a.name: (a.rounds, a.utility_mean, a.welfare_mean) for a in table.agents} == {"Celia": (1, 0.0, 3.0),
                                                                                          "Watson": (1, 2.0, 3.0)}
    assert [(b.name, b.utility_total) for b in table.buyers] == [(UNNAMED_BUYER, 1.0)]
