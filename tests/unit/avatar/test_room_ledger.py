"""The room's ledger file: every owner's tables on one database, and a file an earlier version
wrote opens and reads as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from avatar.books.ledger import LEDGER_FILE, read_ledger
from avatar.books.records import day_of
from avatar.competition.store import CompetitionStore
from avatar.operator.alerts import AlertBook
from avatar.room_ledger import ROOM_TABLES, ledger_in_memory, open_ledger
from tests.support.paths import FIXTURES

T0 = 1_700_000_000_000
WRITTEN_BEFORE = FIXTURES / "ledger-schema-2.sql"
"""A ledger as the code before the books moved to ``avatar/books`` wrote it (schema 2)."""


def _tables(db: sqlite3.Connection) -> set[str]:
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_the_store_creates_every_owners_tables() -> None:
    assert len(ROOM_TABLES) == 3  # the books', the competition's, the alerts'
    ledger = ledger_in_memory()
    names = {row[0] for row in ledger.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"meta", "rounds", "prompts", "deals", "launches", "schedule", "utilities", "agent_runs", "alerts", "room_log"} <= names


def test_a_ledger_the_earlier_code_wrote_opens_and_reads(tmp_path: Path) -> None:
    path = tmp_path / LEDGER_FILE
    with sqlite3.connect(path) as raw:
        raw.executescript(WRITTEN_BEFORE.read_text(encoding="utf-8"))
        before = _tables(raw)
    raw.close()
    ledger = open_ledger(path)
    try:
        with sqlite3.connect(path) as raw:
            assert _tables(raw) == before  # nothing renamed, nothing added beside
        raw.close()
        book = ledger.current_book()
        assert book is not None and book.round.round_id == "r1" and book.round.phase == "ended" and book.round.buyer == "Ada"
        assert book.round.totals == {"Human": {"cost": 3.5, "utility": {"value": 6.0}}} and ledger.eo_knew(book.round.key)
        assert [(o.seller, o.goods, o.price) for o in book.offers] == [("Watson", {"milk": 1}, 2.0)]
        assert [(p.id, p.outcome, p.goods, p.price, p.bid["type"]) for p in book.prompts] == [("p1", "booked", {"egg": 2}, 1.5, "Accept")]
        assert [(d.seller, d.source, d.prompt_id) for d in book.deals] == [("Celia", "eo", "p1"), ("Watson", "eo-totals", None)]
        assert book.allocation is not None and book.allocation.value == 6.0 and book.spent == 3.5
        assert ledger.log_lines(book.round.key, 10)[0]["text"] == "Milk for two."
        assert (ledger.next_buyer(), ledger.recall("human_services")) == ("Ada", ["Human"])
        store = CompetitionStore(ledger)
        launch = store.launch_of(book.round)
        assert launch is not None and launch.state == "started" and store.round_of(launch) == book.round
        assert [s.slot.buyer for s in store.slots("roster1")] == ["Ada"]
        assert store.utility("b-1") == {"egg": {"parameters": {"unitvalue": 3}}}
        assert [(r.agent, r.state) for r in store.agent_runs(launch.id)] == [("a1", "stopped")]
        assert [a.text for a in AlertBook(ledger).of_day(day_of(T0))] == ["camera offline"]
        assert store.free_round_id(day_of(T0)) == "r2"
        following = ledger.begin_round("r2", {}, 50.0, "USD", "warmup", T0 + 200_000, None)  # and it goes on being written
        assert following.key == book.round.key + 1 and following.buyer == "Ada"
    finally:
        ledger.close()
    reader = read_ledger(path)  # as the round recorder reads it, beside the controller
    assert reader is not None
    try:
        assert [str(r.round_id) for r in reader.rounds_on(day_of(T0))] == ["r1", "r2"]
    finally:
        reader.close()
