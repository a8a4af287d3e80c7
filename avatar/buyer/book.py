"""The buyer's book: what the buyer page shows, derived from the round's ledger.

The EO tells the human side about a round in pieces (the budget in the round metadata, the
buyer's utility in ``/setUtility``, every seller's offer in the permitted messages, every deal it
booked as the seller's Accept it forwards, the scores in the round totals); the room's ledger
(:mod:`avatar.books.ledger`) keeps them. This module reads one round's book and says what the
buyer sees: the budget left after what the EO booked, what was bought, the best allocation of it
and its value, what one more cake or pancake still needs, the answers that wait for the EO.
It keeps nothing of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from avatar.books.records import RoundBook, participant_totals, utility_of
from avatar.page_events import (
    BoughtView,
    BuyerEvent,
    CutFate,
    CutView,
    OfferView,
    PlanView,
    ProductView,
    SavedView,
    SupplementView,
    UtilityView,
    WaitingView,
)
from formats import written
from humaine_platform import buyer_utility as bu
from humaine_platform.models import HUMAN, ParticipantTotals, finite_number
from workers.runtime.logs import RateLimitedLog

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)


def _values(utility: bu.BuyerUtility) -> dict[str, ProductView]:
    """Per product its value per unit and its supplements' ranges (the page's allocation editor
    offers these supplements)."""
    return {
        name: ProductView(unit_value=product.unit_value, supplements={
            good: SupplementView(unit=t.unit, min_quantity=t.min_quantity, max_quantity=t.max_quantity,
                                 min_value=t.min_value, max_value=t.max_value)
            for good, t in product.supplements.items()
        })
        for name, product in utility.products.items()
    }


def parsed_utility(book: RoundBook | None) -> tuple[bu.BuyerUtility | None, str | None]:
    """The round's buyer utility, or why it cannot be read (said once, never raised)."""
    raw = book.round.utility if book is not None else None
    if raw is None:
        return None, None
    try:
        return bu.parse_utility(raw), None
    except ValueError as exc:
        _notes.warning(("utility", str(exc)), "the buyer's utility cannot be shown: %s", exc)
        return None, str(exc)


def human_entry(totals: Mapping[str, object] | None) -> dict[str, object] | None:
    """The buyer's entry of the EO's totals as the EO sent it (what the page shows)."""
    human = totals.get(HUMAN) if isinstance(totals, Mapping) else None
    return dict(human) if isinstance(human, Mapping) else None


def round_result(human: ParticipantTotals | None) -> str | None:
    """The EO's totals of the buyer in plain words (None: no totals yet).

    The EO's ``utility`` of the buyer is what the utility generator's ``/calculateUtility/buyer``
    answers for the allocation saved: the worth of its cakes and pancakes, with the ``cost`` the
    EO also sends it left out (``calculateUtilityBuyer`` adds up the products and their
    supplements only; no allocation saved: worth nothing). What the buyer paid is the totals'
    ``cost``, so what the round gained them is the one minus the other, and the page says all three."""
    if human is None:
        return None
    unit = str((human.utility or {}).get("currencyUnit") or "USD")
    worth, paid = utility_of(human), finite_number(human.cost)
    if worth is None:
        return "The EO gave no score for your allocation" + (f"; you paid {written.money(paid, unit)}." if paid is not None else ".")
    said = f"Your allocation is worth {written.money(worth, unit)} to you"
    if paid is None:
        return said + "."
    gain = round(worth - paid, 2)
    return f"{said}; you paid {written.money(paid, unit)}, so you {'gained' if gain >= 0 else 'lost'} {written.money(abs(gain), unit)}."


