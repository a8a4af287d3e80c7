"""The day book: rounds by buyer, money and scores, in files that survive a restart."""

from __future__ import annotations

import csv
import datetime
import io
import json
from pathlib import Path

from avatar.operator.day import MAX_BUYER_CHARS, DayBook

DAY = datetime.date(2026, 11, 24)


def _round(round_id: str, spent: float, utility: float | None, deals: int = 1) -> dict:
    totals = None if utility is None else {"quantity": {"egg": 2}, "cost": spent, "utility": {"currencyUnit": "USD", "value": utility}}
    return {"round_id": round_id, "spent": spent, "deals": [{"seller": "Celia", "goods": {"egg": 2}, "price": spent}] * deals,
            "saved": {"products": {}} if utility else None, "human_totals": totals,
            "round_totals": {"Human": totals or {}, "Celia": {"revenue": spent, "utility": {"value": spent - 1.0}}}}


def test_rounds_per_buyer_and_seller_in_files_that_survive_a_restart(tmp_path: Path) -> None:
    day = DayBook(tmp_path, DAY)
    day.set_buyer("Ada")
    day.on_buyer_view(_round("r1", 3.0, 20.5))
    day.undelivered("r1")
    day.undelivered("unknown round")  # not a round of the day: nothing to count
    day.set_buyer("  Grace\n\x00Hopper  " + "x" * 200)
    day.on_buyer_view(_round("r2", 5.0, None, deals=2))
    summary = day.summary()
    assert [(r["round"], r["buyer"], r["deals"], r["paid"], r["buyer_utility"], r["undelivered"]) for r in summary["rounds"]] == [
        ("r1", "Ada", 1, 3.0, 20.5, 1), ("r2", ("Grace Hopper " + "x" * 200)[:MAX_BUYER_CHARS], 2, 5.0, None, 0)]
    assert summary["buyers"]["Ada"] == {"rounds": 1, "deals": 1, "paid": 3.0, "utility": 20.5}
    assert summary["sellers"]["Celia"] == {"rounds": 2, "revenue": 8.0, "utility": 6.0}
    rows = list(csv.DictReader(io.StringIO((tmp_path / "2026-11-24.csv").read_text())))
    assert [r["round"] for r in rows] == ["r1", "r2"] and rows[0]["buyer_utility"] == "20.5"
    assert json.loads((tmp_path / "2026-11-24.json").read_text())["buyers"]["Ada"]["rounds"] == 1

    again = DayBook(tmp_path, DAY)  # the controller restarted: the day goes on
    again.on_buyer_view(_round("r3", 1.0, 9.0))
    assert [r["round"] for r in again.summary()["rounds"]] == ["r1", "r2", "r3"]


def test_a_disk_that_refuses_keeps_the_day_in_memory(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    day = DayBook(blocked / "day", DAY)
    day.on_buyer_view(_round("r1", 2.0, 7.0))
    assert day.summary()["rounds"][0]["buyer_utility"] == 7.0
