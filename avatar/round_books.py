"""Every screen's account of the round, derived from the room's ledger after each change.

The buyer page (budget, values, offers, what was bought, the confirmation asked now), the
display (the deals and the EO's totals, the question asked now) and the operator's day book are
views of one store, the ledger (:mod:`avatar.books.ledger`): after each change the Avatar
Controller calls :meth:`RoundBooks.refresh`, which reads the current round's book once and hands
each view to the display hub (whose kept state gives a page opened or reconnecting the same
picture) and to the listeners (the day book). No view keeps a tally of its own, so what a page
shows is what the EO booked, after a slow answer, two offers at once or a restart alike.

The EO waits for our answer (it has no timeout, and the sellers' turn window runs meanwhile),
while deriving the views takes milliseconds: the EO's endpoints write the ledger - the record -
and answer, and :meth:`RoundBooks.changed` has the views derived on a thread of their own right
after, a burst of changes once.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

from avatar.books.ledger import RoomLedger
from avatar.books.records import RoundBook
from avatar.buyer.book import buyer_event
from avatar.confirm_queue import prompt_views
from avatar.display import DisplayHub
from avatar.page_events import BuyerView, ConfirmsEvent, DealsEvent, DealView, DisplayState, PromptView
from avatar.settings import AvatarSettings
from workers.runtime.logs import RateLimitedLog

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

Listener = Callable[[RoundBook | None], None]


def deal_views(book: RoundBook | None) -> list[DealView]:
    """The booked deals as the display lists them."""
    if book is None:
        return []
    return [DealView(seller=d.seller, goods=d.goods, price=d.price, text=d.text, source=d.source, at=d.booked_ms)
            for d in book.deals]


def _keep_buyer(view: BuyerView, state: DisplayState) -> None:
    """The buyer page's view kept, for a page opened or reconnecting."""
    state.buyer = view


def _keep_deals(deals: DealsEvent, state: DisplayState) -> None:
    state.deals, state.totals = deals.deals, deals.totals


def _keep_confirms(confirms: ConfirmsEvent, state: DisplayState) -> None:
    state.confirms = confirms.queue


class RoundBooks:
    """The ledger of one room and the views derived from it."""

    def __init__(self, ledger: RoomLedger, hub: DisplayHub, settings: AvatarSettings) -> None:
        self.ledger = ledger
        self.hub = hub
        self.settings = settings
        self._listeners: list[Listener] = []
        self._dirty = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._agreed: tuple[int, int] | None = None
        """The round (its ledger key) whose books the EO's last agreed with, and when (ms): a deal
        a restart cut that the EO's books do not have after that was not booked
        (:func:`~avatar.buyer.book.cut_fates`). Told by the books' check (:meth:`eo_agreed`)."""
        self._refreshing = threading.Lock()
        """Refreshes come from several threads (HTTP, MQTT): one at a time, so a view read
        before a change can never be sent after the view read after it."""

    def eo_agreed(self, key: int, at_ms: int) -> None:
        """The EO's books of round ``key`` agreed with the room's at ``at_ms``."""
        self._agreed = (key, at_ms)

    def listen(self, listener: Listener) -> None:
        """Call ``listener`` with the current round's book after every change (the day book)."""
        self._listeners.append(listener)

    # -- the views' own thread ------------------------------------------------------------------
    def start(self) -> None:
        """Derive the views after each change on a thread of their own (:meth:`changed`)."""
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="round-books", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._dirty.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def changed(self) -> None:
        """The ledger changed: the views follow at once, off the caller's thread (the caller is
        answering the EO). Without the thread (not started), here and now."""
        if self._thread is None or not self._thread.is_alive():
            self._refresh_safely()
            return
        self._dirty.set()

    def _run(self) -> None:
        while True:
            self._dirty.wait()
            if self._stopping.is_set():
                return
            self._dirty.clear()
            self._refresh_safely()

    def _refresh_safely(self) -> None:
        """:meth:`refresh`, whatever fails in it said in one line: a view that cannot be derived
        must neither end the views' thread nor reach the caller (who is answering the EO)."""
        try:
            self.refresh()
        except Exception as exc:
            _notes.warning(("refresh", type(exc).__name__), "the round's views cannot be derived: %s: %s",
                           type(exc).__name__, exc)

    def current(self) -> RoundBook | None:
        return self.ledger.current_book()

    def prompts(self, book: RoundBook | None) -> list[PromptView]:
        s = self.settings
        return prompt_views(book, s.confirm_accept, s.confirm_timeout_s, s.confirm_timeout_answer)

    def refresh(self) -> RoundBook | None:
        """Derive every view from the ledger and send each where it is shown; returns the book."""
        with self._refreshing:
            return self._refresh()

    def _refresh(self) -> RoundBook | None:
        try:
            book = self.current()
        except Exception as exc:  # a ledger that cannot be read must never cost the EO an answer
            _notes.warning(("read", type(exc).__name__), "the round's books cannot be read: %s: %s", type(exc).__name__, exc)
            return None
        agreed = self._agreed
        buyer = buyer_event(book, agreed[1] if agreed is not None and book is not None and agreed[0] == book.round.key else None)
        deals = DealsEvent(round_id=buyer.round_id, deals=deal_views(book), totals=book.round.totals if book is not None else None)
        confirms = ConfirmsEvent(queue=self.prompts(book))
        self.hub.emit(buyer, functools.partial(_keep_buyer, buyer.view()))
        self.hub.emit(deals, functools.partial(_keep_deals, deals))
        self.hub.emit(confirms, functools.partial(_keep_confirms, confirms))
        for listener in self._listeners:
            try:
                listener(book)
            except Exception as exc:  # the day book must never cost the EO an answer either
                _notes.warning(("listener", type(exc).__name__), "a view of the round's books failed: %s: %s",
                               type(exc).__name__, exc)
        return book