def cut_fates(book: RoundBook, agreed_ms: int | None = None) -> list[CutView]:
    """What became of each deal that waited for the buyer's answer when the Avatar Controller
    stopped (its next run found it ``cut``): ``booked`` when the EO's books have it (a deal of the
    same seller, goods and price booked since), ``not_booked`` once the round is over or the EO's
    books agreed with the room's after the cut (``agreed_ms``: when they last did, this round;
    a deal the EO booked would have been added to the room's first), ``unknown`` until then."""
    fates = []
    claimed: set[int] = set()
    for prompt in book.prompts:
        if prompt.outcome != "cut":
            continue
        match = next((d for d in book.deals if d.id not in claimed and d.seller == prompt.seller and d.goods == prompt.goods
                      and (prompt.price is None or abs(d.price - prompt.price) < 0.005) and d.booked_ms >= prompt.received_ms), None)
        fate: CutFate
        if match is not None:
            claimed.add(match.id)
            fate, why = "booked", "the EO booked it"
        elif not book.round.open or (agreed_ms is not None and agreed_ms > prompt.received_ms):
            fate, why = "not_booked", "the room stopped before your answer reached the EO, which did not book it"
        else:
            fate, why = "unknown", "the room restarted while it waited for your answer: the EO's books will tell"
        fates.append(CutView(id=prompt.id, seller=prompt.seller, goods=prompt.goods, price=prompt.price, fate=fate, why=why))
    return fates


def _plan(utility: bu.BuyerUtility | None, have: dict[str, int]) -> PlanView | None:
    """The best allocation of ``have`` under ``utility`` (None: no utility, or one the search cannot take)."""
    if utility is None:
        return None
    try:
        best = bu.best_allocation(have, utility)
        return PlanView(products=best.products_body(), value=bu.utility_value(utility, best),
                        needed_for_one_more=bu.needed_for_one_more(have, best))
    except Exception as exc:  # a utility the search cannot take must not cost the EO an answer
        _notes.warning(("plan", type(exc).__name__), "the buyer's best plan cannot be worked out: %s: %s",
                       type(exc).__name__, exc)
        return None


def _utility_view(utility: bu.BuyerUtility | None) -> UtilityView | None:
    if utility is None:
        return None
    return UtilityView(values=_values(utility), lines=bu.describe(utility), currency=utility.currency_unit)


def _saved(book: RoundBook) -> SavedView | None:
    saved = book.allocation
    return None if saved is None else SavedView(products=saved.products, value=saved.value, at=saved.saved_ms)


def buyer_event(book: RoundBook | None, agreed_ms: int | None = None) -> BuyerEvent:
    """Everything the buyer page shows of the round ``book`` (None: no round yet; ``agreed_ms``:
    when the EO's books last agreed with this round's, :func:`cut_fates`)."""
    utility, problem = parsed_utility(book)
    have = book.bought() if book is not None else {}
    shown, plan = _utility_view(utility), _plan(utility, have)
    if book is None:
        return BuyerEvent(round_id=None, phase=None, budget=None, spent=0.0, left=None, offers=[], offered=False, deals=[],
                          waiting_eo=[], cut=[], have={}, saved=None, human_totals=None, round_totals=None, result=None,
                          utility=shown, utility_problem=problem, plan=plan, recipe=bu.RECIPE)
    rnd = book.round
    human = human_entry(rnd.totals)
    return BuyerEvent(
        round_id=rnd.round_id,
        phase=rnd.phase,
        budget=rnd.budget,
        spent=book.spent,
        left=book.left,
        offers=[OfferView(seller=o.seller, goods=o.goods, price=o.price, text=o.text, at=o.at_ms) for o in book.offers],
        offered=bool(book.offers or book.deals or book.prompts),  # a booked deal takes its offer off the table
        deals=[BoughtView(seller=d.seller, goods=d.goods, price=d.price, at=d.booked_ms, source=d.source) for d in book.deals],
        waiting_eo=[WaitingView(id=p.id, seller=p.seller, goods=p.goods, price=p.price) for p in book.prompts if p.outcome == "sent"],
        cut=cut_fates(book, agreed_ms),
        have=have,
        saved=_saved(book),
        human_totals=human,
        round_totals=rnd.totals,
        result=round_result(participant_totals(rnd.totals, HUMAN)),
        utility=shown,
        utility_problem=problem,
        plan=plan,
        recipe=bu.RECIPE,
    )
