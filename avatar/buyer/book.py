"""The buyer's book: everything the buyer page shows, kept per round and pushed live.

The EO tells the human side about a round in pieces - the budget in the round metadata, the
buyer's utility in ``/setUtility``, every seller's offer in the permitted messages, every deal in
``/confirmAccept``, the scores in the round totals. The book puts them together: the budget left,
what was bought, the best allocation of it and its value, what one more cake or pancake still
needs. Each change is one ``buyer`` event on the display hub, whose kept state gives a page
opened mid-round (or reconnecting) the whole picture at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from avatar.display import DisplayHub
from orchestrator_client import buyer_utility as bu
from orchestrator_client.models import HUMAN, OFFER_BID_TYPES
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

STATE_KEY = "buyer"
"""Where the display hub keeps the book's view, and the type of its events."""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _price(bid: Mapping[str, Any]) -> float | None:
    price = bid.get("price")
    return _number(price.get("value")) if isinstance(price, Mapping) else None


def _goods(bid: Mapping[str, Any]) -> dict[str, int]:
    """The bid's goods as whole quantities (what the utility generator counts); anything else
    in a quantity is left out."""
    quantity = bid.get("quantity")
    if not isinstance(quantity, Mapping):
        return {}
    goods = {}
    for name, amount in quantity.items():
        number = _number(amount)
        if number is not None and number > 0:
            goods[str(name)] = int(number)
    return goods


def _values(utility: bu.BuyerUtility) -> dict[str, Any]:
    """Per product its value per unit and its supplements' ranges (the page's allocation editor
    offers these supplements)."""
    return {
        name: {
            "unit_value": product.unit_value,
            "supplements": {
                good: {"unit": t.unit, "min_quantity": t.min_quantity, "max_quantity": t.max_quantity,
                       "min_value": t.min_value, "max_value": t.max_value}
                for good, t in product.supplements.items()
            },
        }
        for name, product in utility.products.items()
    }


