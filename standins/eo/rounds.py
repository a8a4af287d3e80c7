"""One round of the stand-in EO: who takes part, its phase, its message queue and its deals.

Kept free of HTTP so the bookkeeping (what is sold, to whom, what it cost the seller) can be
read on its own; the stand-in's collaborators (:mod:`standins.eo.engine`) drive it. This is the
stand-in's own memory: nothing here reads the room's books.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

from humaine_platform.eo_rules import Queued, Totals
from humaine_platform.models import Bid, Durations, InitializeRound, NegotiatorInfo, RoundId
from humaine_platform.rules import TurnQueue
from standins.eo.round_setup import unit_costs

Phase = Literal["initialized", "warmup", "round", "post", "ended"]
"""``warmup``/``round``/``post``/``ended`` are the room's own phase names (``RoundState``)."""
MONEY_DIGITS = 2


class SetupError(ValueError):
    """The ``/initializeRound`` body cannot make a round; the message says what is missing."""


@dataclass(frozen=True)
class Service:
    """A participant the stand-in calls: a seller agent or the human-side service."""

    name: str
    url: str
    utility: dict[str, Any]
    """Its ``utilityFunction`` (``{"currencyUnit", "utility"}``), possibly empty."""
    token: str = field(default="", repr=False)
    """Bearer token sent with every call to it (the human-side service's, when it has one)."""

    @property
    def headers(self) -> dict[str, str] | None:
        return {"Authorization": f"Bearer {self.token}"} if self.token else None

    @classmethod
    def from_info(cls, info: NegotiatorInfo | dict[str, Any], what: str) -> Service:
        data = info if isinstance(info, dict) else info.model_dump(mode="json")
        name, host, port = data.get("name"), data.get("host"), data.get("port")
        if not name or not host or not isinstance(port, int):
            raise SetupError(f"{what} needs name, host and port (got {sorted(data)})")
        protocol = data.get("protocol") or "http"
        utility = data.get("utilityFunction") or {}
        if not isinstance(utility, dict):
            raise SetupError(f"{what} {name}: utilityFunction must be an object")
        return cls(str(name), f"{protocol}://{host}:{port}", utility)

    def set_utility_body(self, round_id: RoundId, currency: str) -> dict[str, Any]:
        """``/setUtility`` as the current EO sends it: ``currencyUnit``, ``utility``, ``name``,
        ``roundId``. A ``utilityFunction`` without a ``utility`` key is the utility itself."""
        inner = self.utility.get("utility", self.utility)
        return {
            "currencyUnit": self.utility.get("currencyUnit", currency),
            "utility": inner,
            "name": self.name,
            "roundId": round_id,
        }


@dataclass
class Ledger:
    """What was sold in a round (booked only after the human side confirmed)."""

    currency: str
    human_quantity: dict[str, float] = field(default_factory=dict)
    human_cost: float = 0.0
    sold: dict[str, dict[str, float]] = field(default_factory=dict)
    revenue: dict[str, float] = field(default_factory=dict)

    def book(self, seller: str, bid: Bid) -> None:
        price = float(bid.price.value) if bid.price is not None else 0.0
        self.human_cost += price
        self.revenue[seller] = self.revenue.get(seller, 0.0) + price
        bought = self.sold.setdefault(seller, {})
        for good, amount in bid.quantity.items():
            self.human_quantity[good] = self.human_quantity.get(good, 0) + amount
            bought[good] = bought.get(good, 0) + amount

    def totals(self, sellers: dict[str, Service]) -> dict[str, Any]:
        """``roundTotals`` as in ``/receiveRoundTotals``. A seller's utility is its revenue
        minus the unit cost of what it sold; the buyer's cake/pancake utility is the utility
        generator's business and is not computed here."""
        totals: dict[str, Any] = {
            "Human": {"quantity": dict(self.human_quantity), "cost": round(self.human_cost, MONEY_DIGITS)}
        }
        for name, seller in sellers.items():
            costs = unit_costs(seller.utility)
            sold = self.sold.get(name, {})
            revenue = self.revenue.get(name, 0.0)
            spent = sum(costs.get(good, 0.0) * amount for good, amount in sold.items())
            totals[name] = {
                "quantity": dict(sold),
                "revenue": round(revenue, MONEY_DIGITS),
                "utility": {"currencyUnit": self.currency, "value": round(revenue - spent, MONEY_DIGITS)},
            }
        return totals


@dataclass
class Round:
    round_id: RoundId
    setup: InitializeRound
    agents: dict[str, Service]
    human: Service
    durations: Durations
    budget: dict[str, Any]
    """``humanBudget`` as sent in ``/sendRoundMetadata`` (``{"currentUnit", "value"}``)."""
    ledger: Ledger
    phase: Phase = "initialized"
    history: list[dict[str, Any]] = field(default_factory=list)
    """Every proposed message with its verdict and what became of it (``/viewQueue``)."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """Round life-cycle calls that failed (a service down), for ``/viewQueue``."""
    task: asyncio.Task[None] | None = None
    queue: TurnQueue | None = None
    """``documented`` mode: every proposal with the documented rules' verdict."""
    eo_queue: list[Queued] = field(default_factory=list)
    """``real_eo`` mode: the permitted messages, as the platform EO queues them."""
    eo_totals: Totals | None = None
    """``real_eo`` mode: the platform EO's running totals and the human's remaining budget."""
    skip: asyncio.Event = field(default_factory=asyncio.Event)
    """Set to end the current phase now (the operator's End round)."""

    @property
    def key(self) -> str:
        return round_key(self.round_id)

    @property
    def running(self) -> bool:
        """Started and not ended: in its warm-up, its negotiation or its post-round phase."""
        return self.phase in ("warmup", "round", "post")

    @property
    def relaying(self) -> bool:
        return self.phase == "round"


def round_key(round_id: object) -> str:
    """Rounds are looked up by the text of their id: ``1`` (a JSON number in a body) and
    ``"1"`` (a URL path segment) are the same round."""
    return str(round_id)
