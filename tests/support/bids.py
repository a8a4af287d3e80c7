"""Bids as the platform's typed models, for tests that write the round's books."""

from __future__ import annotations

from collections.abc import Mapping

from humaine_platform.models import Bid, Price

CURRENCY = "USD"


def _bid(kind: str, goods: Mapping[str, int], price: float | None) -> Bid:
    return Bid(type=kind, quantity=dict(goods), price=None if price is None else Price(unit=CURRENCY, value=price))


def accept(goods: Mapping[str, int], price: float | None) -> Bid:
    """A seller's Accept of ``goods`` for ``price`` (a confirmation, or the deal the EO booked)."""
    return _bid("Accept", goods, price)


def sell_offer(goods: Mapping[str, int], price: float) -> Bid:
    """A seller's offer of ``goods`` for ``price``."""
    return _bid("SellOffer", goods, price)
