"""What a demo seller says: a counter-offer priced from its unit costs, or an acceptance.

Deliberately simple - the sellers exist to make the room's loop alive, not to win:

* asking price = cost of the goods x (1 + ``markup``); it never goes below cost x
  (1 + ``min_margin``) (the *floor*);
* a buyer's price at or above the floor is accepted (bid ``Accept``);
* a lower price gets a counter-offer halfway between the last ask and the buyer's price (or
  the floor, if the buyer's price is below it): repeated lowballs converge on the floor;
* "deal" after one of our offers accepts that offer; "I accept your offer of $1.35" accepts
  the offer we made at that price (and only one of ours); a question is never an acceptance;
* "can you do better?" (or "too expensive") lowers our last offer, down to the floor;
* following another seller (unaddressed), we speak only to undercut its price (never a deal it
  has just closed), or to take up an acceptance addressed to nobody when the latest offer in the
  room was ours (or it names our price).

Gestures (the project's ``gesture`` extension) go on some replies: the first reply of a round
waves, a deal nods and smiles, a concession thinks, an undercut points, a refusal shrugs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from avatar.gestures import VOCABULARY
from standins.demo_agents.parsing import ParsedOffer
from standins.eo.round_setup import CURRENCY, UNITS

DEFAULT_UNIT_COST: Final = 0.5
"""For a good the round's utility does not price."""
UNDERCUT: Final = 0.9
"""A follower offers this fraction of the other seller's price (if still above its floor)."""
CONCESSION: Final = 0.5
"""A counter-offer moves this share of the way from our last ask to the buyer's price (or floor)."""

GESTURE_GREETING: Final = "wave"
GESTURE_DEAL: Final = ["nod", "smile"]
GESTURE_CONCESSION: Final = "think"
GESTURE_UNDERCUT: Final = "point"
GESTURE_REFUSAL: Final = "shrug"
assert all(g in VOCABULARY for g in (GESTURE_GREETING, *GESTURE_DEAL, GESTURE_CONCESSION, GESTURE_UNDERCUT, GESTURE_REFUSAL))


@dataclass(frozen=True)
class Reply:
    text: str
    bid_type: str
    quantities: dict[str, int]
    price: float | None
    gesture: str | list[str] | None = None

    def bid(self, currency: str = CURRENCY) -> dict[str, Any]:
        bid: dict[str, Any] = {"type": self.bid_type, "quantity": dict(self.quantities)}
        # Every bid carries a price: the platform EO exits on a bid without one.
        bid["price"] = {"unit": currency, "value": self.price if self.price is not None else 0.0}
        return bid


def describe(quantities: dict[str, int]) -> str:
    """``2 eggs and 3 cups of flour``."""
    parts = []
    for good, amount in quantities.items():
        unit = UNITS.get(good, "each")
        plural = amount != 1
        if unit == "each":
            name = good + ("s" if plural and not good.endswith("s") else "")
            parts.append(f"{amount} {name}")
        else:
            unit_name = unit + ("es" if plural and unit.endswith("ch") else "s" if plural else "")
            parts.append(f"{amount} {unit_name} of {good}")
    if len(parts) > 1:
        return ", ".join(parts[:-1]) + " and " + parts[-1]
    return parts[0] if parts else "nothing"


def money(value: float) -> float:
    return round(value + 1e-9, 2)


