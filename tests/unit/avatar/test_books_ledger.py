"""The room's ledger: the EO's books in SQLite, kept through restarts and read by other processes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from avatar.books.ledger import LEDGER_FILE
from avatar.books.records import day_of
from avatar.room_ledger import ledger_in_memory, open_ledger, open_ledger_or_memory
from tests.support.bids import accept

T0 = 1_700_000_000_000
DURATIONS = {"warmUp": 5.0, "round": 60.0, "post": 30.0}


def test_a_round_from_metadata_to_totals_survives_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "data" / LEDGER_FILE
    ledger = open_ledger(path)
    ledger.name_buyer("Ada")
    rnd = ledger.begin_round(7, DURATIONS, 50.0, "USD", "warmup", T0, T0 + 5000)
    assert (rnd.round_id, rnd.buyer, rnd.phase, rnd.day) == (7, "Ada", "warmup", day_of(T0))
    ledger.set_phase(rnd.key, "round", T0 + 5000, T0 + 65_000)
    ledger.set_utility(rnd.key, {"cake": {}})
    ledger.book_deal(rnd.key, "Celia", accept({"egg": 2}, 1.5), "Deal.", "m1", T0 + 6000)
    ledger.close()

    again = open_ledger(path)  # a restarted controller
    book = again.current_book()
    assert book is not None and book.round.round_id == 7 and book.round.phase == "round"
    assert book.round.utility == {"cake": {}} and book.left == 48.5 and book.bought() == {"egg": 2}
    assert again.round_for("7") == again.round_for(7)  # one round, whether its id came as a number or text
    again.set_totals(book.round.key, {"Human": {"cost": 1.5}}, T0 + 100_000)
    assert again.current().phase == "ended" and again.current().totals == {"Human": {"cost": 1.5}}
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_new_round_closes_the_one_left_open() -> None:
    ledger = ledger_in_memory()
    first = ledger.begin_round("r1", DURATIONS, 50.0, "USD", "warmup", T0, None)
    ledger.set_phase(first.key, "post", T0 + 1, None)
    second = ledger.begin_round("r2", DURATIONS, 50.0, "USD", "warmup", T0 + 2, None)
    ledger.set_phase(second.key, "round", T0 + 3, None)
    third = ledger.begin_round("r2", DURATIONS, 50.0, "USD", "warmup", T0 + 4, None)  # the EO started r2 again
    rows = {r.key: r for r in ledger.rounds_on(day_of(T0))}
    assert rows[first.key].phase == "ended" and "totals never" in rows[first.key].note
    assert rows[second.key].phase == "lost" and rows[third.key].phase == "warmup"
    assert ledger.round_for("r2").key == third.key and {str(r.round_id) for r in ledger.rounds_on(day_of(T0))} == {"r1", "r2"}


def test_prompts_answers_and_the_deal_the_eo_booked() -> None:
    ledger = ledger_in_memory()
    key = ledger.begin_round("r1", DURATIONS, 50.0, "USD", "round", T0, None).key
    ledger.add_prompt("a", key, "Celia", "Deal.", accept({"egg": 1}, 1.0), T0)
    ledger.add_prompt("b", key, "Watson", "Deal.", accept({"milk": 2}, 2.0), T0 + 1)
    assert [p.id for p in ledger.book(key).waiting()] == ["a", "b"]
    ledger.answer_prompt("a", True, "buyer", T0 + 2)
    ledger.answer_prompt("a", False, "voice", T0 + 3)  # the first answer stays
    ledger.answer_prompt("b", False, "voice", T0 + 4)
    assert {p.id: p.outcome for p in ledger.book(key).prompts} == {"a": "sent", "b": "declined"}
    deal = ledger.book_deal(key, "Celia", accept({"egg": 1}, 1.0), "Deal.", "m1", T0 + 5)
    assert deal is not None and deal.prompt_id == "a"
    assert ledger.book_deal(key, "Celia", accept({"egg": 1}, 1.0), "Deal.", "m1", T0 + 6) is None  # the same message twice: once
    assert ledger.prompt("a").outcome == "booked" and len(ledger.book(key).deals) == 1


def test_what_the_eos_totals_added_becomes_the_message_when_it_arrives() -> None:
    ledger = ledger_in_memory()
    key = ledger.begin_round("r1", DURATIONS, 50.0, "USD", "round", T0, None).key
    ledger.add_reconciled_deal(key, "Watson", {"egg": 1}, 2.0, T0)
    ledger.book_deal(key, "Watson", accept({"egg": 1}, 2.0), "Deal.", "m1", T0 + 1)
    deals = ledger.book(key).deals
    assert [(d.source, d.text) for d in deals] == [("eo", "Deal.")]


def test_prompts_left_waiting_by_a_stopped_controller_are_cut() -> None:
    ledger = ledger_in_memory()
    key = ledger.begin_round("r1", DURATIONS, 50.0, "USD", "round", T0, None).key
    ledger.add_prompt("a", key, "Celia", "", accept({}, None), T0)
    assert [p.id for p in ledger.cut_waiting_prompts()] == ["a"]
    assert ledger.prompt("a").outcome == "cut" and ledger.cut_waiting_prompts() == []


def test_a_folder_that_takes_no_writes_keeps_the_books_in_memory(tmp_path: Path, caplog) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    ledger = open_ledger_or_memory(blocked / LEDGER_FILE)
    assert ledger.where == "memory" and "in memory only" in caplog.text
    ledger.begin_round("r1", DURATIONS, 50.0, "USD", "warmup", T0, None)
    assert ledger.current().round_id == "r1"
