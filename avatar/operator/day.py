"""The competition day in one table: every round with its buyer, deals, money and scores.

The day is read from the room's ledger (:mod:`avatar.books.ledger`), where the Avatar
Controller writes what the EO told it as it happens: the rounds of the day, the buyer the
operator named for each, the deals the EO booked, the allocation saved, the EO's totals, the
utterances that never reached the EO. The day book keeps no account of its own. After every
change it writes the day to ``data_dir/day/<date>.json`` and ``.csv`` - exports for people to
read, replaced whole - and the console serves both.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from avatar.books.ledger import RoomLedger
from avatar.books.records import RoundBook
from avatar.buyer.book import human_totals
from humaine_platform.models import finite_number
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import MAX_BUYER_CHARS

__all__ = ["CSV_COLUMNS", "DAY_DIR", "MAX_BUYER_CHARS", "DayBook", "clean_buyer"]

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

DAY_DIR: Final = "day"
"""Under ``data_dir``: one JSON and one CSV file per date."""
CSV_COLUMNS: Final = ("date", "round", "buyer", "started", "state", "deals", "paid", "allocation_saved", "buyer_utility",
                      "seller_revenue", "seller_utility", "undelivered", "note")
UNNAMED: Final = "(unnamed)"


def _utility(entry: Any) -> float | None:
    """A participant's utility in the EO's totals: ``{"value": ...}`` or a bare number."""
    if isinstance(entry, Mapping):
        return finite_number(entry.get("value"))
    return finite_number(entry)


def clean_buyer(name: Any) -> str:
    """The operator's label for a buyer: printable, one line, bounded (it goes into files)."""
    text = " ".join(str(name or "").split())
    return "".join(ch for ch in text if ch.isprintable())[:MAX_BUYER_CHARS]