class BuyerBook:
    """The buyer page's state for the current round; safe to call from any thread."""

    def __init__(self, hub: DisplayHub) -> None:
        self._hub = hub
        self._lock = threading.Lock()
        self._listeners: list[Callable[[dict[str, Any]], None]] = []
        self._reset(None)

    def listen(self, listener: Callable[[dict[str, Any]], None]) -> None:
        """Call ``listener`` with the view after every change (the operator's day book)."""
        self._listeners.append(listener)

    def _reset(self, round_id: int | str | None) -> None:
        self.round_id = round_id
        self.budget: float | None = None
        self.utility_raw: dict[str, Any] | None = None
        self.utility: bu.BuyerUtility | None = None
        self.utility_problem: str | None = None
        self.offers: dict[str, dict[str, Any]] = {}
        self.deals: list[dict[str, Any]] = []
        self.saved: dict[str, Any] | None = None
        self.human_totals: dict[str, Any] | None = None
        self.round_totals: dict[str, Any] | None = None

    # -- what the EO tells (any thread) --------------------------------------------------------
    def round(self, round_id: int | str) -> None:
        """The round the EO runs now: a new one starts an empty book."""
        with self._lock:
            if round_id == self.round_id:
                return
            budget = self.budget if self.round_id is None else None
            self._reset(round_id)
            self.budget = budget
        self._emit()

    def set_budget(self, round_id: int | str, budget: float) -> None:
        self.round(round_id)
        with self._lock:
            self.budget = budget
        self._emit()

    def set_utility(self, round_id: int | str | None, utility: Mapping[str, Any]) -> None:
        """The buyer's utility function (``/setUtility``). One the book cannot read is kept raw
        and said on the page, never an error for the EO."""
        if round_id:
            self.round(round_id)
        with self._lock:
            self.utility_raw = dict(utility)
            try:
                self.utility, self.utility_problem = bu.parse_utility(utility), None
            except ValueError as exc:
                self.utility, self.utility_problem = None, str(exc)
                _notes.warning(("utility", str(exc)), "the buyer's utility cannot be shown: %s", exc)
        self._emit()

    def offer(self, seller: str, bid: Mapping[str, Any] | None, text: str) -> None:
        """A permitted message of a seller: its bid, when it offers something, is that seller's
        current offer."""
        if not bid or bid.get("type") not in OFFER_BID_TYPES:
            return
        goods, price = _goods(bid), _price(bid)
        if not goods or price is None:
            return
        with self._lock:
            self.offers[seller] = {"seller": seller, "goods": goods, "price": price, "text": text, "at": now_ms()}
        self._emit()

    def booked(self, seller: str, bid: Mapping[str, Any]) -> None:
        """A deal the buyer (or the configured answer) confirmed: the EO books it."""
        goods, price = _goods(bid), _price(bid)
        with self._lock:
            self.deals.append({"seller": seller, "goods": goods, "price": price or 0.0, "at": now_ms()})
            self.offers.pop(seller, None)
        self._emit()

    def allocation_saved(self, products: Mapping[str, Any], value: float | None) -> None:
        with self._lock:
            self.saved = {"products": dict(products), "value": value, "at": now_ms()}
        self._emit()

    def totals(self, round_id: int | str, totals: Mapping[str, Any]) -> None:
        """The EO's round totals: the human's utility as the EO scored it."""
        self.round(round_id)
        human = totals.get(HUMAN)
        with self._lock:
            self.human_totals = dict(human) if isinstance(human, Mapping) else None
            self.round_totals = dict(totals)
        self._emit()

    # -- what the page reads --------------------------------------------------------------------
    def bought(self) -> dict[str, int]:
        """Every good of the booked deals, summed."""
        with self._lock:
            return self._bought()

    def _bought(self) -> dict[str, int]:
        have: dict[str, int] = {}
        for deal in self.deals:
            for good, amount in deal["goods"].items():
                have[good] = have.get(good, 0) + amount
        return have

    def _spent(self) -> float:
        return round(sum(deal["price"] for deal in self.deals), 2)

    def left(self) -> float | None:
        with self._lock:
            return None if self.budget is None else round(self.budget - self._spent(), 2)

    def deal_view(self, bid: Mapping[str, Any]) -> dict[str, Any]:
        """What a confirmation shows besides the seller's words: goods, price, budget after."""
        price = _price(bid)
        left = self.left()
        after = None if left is None or price is None else round(left - price, 2)
        return {"goods": _goods(bid), "price": price, "budget_after": after}

    def best(self) -> bu.Allocation | None:
        """The best allocation of what was bought, or None without a readable utility."""
        with self._lock:
            utility, have = self.utility, self._bought()
        return None if utility is None else bu.best_allocation(have, utility)

    def view(self) -> dict[str, Any]:
        with self._lock:
            utility, have, spent = self.utility, self._bought(), self._spent()
            view: dict[str, Any] = {
                "round_id": self.round_id,
                "budget": self.budget,
                "spent": spent,
                "left": None if self.budget is None else round(self.budget - spent, 2),
                "utility": None,
                "utility_problem": self.utility_problem if self.utility_raw is not None else None,
                "offers": sorted(self.offers.values(), key=lambda o: o["seller"]),
                "deals": list(self.deals),
                "have": have,
                "plan": None,
                "saved": self.saved,
                "human_totals": self.human_totals,
                "round_totals": self.round_totals,
                "recipe": bu.RECIPE,
            }
        if utility is not None:
            view["utility"] = {"values": _values(utility), "lines": bu.describe(utility), "currency": utility.currency_unit}
            best = bu.best_allocation(have, utility)
            view["plan"] = {
                "products": best.products_body(),
                "value": bu.utility_value(utility, best),
                "needed_for_one_more": bu.needed_for_one_more(have, best),
            }
        return view

    def _emit(self) -> None:
        try:
            view = self.view()
        except Exception as exc:  # a utility the search cannot take must not cost the EO an answer
            _notes.warning(("view", type(exc).__name__), "the buyer page could not be updated: %s: %s", type(exc).__name__, exc)
            return
        self._hub.emit({"type": STATE_KEY, **view}, lambda s: s.__setitem__(STATE_KEY, view))
        for listener in self._listeners:
            try:
                listener(view)
            except Exception as exc:  # the day book must never cost the EO an answer either
                _notes.warning(("listener", type(exc).__name__), "a listener of the buyer's book failed: %s: %s",
                               type(exc).__name__, exc)