@dataclass
class Seller:
    """One seller's prices and its memory of the current negotiation."""

    name: str
    markup: float = 0.6
    min_margin: float = 0.15
    costs: dict[str, float] = field(default_factory=dict)
    last_offer: tuple[dict[str, int], float] | None = None
    offers: list[tuple[dict[str, int], float]] = field(default_factory=list)
    """Every offer made this round, oldest first (an acceptance may name an earlier one)."""
    greeted: bool = False

    def reset(self) -> None:
        self.last_offer = None
        self.offers = []
        self.greeted = False

    def offer_at(self, price: float) -> tuple[dict[str, int], float] | None:
        """Our latest offer at ``price`` (to the cent)."""
        for quantities, offered in reversed(self.offers):
            if abs(offered - price) < 0.005:
                return quantities, offered
        return None

    def _deal(self, quantities: dict[str, int], price: float) -> Reply:
        self.last_offer = None
        return Reply(f"You've got it! {describe(quantities)} for {price} {CURRENCY}.", "Accept", quantities, price, GESTURE_DEAL)

    def take_up(self, offer: ParsedOffer) -> Reply | None:
        """The answer to an acceptance without goods: the offer of ours it names (by price), or
        our last one; ``None`` when there is none to accept."""
        if offer.price is not None:
            named = self.offer_at(offer.price)
            if named is not None:
                return self._deal(*named)
            latest = self.last_offer or (self.offers[-1] if self.offers else None)
            if latest is None:
                return None
            quantities, price = latest
            return Reply(f"I did not offer {offer.price} {CURRENCY}; I offered {describe(quantities)} for {price} {CURRENCY}.",
                         "Information", quantities, price, GESTURE_REFUSAL)
        return self._deal(*self.last_offer) if self.last_offer is not None else None

    def cost(self, quantities: dict[str, int]) -> float:
        return sum(self.costs.get(good, DEFAULT_UNIT_COST) * amount for good, amount in quantities.items())

    def ask(self, quantities: dict[str, int]) -> float:
        return money(self.cost(quantities) * (1 + self.markup))

    def floor(self, quantities: dict[str, int]) -> float:
        return money(self.cost(quantities) * (1 + self.min_margin))

    def _greeting(self) -> str | None:
        if self.greeted:
            return None
        self.greeted = True
        return GESTURE_GREETING

    def _offer(self, quantities: dict[str, int], price: float, text: str, gesture: str | list[str] | None) -> Reply:
        self.last_offer = (dict(quantities), price)
        self.offers.append((dict(quantities), price))
        return Reply(text, "SellOffer", dict(quantities), price, gesture)

    def respond(self, offer: ParsedOffer) -> Reply | None:
        """The answer to a buyer's message addressed to us (``None``: nothing to say)."""
        greeting = self._greeting()
        if offer.accept and not offer.has_goods:
            taken = self.take_up(offer)
            if taken is not None:
                return taken
        if not offer.has_goods:
            if (offer.reject or offer.better) and self.last_offer is not None:
                quantities, price = self.last_offer
                better = max(self.floor(quantities), money(price * (1 - CONCESSION / 5)))
                if better < price:
                    text = f"All right, {describe(quantities)} for {better} {CURRENCY}?"
                    return self._offer(quantities, better, text, GESTURE_CONCESSION)
                return Reply(f"Sorry, {price} {CURRENCY} is my best price.", "Information", quantities, price, GESTURE_REFUSAL)
            if offer.question and self.last_offer is not None:
                quantities, price = self.last_offer
                return Reply(f"My offer stands: {describe(quantities)} for {price} {CURRENCY}. Say deal to take it.",
                             "Information", quantities, price, greeting)
            return Reply(
                "I sell eggs, flour, sugar, milk, chocolate, vanilla and blueberries. What would you like?",
                "Information", {}, 0.0, greeting,
            )
        quantities = offer.quantities
        ask = self.ask(quantities)
        floor = self.floor(quantities)
        if offer.price is not None and offer.price >= floor and not offer.question:
            return self._deal(quantities, money(offer.price))
        if offer.price is not None and offer.price >= floor:
            # "would you take 3 dollars for 2 eggs?": an offer we would take; say so, book nothing yet
            price = money(offer.price)
            return self._offer(quantities, price, f"Yes, {describe(quantities)} for {price} {CURRENCY} works for me.", GESTURE_DEAL)
        if offer.price is None and offer.better and self.last_offer is not None and self.last_offer[0] == quantities:
            return self.respond(ParsedOffer(better=True))
        if offer.price is None:
            return self._offer(quantities, ask, f"How about if I sell you {describe(quantities)} for {ask} {CURRENCY}.", greeting)
        previous = self.last_offer[1] if self.last_offer and self.last_offer[0] == quantities else ask
        counter = max(floor, money(previous - (previous - max(offer.price, floor)) * CONCESSION))
        return self._offer(
            quantities, counter,
            f"{offer.price} {CURRENCY} is too low. I can do {describe(quantities)} for {counter} {CURRENCY}.",
            greeting or GESTURE_CONCESSION,
        )

    def follow(self, request: ParsedOffer, rival_price: float | None, *, ours_latest: bool = True,
               rival_closed: bool = False) -> Reply | None:
        """What to say after the buyer spoke to the other seller (or to nobody, and the other
        seller may already have answered): undercut or stay quiet. ``ours_latest``: the room's
        latest offer is ours (an acceptance addressed to nobody takes up the latest offer, or
        the one it names by price); ``rival_closed``: the other seller has just closed a deal on
        this request, and undercutting a deal already made is noise."""
        if rival_closed:
            return None
        if not request.has_goods:
            if not request.accept or rival_price is not None:
                return None
            # an acceptance addressed to nobody: taken up by whoever made the named (or latest) offer
            named = request.price is not None and self.offer_at(request.price) is not None
            return self.take_up(request) if named or ours_latest else None
        quantities = request.quantities
        floor = self.floor(quantities)
        if rival_price is None:
            reply = self.respond(request)
            return reply if reply is not None and reply.bid_type != "Information" else None
        target = money(rival_price * UNDERCUT)
        if target < floor:
            return None
        price = max(floor, min(self.ask(quantities), target))
        return self._offer(quantities, price, f"I can beat that: {describe(quantities)} for {price} {CURRENCY}.", GESTURE_UNDERCUT)
