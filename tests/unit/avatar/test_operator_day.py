"""The day book: rounds by buyer, money and scores, read from the room's ledger and exported to files."""

from __future__ import annotations

import csv
import datetime
import io
import json
from pathlib import Path

from avatar.books.ledger import LEDGER_FILE, RoomLedger
from avatar.operator.day import CSV_COLUMNS, MAX_BUYER_CHARS, DayBook, clean_buyer
from avatar.page_events import DayEvent
from avatar.room_ledger import ledger_in_memory, open_ledger
from tests.support.bids import accept

DAY = datetime.date(2026, 11, 24)
T0 = int(datetime.datetime(2026, 11, 24, 10, 0).timestamp() * 1000)


def _play(ledger: RoomLedger, round_id: str, spent: float, utility: float | None, deals: int = 1, at: int = T0) -> None:
    key = ledger.begin_round(round_id, {"warmUp": 5, "round": 60, "post": 30}, 50.0, "USD", "warmup", at, at + 5000).key
    for i in range(deals):
        ledger.book_deal(key, "Celia", accept({"egg": 2}, round(spent / deals, 2)), "", f"{round_id}-{i}", at + 1)
    if utility is not None:
        ledger.save_allocation(key, {"cake": {"quantity": 1}}, utility)
        human = {"quantity": {"egg": 2}, "cost": spent, "utility": {"currencyUnit": "USD", "value": utility}}
        ledger.set_totals(key, {"Human": human, "Celia": {"revenue": spent, "utility": {"value": spent - 1.0}}}, at + 2)


def test_rounds_per_buyer_and_seller_from_the_ledger_in_files(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path / LEDGER_FILE)
    day = DayBook(ledger, tmp_path / "day", DAY)
    ledger.name_buyer("Ada")
    _play(ledger, "r1", 3.0, 20.5)
    assert ledger.count_undelivered("r1")
    assert not ledger.count_undelivered("unknown round")  # not a round of the day: nothing to count
    ledger.name_buyer(clean_buyer("  Grace\n\x00Hopper  " + "x" * 200))
    _play(ledger, "r2", 5.0, None, deals=2)
    summary, changed = day.export()
    assert changed and day.export() == (summary, False)  # the same day is not written again
    assert [(r.round, r.buyer, r.deals, r.paid, r.buyer_utility, r.undelivered) for r in summary.rounds] == [
        ("r1", "Ada", 1, 3.0, 20.5, 1), ("r2", ("Grace Hopper " + "x" * 200)[:MAX_BUYER_CHARS], 2, 5.0, None, 0)]
    assert summary.buyers["Ada"].wire() == {"rounds": 1, "deals": 1, "paid": 3.0, "utility": 20.5}
    # r2's deals were booked, its totals never came: sold all the same, as the buyer paid them
    assert summary.sellers["Celia"].wire() == {"rounds": 2, "revenue": 8.0, "utility": 2.0}
    assert sum(b.paid for b in summary.buyers.values()) == sum(s.revenue for s in summary.sellers.values()) == 8.0
    assert [r.seller_revenue for r in summary.rounds] == [r.paid for r in summary.rounds] == [3.0, 5.0]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "day" / "2026-11-24.csv").read_text())))
    assert [r["round"] for r in rows] == ["r1", "r2"] and rows[0]["buyer_utility"] == "20.5"
    exported = json.loads((tmp_path / "day" / "2026-11-24.json").read_text())
    assert exported["buyers"]["Ada"]["rounds"] == 1 and exported["detail"][1]["deals"][0]["goods"] == {"egg": 2}
    ledger.close()

    reopened = open_ledger(tmp_path / LEDGER_FILE)  # the controller restarted: the day goes on
    again = DayBook(reopened, tmp_path / "day", DAY)
    _play(reopened, "r3", 1.0, 9.0)
    assert [(r.round, r.deals) for r in again.summary().rounds] == [("r1", 1), ("r2", 2), ("r3", 1)]
    r2 = again.summary().rounds[1]
    assert r2.state == "lost" and "r3" in r2.note  # r3 began while r2 was still in its warm-up


def test_rounds_of_other_days_are_not_this_days(tmp_path: Path) -> None:
    ledger = ledger_in_memory()
    _play(ledger, "r1", 2.0, 7.0, at=T0 - 86_400_000)
    _play(ledger, "r1", 3.0, 8.0)
    rows = DayBook(ledger, tmp_path, DAY).summary().rounds
    assert [(r.round, r.paid) for r in rows] == [("r1", 3.0)]


def test_a_disk_that_refuses_keeps_the_day_in_the_ledger(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    ledger = ledger_in_memory()
    day = DayBook(ledger, blocked / "day", DAY)
    _play(ledger, "r1", 2.0, 7.0)
    assert day.export()[0].rounds[0].buyer_utility == 7.0


def test_the_files_the_answers_and_the_console_say_the_same_day(tmp_path: Path) -> None:
    ledger = ledger_in_memory()
    day = DayBook(ledger, tmp_path / "day", DAY)
    _play(ledger, "r1", 3.0, 20.5)
    _play(ledger, "r2", 0.0, None, deals=0, at=T0 + 60_000)
    summary, _ = day.export()
    assert json.loads(day.json_file.read_text()) == day.whole().model_dump()
    assert day.csv_file.read_text(encoding="utf-8").splitlines()[0] == ",".join(CSV_COLUMNS)
    assert day.csv_file.read_bytes().decode() == day.csv_text()  # the CSV's own line ends, as served
    assert DayEvent.of(summary).payload() == summary.model_dump()
    assert [type(r.paid) for r in summary.rounds] == [float, int]  # no deals: 0 as the sum gives it, not 0.0
