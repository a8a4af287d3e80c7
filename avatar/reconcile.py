"""The room's books held against the EO's own, while a round lasts (``GET /viewTotals/{round}``).

A deal reaches the room as the seller's Accept the EO forwards after booking it; a controller
that was down at that moment never hears of it. So while a round is open the Avatar Controller
asks the EO for its totals every ``[avatar] eo_books_check_s``:

* a deal the EO booked that the ledger lacks is added from the EO's totals (per seller: the
  goods and money beyond what reached us) and said on the console; one the ledger has and the
  EO does not is said (the EO's books are the truth; the room's are then wrong);
* a round the EO no longer knows while the ledger has it open is over: lost (when the EO had
  answered its totals before: an EO without ``/viewTotals`` decides nothing), or - after its
  post-round - ended without the totals reaching the room;
* an EO that does not answer after a restart that cut a confirmation has exited (the platform
  EO does when the service it waits on goes away): the round is lost, and the console says so.

The EO books an Accept a moment before it forwards it, so a difference counts only when two
checks in a row see the same one. A round the EO says it does not know, having once answered its
books (a fact kept in the ledger, so a restarted room still has it), is lost at that first check.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from avatar.books.records import TOTALS_GRACE_MS, RoundBook
from avatar.buyer.book import cut_fates
from avatar.controller import AvatarController
from humaine_platform.client import Blocked, Delivered, EOClient, Failed, HttpPoster, RetryPolicy, Timeouts, round_known
from humaine_platform.models import HUMAN, finite_number, whole_goods
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)

CHECK_TIMEOUTS: Final = Timeouts(connect_s=1.0, read_s=3.0, total_s=3.5)
CHECK_RETRIES: Final = RetryPolicy(max_attempts=1)
"""A check that fails is simply the next check's to repeat."""
FORGOTTEN: Final = ("round {round_id} lost by the EO: the EO no longer knows it (it restarted, or the round was ended "
                    "there); what was booked stays booked")
"""The alert, and the round's note, when the EO forgot a round it once knew."""
CHECKS_TO_ACT: Final = 2
"""The same difference (or the same unknown round) seen this many times in a row is acted on."""
UNREACHABLE_S: Final = 15.0
"""An EO that does not answer this long after a stop cut a confirmation has exited (the platform's
EO does on a cut answer). Sooner, it may be an EO that restarted with the room and is still
starting on a loaded machine: it then answers for itself whether it still knows the round."""
MONEY_EPSILON: Final = 0.005
TOTALS_WRAPPER: Final = "roundTotals"
"""The stand-in's ``documented`` mode wraps the totals (its ``/viewTotals`` says the phase too)."""


@dataclass(frozen=True)
class SellerBooks:
    """What one seller sold the buyer, in money and goods."""

    price: float
    goods: dict[str, int]

    def minus(self, other: SellerBooks) -> SellerBooks:
        goods = {g: self.goods.get(g, 0) - other.goods.get(g, 0) for g in {*self.goods, *other.goods}}
        return SellerBooks(round(self.price - other.price, 2), {g: n for g, n in goods.items() if n})

    @property
    def empty(self) -> bool:
        return abs(self.price) < MONEY_EPSILON and not self.goods


def eo_books(answer: Any) -> dict[str, SellerBooks] | None:
    """Per seller, what the EO's ``/viewTotals`` answer shows sold to the buyer (the platform EO
    keeps ``{name: {price, quantity}}`` for the speaker and the addressee of every booked Accept);
    None for an answer that is no totals."""
    if isinstance(answer, Mapping) and isinstance(answer.get(TOTALS_WRAPPER), Mapping):
        answer = answer[TOTALS_WRAPPER]
    if not isinstance(answer, Mapping):
        return None
    books = {}
    for name, entry in answer.items():
        if name == HUMAN or not isinstance(entry, Mapping):
            continue
        price = finite_number(entry.get("price", entry.get("revenue")))
        books[str(name)] = SellerBooks(round(price or 0.0, 2), whole_goods(entry.get("quantity")))
    return books


def ledger_books(book: RoundBook) -> dict[str, SellerBooks]:
    books: dict[str, SellerBooks] = {}
    for deal in book.deals:
        kept = books.get(deal.seller, SellerBooks(0.0, {}))
        goods = {g: kept.goods.get(g, 0) + deal.goods.get(g, 0) for g in {*kept.goods, *deal.goods}}
        books[deal.seller] = SellerBooks(round(kept.price + deal.price, 2), goods)
    return books


def differences(eo: Mapping[str, SellerBooks], ours: Mapping[str, SellerBooks]) -> dict[str, SellerBooks]:
    """Per seller, the EO's books minus the room's (only sellers where they differ)."""
    found = {}
    for seller in {*eo, *ours}:
        diff = eo.get(seller, SellerBooks(0.0, {})).minus(ours.get(seller, SellerBooks(0.0, {})))
        if not diff.empty:
            found[seller] = diff
    return found


def _describe(diff: SellerBooks) -> str:
    goods = ", ".join(f"{n:+d} {g}" for g, n in sorted(diff.goods.items())) or "no goods"
    return f"{goods} for {diff.price:+.2f}"


