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
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from avatar.books.ledger import RoomLedger
from avatar.books.records import RoundBook, participant_totals, utility_of
from avatar.page_events import BuyerDay, DayRow, DaySummary, Number, PageModel, RoundId, SellerDay, View
from humaine_platform.models import HUMAN
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import MAX_BUYER_CHARS

__all__ = ["CSV_COLUMNS", "DAY_DIR", "MAX_BUYER_CHARS", "DayBook", "DayExport", "clean_buyer"]

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

DAY_DIR: Final = "day"
"""Under ``data_dir``: one JSON and one CSV file per date."""
CSV_COLUMNS: Final = tuple(DayRow.model_fields)
"""The day's CSV has a column per field of a round's row, in their order."""
UNNAMED: Final = "(unnamed)"


def clean_buyer(name: object) -> str:
    """The operator's label for a buyer: printable, one line, bounded (it goes into files)."""
    text = " ".join(str(name or "").split())
    return "".join(ch for ch in text if ch.isprintable())[:MAX_BUYER_CHARS]


class DayDeal(PageModel):
    """A deal the EO booked, as the day's detail has it."""

    seller: str
    goods: dict[str, int]
    price: Number
    source: str


class DayAllocation(PageModel):
    """The allocation the buyer saved, as the day's detail has it."""

    products: View
    value: Number | None


class DayRound(PageModel):
    """One round of the day whole: its deals with goods and prices, its saved allocation, the EO's totals."""

    round: RoundId
    buyer: str
    state: str
    started: int
    """When it started (ms since the epoch)."""
    deals: list[DayDeal]
    allocation: DayAllocation | None
    totals: View | None
    """As the EO sent them."""
    note: str

    @classmethod
    def of(cls, book: RoundBook) -> DayRound:
        rnd, saved = book.round, book.allocation
        return cls(round=rnd.round_id, buyer=rnd.buyer, state=rnd.phase, started=rnd.started_ms,
                   deals=[DayDeal(seller=d.seller, goods=d.goods, price=d.price, source=d.source) for d in book.deals],
                   allocation=None if saved is None else DayAllocation(products=saved.products, value=saved.value),
                   totals=rnd.totals, note=rnd.note)


class DayExport(DaySummary):
    """The day as its JSON file and ``/operator/day.json`` have it: the summary and every round whole."""

    detail: list[DayRound]


@dataclass(frozen=True)
class SellerFigures:
    """A seller's figures in one round."""

    revenue: float
    """From the deals the EO booked."""
    utility: float | None
    """From the EO's totals, when they came."""


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

    @staticmethod
    def _row(book: RoundBook, sellers_of_round: dict[str, SellerFigures]) -> DayRow:
        rnd = book.round
        sellers = sellers_of_round.values()
        return DayRow(
            date=rnd.day,
            round=rnd.round_id,
            buyer=rnd.buyer,
            started=datetime.datetime.fromtimestamp(rnd.started_ms / 1000).strftime("%H:%M:%S"),
            state=rnd.phase,  # "lost" when the EO lost the round
            deals=len(book.deals),
            paid=book.spent,
            allocation_saved=book.allocation is not None,
            buyer_utility=utility_of(participant_totals(rnd.totals, HUMAN)),
            seller_revenue=book.spent,  # the same booked deals as "paid": the day's two sides add up
            seller_utility=(round(sum(s.utility or 0.0 for s in sellers), 2)
                            if any(s.utility is not None for s in sellers) else None),
            undelivered=rnd.undelivered,
            note=rnd.note,
        )

    @staticmethod
    def _sellers(book: RoundBook) -> dict[str, SellerFigures]:
        """Per seller of the round: its revenue from the deals the EO booked (what the buyer paid,
        seen from the other side: a round the EO lost before its totals still sold what it sold),
        and its utility from the EO's totals when they came (an entry with a ``revenue`` is a seller's)."""
        totals = book.round.totals if isinstance(book.round.totals, Mapping) else {}
        revenue: dict[str, float] = {}
        for deal in book.deals:
            revenue[deal.seller] = round(revenue.get(deal.seller, 0.0) + deal.price, 2)
        utility = {str(name): utility_of(participant_totals(totals, name)) for name, entry in totals.items()
                   if isinstance(entry, Mapping) and "revenue" in entry}
        return {name: SellerFigures(revenue.get(name, 0.0), utility.get(name)) for name in {**revenue, **utility}}

    def summary(self, books: list[RoundBook] | None = None) -> DaySummary:
        """The day per round, per buyer and per seller (of ``books``, read once by the caller, or now)."""
        books = self.books() if books is None else books
        sellers_of = [self._sellers(b) for b in books]
        rows = [self._row(b, s) for b, s in zip(books, sellers_of, strict=True)]
        buyers: dict[str, BuyerDay] = {}
        sellers: dict[str, SellerDay] = {}
        for row, sellers_of_round in zip(rows, sellers_of, strict=True):
            buyer = buyers.setdefault(row.buyer or UNNAMED, BuyerDay(rounds=0, deals=0, paid=0.0, utility=0.0))
            buyer.rounds += 1
            buyer.deals += row.deals
            buyer.paid = round(buyer.paid + row.paid, 2)
            buyer.utility = round(buyer.utility + (row.buyer_utility or 0.0), 2)
            for name, figures in sellers_of_round.items():
                seller = sellers.setdefault(name, SellerDay(rounds=0, revenue=0.0, utility=0.0))
                seller.rounds += 1
                seller.revenue = round(seller.revenue + figures.revenue, 2)
                seller.utility = round(seller.utility + (figures.utility or 0.0), 2)
        return DaySummary(date=self.date, rounds=rows, buyers=buyers, sellers=sellers, next_buyer=self.ledger.next_buyer())

    def whole(self, books: list[RoundBook] | None = None) -> DayExport:
        """The day as exported: its summary and every round whole (of ``books``, or read now)."""
        books = self.books() if books is None else books
        return self.with_detail(self.summary(books), books)

    @staticmethod
    def with_detail(summary: DaySummary, books: list[RoundBook]) -> DayExport:
        return DayExport(date=summary.date, rounds=summary.rounds, buyers=summary.buyers, sellers=summary.sellers,
                         next_buyer=summary.next_buyer, detail=[DayRound.of(b) for b in books])

    def csv_text(self, summary: DaySummary | None = None) -> str:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in (summary or self.summary()).rounds:
            writer.writerow({key: "" if value is None else value for key, value in row.model_dump().items()})
        return out.getvalue()

    # -- exports ---------------------------------------------------------------------------------
    @property
    def json_file(self) -> Path:
        return self.folder / f"{self.date}.json"

    @property
    def csv_file(self) -> Path:
        return self.folder / f"{self.date}.csv"

    def export(self) -> tuple[DaySummary, bool]:
        """The day's summary, and whether it changed since the last export. Both files are
        written when it did (an offer or a prompt changes no row), each replaced whole (a reader
        never sees half a file); a disk problem is one rate-limited line (the ledger keeps the day)."""
        books = self.books()
        summary = self.summary(books)
        payload = self.with_detail(summary, books).model_dump()
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
