"""The competition's rows in the room's ledger: round ids, the schedule, put-backs, the roster,
utilities, agent programs, and an earlier ledger taken over with its rows."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from avatar.books.ledger import LEDGER_FILE
from avatar.books.records import day_of
from avatar.competition.schedule import plan_cycle
from avatar.competition.settings import AgentEntry, TournamentSettings
from avatar.competition.store import CompetitionStore, SeatPlan, roster_key
from avatar.competition.tournament import Tournament
from avatar.room_ledger import ledger_in_memory, open_ledger
from workers.runtime.messages import now_ms

AGENTS = ["A", "B", "C"]
BUYERS = ["Ada", "Ben"]


def roster(**more: object) -> TournamentSettings:
    return TournamentSettings(agents={name: AgentEntry(url=f"http://127.0.0.1:{15000 + i}") for i, name in enumerate(AGENTS)},
                              buyers=BUYERS, **more)


def test_round_ids_go_on_past_every_id_the_day_used_and_a_start_that_never_reached_the_eo_frees_its_own() -> None:
    ledger = ledger_in_memory()
    store = CompetitionStore(ledger)
    day = day_of(now_ms())
    assert store.free_round_id(day) == "r1"
    ledger.begin_round("r1", {}, 50.0, "USD", "warmup", now_ms(), None)  # an EO round the room did not start
    ledger.begin_round("practice", {}, 50.0, "USD", "warmup", now_ms(), None)
    assert store.free_round_id(day) == "r2"
    launch = store.add_launch("r2", now_ms(), "Ada", None, [], {}, {}, "platform")
    assert store.free_round_id(day) == "r3"  # taken the moment the room starts it
    store.forget_launch(launch.id)
    assert store.free_round_id(day) == "r2"
    failed = store.add_launch("r2", now_ms(), "Ada", None, [], {}, {}, "platform")
    store.set_launch(failed.id, "failed", "the EO refused")
    assert store.free_round_id(day) == "r3"  # the EO may know a refused id: never again


def test_the_eos_round_takes_its_buyer_and_start_from_the_rooms_launch() -> None:
    ledger = ledger_in_memory()
    store = CompetitionStore(ledger)
    ledger.name_buyer("Operator's pick")
    launch = store.add_launch("r1", now_ms(), "Ada", None, [SeatPlan("Celia", "A", "http://127.0.0.1:15000")], {}, {}, "standin")
    rnd = ledger.begin_round("r1", {}, 50.0, "USD", "warmup", now_ms(), None)
    assert rnd.buyer == "Ada"
    found = store.launch_of(rnd)
    assert found is not None and found.id == launch.id and found.agent_of("Celia") == "A"
    assert ledger.begin_round("r9", {}, 50.0, "USD", "warmup", now_ms(), None).buyer == "Operator's pick"


def test_a_lost_round_is_put_back_at_the_end_once_and_a_new_roster_drops_the_old_ones_rounds() -> None:
    ledger = ledger_in_memory()
    tournament = Tournament(CompetitionStore(ledger), roster(seed=1), ["Celia", "Watson"])
    slots = tournament.plan()
    assert len(slots) == 6 and all(s.state == "planned" for s in slots)
    assert tournament.plan() == slots  # planned once, kept
    store = tournament.store
    first = tournament.next_slot()
    assert first is not None and first.id == slots[0].id
    store.set_slot(first.id, "playing")
    again = store.put_back(first, tournament.roster or "")
    assert again is not None
    replay = store.slot(again)
    assert replay is not None and replay.put_back_from == first.id and replay.slot == first.slot
    assert [s.id for s in tournament.upcoming()][-1] == again  # at the end of the schedule
    assert store.put_back(replay, tournament.roster or "") is None  # a replay is not put back again
    assert store.slot(first.id).state == "lost"  # type: ignore[union-attr]
    # another roster is another competition: the old one's planned rounds are dropped, not played
    other = Tournament(store, TournamentSettings(agents={n: AgentEntry(url="http://127.0.0.1:1") for n in ("A", "B")},
                                                 buyers=["Ada"]), ["Celia", "Watson"])
    assert other.roster != tournament.roster
    planned = other.plan()
    assert {s.state for s in store.slots(tournament.roster or "")} == {"lost", "dropped"}
    assert len(planned) == 2 and all(s.slot.buyer == "Ada" for s in planned)


def test_a_cycle_used_up_plans_the_next_with_a_new_permutation_and_the_same_seed_the_same_plan(tmp_path: Path) -> None:
    ledger = ledger_in_memory()
    tournament = Tournament(CompetitionStore(ledger), roster(seed=5), ["Celia", "Watson"])
    for slot in tournament.plan():
        tournament.store.set_slot(slot.id, "played")
    following = tournament.next_slot()
    assert following is not None and following.cycle == 2
    cycles = {s.cycle for s in tournament.store.slots(tournament.roster or "")}
    assert cycles == {1, 2} and tournament.fairness() == {1: [], 2: []}
    elsewhere = Tournament(CompetitionStore(ledger_in_memory()), roster(seed=5), ["Celia", "Watson"]).plan()
    assert [s.slot for s in elsewhere] == [s.slot for s in tournament.store.slots(tournament.roster or "") if s.cycle == 1]


def test_a_utility_is_drawn_once_per_key() -> None:
    store = CompetitionStore(ledger_in_memory())
    first = store.keep_utility("c1s1a", "seller", {"utility": {"egg": 1}}, "test", now_ms())
    assert store.keep_utility("c1s1a", "seller", {"utility": {"egg": 2}}, "test", now_ms()) == first
    assert store.utility("c1s1a") == {"utility": {"egg": 1}} and store.utility("c1b1") is None


def test_a_ledger_of_the_earlier_schema_is_taken_over_with_its_rows(tmp_path: Path) -> None:
    path = tmp_path / LEDGER_FILE
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema', '1');
        CREATE TABLE rounds (key INTEGER PRIMARY KEY AUTOINCREMENT, round_label TEXT NOT NULL, round_id TEXT NOT NULL,
            day TEXT NOT NULL, started_ms INTEGER NOT NULL, buyer TEXT NOT NULL DEFAULT '', phase TEXT NOT NULL,
            phase_started_ms INTEGER, phase_deadline_ms INTEGER, durations TEXT NOT NULL DEFAULT '{}', budget REAL,
            currency TEXT NOT NULL DEFAULT 'USD', utility TEXT, totals TEXT, undelivered INTEGER NOT NULL DEFAULT 0,
            note TEXT NOT NULL DEFAULT '');
    """)
    db.execute("INSERT INTO rounds (round_label, round_id, day, started_ms, buyer, phase) VALUES ('r4', '\"r4\"', ?, 1, 'Zoe', 'ended')",
               (day_of(now_ms()),))
    db.commit()
    db.close()
    ledger = open_ledger(path)
    try:
        assert ledger.round_for("r4").buyer == "Zoe"  # type: ignore[union-attr]
        assert CompetitionStore(ledger).free_round_id(day_of(now_ms())) == "r5"
        assert ledger.query("SELECT value FROM meta WHERE key = 'schema'") == [("2",)]
        assert ledger.begin_round("r5", {}, 50.0, "USD", "warmup", now_ms(), None).round_id == "r5"
    finally:
        ledger.close()


def test_the_roster_key_names_the_roster_in_order() -> None:
    assert roster_key(AGENTS, BUYERS) == roster_key(list(AGENTS), list(BUYERS))
    assert roster_key(AGENTS, BUYERS) != roster_key(AGENTS, [*BUYERS, "Cy"])
    assert len(plan_cycle(AGENTS, BUYERS, random.Random(1))) == 6