class Reconciler:
    """Checks the controller's current round against the EO at ``eo_url``."""

    def __init__(
        self, controller: AvatarController, eo_url: str, eo: EOClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.controller = controller
        self._clock = clock
        self._unreachable_since: float | None = None
        """When the EO stopped answering (None: it answers)."""
        self.eo_url = eo_url.rstrip("/")
        self.eo = eo or EOClient(self.eo_url, HttpPoster(timeouts=CHECK_TIMEOUTS, retry=CHECK_RETRIES))
        self._last: tuple[int, str] | None = None
        """The round key and what the last check saw, and how often in a row."""
        self._seen = 0
        self.checks = 0
        self._seen_known: set[int] = set()
        """Rounds whose knowing this process has written already (the ledger keeps the fact:
        :meth:`~avatar.books.ledger.RoomLedger.eo_knew`)."""
        self._said: set[tuple[int, str]] = set()
        """Differences said already (one the room cannot mend stays on the console once)."""
        self._fates: list[tuple[str, str]] = []
        """What the pages were last told became of the deals a stop cut (:func:`cut_fates`)."""

    def _again(self, round_key: int, what: str) -> bool:
        """Whether ``what`` was seen :data:`CHECKS_TO_ACT` times in a row for this round."""
        if self._last == (round_key, what):
            self._seen += 1
        else:
            self._last, self._seen = (round_key, what), 1
        return self._seen >= CHECKS_TO_ACT

    async def run(self) -> None:
        try:
            while True:
                with contextlib.suppress(Exception):  # a check that fails is tried again at the next one
                    await self.check()
                await asyncio.sleep(self.controller.settings.eo_books_check_s)
        finally:
            await self.eo.aclose()

    async def check(self) -> str:
        """One check of the current round; returns what it found (also in the controller's
        ``/health``, as ``books_check``)."""
        book = self.controller.ledger.current_book()
        found = await self._check(book)
        if book is not None and book.round.open:
            self.controller.books_checked(book.round.round_id, found)
            if found == "agree":
                self._agreed(book)
        return found

    def _agreed(self, book: RoundBook) -> None:
        """The EO's books agree with the room's: a deal a stop cut that they do not have was not
        booked. The pages are told when that settles a fate (nothing else would change the views)."""
        books = self.controller.books
        at = now_ms()
        books.eo_agreed(book.round.key, at)
        if not any(p.outcome == "cut" for p in book.prompts):
            return
        fates: list[tuple[str, str]] = [(f.id, f.fate) for f in cut_fates(book, at)]
        if fates != self._fates:
            self._fates = fates
            books.changed()

    async def _check(self, book: RoundBook | None) -> str:
        ledger = self.controller.ledger
        if book is None or not book.round.open:
            return "no open round"
        rnd = book.round
        self.checks += 1
        outcome = await self.eo.view_totals(rnd.round_id)
        known = round_known(outcome)
        if known is None and isinstance(outcome, Failed) and outcome.status_code is None:
            if self._unreachable_since is None:
                self._unreachable_since = self._clock()
            away_long = self._clock() - self._unreachable_since >= UNREACHABLE_S
            if self.controller.cut_prompts and self._again(rnd.key, "unreachable") and away_long:
                text = (f"round {rnd.round_id} lost by the EO: the Avatar Controller stopped while a confirmation waited, "
                        f"and the EO no longer answers ({outcome.reason})")
                ledger.set_phase(rnd.key, "lost", now_ms(), None, note=text)
                self._settled("round_lost", text)
            return "unreachable"
        self._unreachable_since = None
        if known is None:
            return f"no word ({outcome.reason if isinstance(outcome, Failed) else 'an odd answer'})"
        if known is False:
            return self._unknown(book)
        eo = eo_books(outcome.answer) if isinstance(outcome, Delivered | Blocked) else None
        if eo is None:
            return "no totals yet"
        if rnd.key not in self._seen_known:
            ledger.eo_saw(rnd.key, now_ms())  # in the ledger: a restarted room still knows the EO knew it
            self._seen_known.add(rnd.key)
        diffs = differences(eo, ledger_books(book))
        if not diffs:
            self._last, self._seen = None, 0
            return "agree"
        seen = "; ".join(f"{s} {_describe(d)}" for s, d in sorted(diffs.items()))
        if not self._again(rnd.key, seen):
            return "differ (once)"
        if (rnd.key, seen) in self._said:
            return "differ (said)"
        self._said.add((rnd.key, seen))
        added = []
        for seller, diff in sorted(diffs.items()):
            more = {g: n for g, n in diff.goods.items() if n > 0}
            if diff.price > MONEY_EPSILON or more:
                ledger.add_reconciled_deal(rnd.key, seller, more, max(diff.price, 0.0), now_ms())
                added.append(f"{seller}: {_describe(SellerBooks(max(diff.price, 0.0), more))}")
        text = f"round {rnd.round_id}: the EO's books differ from the room's ({seen}; the EO's minus the room's)"
        if added:
            text += "; what only the EO had is added to the room's books: " + "; ".join(added)
        self._settled("books_differ", text)
        return "differ"

    def _unknown(self, book: RoundBook) -> str:
        """The EO does not know the round the ledger has open. Only an EO that answered this
        round's books before (the ledger says so, whatever restarted since) can have forgotten it:
        one without ``/viewTotals``, or one that has not set the round up yet, answers an error
        too. Then the first such answer decides: the EO's own word that it has no such round."""
        rnd = book.round
        ledger = self.controller.ledger
        late = now_ms() > rnd.totals_due_ms() + TOTALS_GRACE_MS  # over while the room was away, not lost
        if not late and not ledger.eo_knew(rnd.key):
            return "unknown (never known)"  # no proof the EO ever had it: nothing is decided on it
        if late:
            text = f"round {rnd.round_id} is over at the EO, but its totals never reached the room"
            ledger.set_phase(rnd.key, "ended", now_ms(), None, note=text)
        else:
            text = FORGOTTEN.format(round_id=rnd.round_id)
            ledger.set_phase(rnd.key, "lost", now_ms(), None, note=text)
        self._settled("round_lost", text)
        return "unknown"

    def _settled(self, kind: str, text: str) -> None:
        self._last, self._seen = None, 0
        self.controller.alert(kind, text)
        self.controller.refresh_round()
