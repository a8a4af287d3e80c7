"""Every screen's account of the round, derived from the room's ledger after each change.

The buyer page (budget, values, offers, what was bought, the confirmation asked now), the
display (the deals and the EO's totals, the question asked now) and the operator's day book are
views of one store, the ledger (:mod:`workers.runtime.ledger`): after each change the Avatar
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

import logging
import threading
from collections.abc import Callable
from typing import Any

from avatar.buyer.book import buyer_view
from avatar.confirm_queue import prompt_views
from avatar.display import DisplayHub
from avatar.page_events import BuyerEvent, ConfirmsEvent, DealsEvent, DisplayState, PromptView
from avatar.settings import AvatarSettings
from workers.runtime.ledger import RoomLedger, RoundBook
from workers.runtime.logs import RateLimitedLog

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

Listener = Callable[[RoundBook | None], None]


def deal_views(book: RoundBook | None) -> list[dict[str, Any]]:
    """The booked deals as the display lists them."""
    if book is None:
        return []
    return [{"seller": d.seller, "goods": d.goods, "price": d.price, "text": d.text, "source": d.source, "at": d.booked_ms}
            for d in book.deals]


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
        self.agreed: tuple[int, int] | None = None
        """The round (its ledger key) whose books the EO's last agreed with, and when (ms): a deal
        a restart cut that the EO's books do not have after that was not booked
        (:func:`~avatar.buyer.book.cut_fates`). Set by the books' check."""
        self._refreshing = threading.Lock()
        """Refreshes come from several threads (HTTP, MQTT): one at a time, so a view read
        before a change can never be sent after the view read after it."""

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
            self.refresh()
            return
        self._dirty.set()

    def _run(self) -> None:
        while True:
            self._dirty.wait()
            if self._stopping.is_set():
                return
            self._dirty.clear()
            self.refresh()

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
        agreed = self.agreed
        buyer = BuyerEvent(**buyer_view(book, agreed[1] if agreed is not None and book is not None
                                         and agreed[0] == book.round.key else None))
        deals = DealsEvent(round_id=buyer.round_id, deals=deal_views(book), totals=book.round.totals if book is not None else None)
        confirms = ConfirmsEvent(queue=self.prompts(book))
        kept_buyer = buyer.payload()

        def keep_buyer(state: DisplayState) -> None:
            state.buyer = kept_buyer

        def keep_deals(state: DisplayState) -> None:
            state.deals, state.totals = deals.deals, deals.totals

        def keep_confirms(state: DisplayState) -> None:
            state.confirms = confirms.queue

        self.hub.emit(buyer, keep_buyer)
        self.hub.emit(deals, keep_deals)
        self.hub.emit(confirms, keep_confirms)
        for listener in self._listeners:
            try:
                listener(book)
            except Exception as exc:  # the day book must never cost the EO an answer either
                _notes.warning(("listener", type(exc).__name__), "a view of the round's books failed: %s: %s",
                               type(exc).__name__, exc)
        return book