class DayBook:
    """The day's rounds as the ledger has them, exported to ``folder`` after every change."""

    def __init__(self, ledger: RoomLedger, folder: Path, today: datetime.date | None = None) -> None:
        self.ledger = ledger
        self.folder = folder
        self._today = today
        self._written = ""
        """What the last export wrote (the same day again is not written again)."""

    @property
    def date(self) -> str:
        return (self._today or datetime.date.today()).isoformat()

    # -- the day from the ledger -------------------------------------------------------------------
    def books(self) -> list[RoundBook]:
        found = (self.ledger.book(r.key) for r in self.ledger.rounds_on(self.date))
        return [b for b in found if b is not None]

    def _row(self, book: RoundBook) -> dict[str, Any]:
        rnd = book.round
        sellers = self._sellers(book)
        human = human_totals(rnd.totals) or {}
        return {
            "date": rnd.day,
            "round": rnd.round_id,
            "buyer": rnd.buyer,
            "started": datetime.datetime.fromtimestamp(rnd.started_ms / 1000).strftime("%H:%M:%S"),
            "state": rnd.phase,  # "lost" when the EO lost the round
            "deals": len(book.deals),
            "paid": book.spent,
            "allocation_saved": book.allocation is not None,
            "buyer_utility": _utility(human.get("utility")),
            "seller_revenue": book.spent,  # the same booked deals as "paid": the day's two sides add up
            "seller_utility": (round(sum(s["utility"] or 0.0 for s in sellers.values()), 2)
                               if any(s["utility"] is not None for s in sellers.values()) else None),
            "undelivered": rnd.undelivered,
            "note": rnd.note,
        }

    @staticmethod
    def _sellers(book: RoundBook) -> dict[str, dict[str, float | None]]:
        """Per seller of the round: its revenue from the deals the EO booked (what the buyer paid,
        seen from the other side: a round the EO lost before its totals still sold what it sold),
        and its utility from the EO's totals when they came."""
        totals = book.round.totals if isinstance(book.round.totals, Mapping) else {}
        found: dict[str, dict[str, float | None]] = {}
        for deal in book.deals:
            seller = found.setdefault(deal.seller, {"revenue": 0.0, "utility": None})
            seller["revenue"] = round((seller["revenue"] or 0.0) + deal.price, 2)
        for name, entry in totals.items():
            if isinstance(entry, Mapping) and "revenue" in entry:
                found.setdefault(str(name), {"revenue": 0.0, "utility": None})["utility"] = _utility(entry.get("utility"))
        return found

    def summary(self, books: list[RoundBook] | None = None) -> dict[str, Any]:
        """The day per round, per buyer and per seller (of ``books``, read once by the caller, or now)."""
        books = self.books() if books is None else books
        rows = [self._row(b) for b in books]
        buyers: dict[str, dict[str, Any]] = {}
        sellers: dict[str, dict[str, Any]] = {}
        for book, row in zip(books, rows, strict=True):
            buyer = buyers.setdefault(row["buyer"] or UNNAMED, {"rounds": 0, "deals": 0, "paid": 0.0, "utility": 0.0})
            buyer["rounds"] += 1
            buyer["deals"] += row["deals"]
            buyer["paid"] = round(buyer["paid"] + row["paid"], 2)
            buyer["utility"] = round(buyer["utility"] + (row["buyer_utility"] or 0.0), 2)
            for name, figures in self._sellers(book).items():
                seller = sellers.setdefault(name, {"rounds": 0, "revenue": 0.0, "utility": 0.0})
                seller["rounds"] += 1
                seller["revenue"] = round(seller["revenue"] + (figures["revenue"] or 0.0), 2)
                seller["utility"] = round(seller["utility"] + (figures["utility"] or 0.0), 2)
        return {"date": self.date, "rounds": rows, "buyers": buyers, "sellers": sellers, "next_buyer": self.ledger.next_buyer()}

    def detail(self, books: list[RoundBook] | None = None) -> list[dict[str, Any]]:
        """Every round of the day whole: its deals with goods and prices, its saved allocation, the EO's totals."""
        return [{"round": b.round.round_id, "buyer": b.round.buyer, "state": b.round.phase, "started": b.round.started_ms,
                 "deals": [{"seller": d.seller, "goods": d.goods, "price": d.price, "source": d.source} for d in b.deals],
                 "allocation": None if b.allocation is None else {"products": b.allocation.products, "value": b.allocation.value},
                 "totals": b.round.totals, "note": b.round.note} for b in (self.books() if books is None else books)]

    def csv_text(self, summary: dict[str, Any] | None = None) -> str:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in (summary or self.summary())["rounds"]:
            writer.writerow({key: "" if row[key] is None else row[key] for key in CSV_COLUMNS})
        return out.getvalue()

    # -- exports ---------------------------------------------------------------------------------
    @property
    def json_file(self) -> Path:
        return self.folder / f"{self.date}.json"

    @property
    def csv_file(self) -> Path:
        return self.folder / f"{self.date}.csv"

    def export(self) -> tuple[dict[str, Any], bool]:
        """The day's summary, and whether it changed since the last export. Both files are
        written when it did (an offer or a prompt changes no row), each replaced whole (a reader
        never sees half a file); a disk problem is one rate-limited line (the ledger keeps the day)."""
        books = self.books()
        summary = self.summary(books)
        payload = {**summary, "detail": self.detail(books)}
        seen = json.dumps(payload)  # compact: the C encoder (the indented file's is Python's, 10x slower)
        if seen == self._written:
            return summary, False
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for path, text in ((self.json_file, json.dumps(payload, indent=1)), (self.csv_file, self.csv_text(summary))):
                staging = path.with_name(path.name + ".tmp")
                staging.write_text(text, encoding="utf-8", newline="")  # the CSV's own line ends, as served
                os.replace(staging, path)
            self._written = seen
        except OSError as exc:
            _notes.warning(("write", exc.errno), "the day's summary cannot be written to %s: %s", self.folder, exc.strerror or exc)
        return summary, True
