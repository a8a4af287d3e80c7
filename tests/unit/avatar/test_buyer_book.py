"""The buyer's book: the buyer page's state derived from the round's ledger, liberal in what it takes."""

from __future__ import annotations

from avatar.books.ledger import RoomLedger
from avatar.books.records import participant_totals, utility_of
from avatar.buyer.book import buyer_event, round_result
from avatar.room_ledger import ledger_in_memory
from humaine_platform.models import ParticipantTotals
from tests.support.bids import accept, sell_offer

UTILITY = {
    "cake": {"type": "unitvaluePlusSupplement", "unit": "each", "parameters": {"unitvalue": 25, "supplement": {
        "chocolate": {"type": "trapezoid", "unit": "ounce",
                      "parameters": {"minQuantity": 3, "maxQuantity": 6, "minValue": 3, "maxValue": 6}}}}},
    "pancake": {"type": "unitvaluePlusSupplement", "unit": "each", "parameters": {"unitvalue": 10, "supplement": {}}},
}
T0 = 1_700_000_000_000


def a_round(ledger: RoomLedger, round_id: str = "r1", budget: float | None = 50.0) -> int:
    return ledger.begin_round(round_id, {"warmUp": 5, "round": 60, "post": 30}, budget, "USD", "round", T0, T0 + 60_000).key


def test_budget_values_offers_deals_and_the_best_plan() -> None:
    ledger = ledger_in_memory()
    key = a_round(ledger)
    ledger.set_utility(key, UTILITY)
    ledger.set_offer(key, "Celia", sell_offer({"egg": 2, "flour": 2}, 3.5), "Two eggs...", T0)
    view = buyer_event(ledger.book(key))
    assert view.utility is not None
    assert view.left == 50.0 and view.utility.lines[0] == "cake: $25.00 each"
    assert [o.seller for o in view.offers] == ["Celia"] and view.offers[0].price == 3.5

    goods = {"egg": 2, "flour": 2, "milk": 1, "sugar": 1, "chocolate": 4}
    ledger.book_deal(key, "Celia", accept(goods, 6.0), "Deal.", "m1", T0 + 1)
    view = buyer_event(ledger.book(key))
    assert view.left == 44.0 and view.have == goods
    assert view.offers == []  # the seller's offer was taken
    plan = view.plan
    assert plan is not None
    cake = plan.products["cake"]
    assert cake["quantity"] == 1 and cake["supplement"] == [{"chocolate": {"unit": "ounce", "quantity": 4}}]
    assert plan.value == 29.0  # 25 + 3 + (4 - 3) * (6 - 3) / (6 - 3)
    assert plan.needed_for_one_more["pancake"] == {"egg": 1, "flour": 2, "milk": 2}


def test_a_yes_is_the_buyers_only_once_the_eo_books_it() -> None:
    ledger = ledger_in_memory()
    key = a_round(ledger)
    ledger.add_prompt("p1", key, "Watson", "Deal.", accept({"egg": 1}, 2.0), T0)
    ledger.answer_prompt("p1", True, "buyer", T0 + 1)
    view = buyer_event(ledger.book(key))
    assert view.left == 50.0 and view.have == {} and view.waiting_eo[0].seller == "Watson"
    ledger.book_deal(key, "Watson", accept({"egg": 1}, 2.0), "Deal.", "m1", T0 + 2)
    view = buyer_event(ledger.book(key))
    assert view.left == 48.0 and view.waiting_eo == [] and view.have == {"egg": 1}


def test_a_new_round_starts_an_empty_book() -> None:
    ledger = ledger_in_memory()
    key = a_round(ledger)
    ledger.book_deal(key, "Celia", accept({"egg": 2}, 4.0), "", "m1", T0)
    second = a_round(ledger, "r2", 40.0)
    view = buyer_event(ledger.book(second))
    assert view.round_id == "r2" and view.left == 40.0 and view.deals == [] and view.have == {}


def test_what_the_page_cannot_show_is_said_not_raised() -> None:
    ledger = ledger_in_memory()
    key = a_round(ledger, budget=None)
    ledger.set_utility(key, {"cake": {"parameters": {"unitvalue": "lots"}}})
    view = buyer_event(ledger.book(key))
    assert view.utility is None and "unitvalue" in (view.utility_problem or "") and view.plan is None
    assert view.left is None
    assert buyer_event(None).round_id is None


def test_the_round_result_says_what_the_score_is_and_what_it_gained() -> None:
    """The EO's utility of the buyer is the worth of the allocation saved (the utility generator
    leaves the cost out), so the gain is the worth minus what was paid."""
    ledger = ledger_in_memory()
    key = a_round(ledger)
    assert buyer_event(ledger.book(key)).result is None  # no totals yet
    ledger.set_totals(key, {"Human": {"quantity": {"egg": 2}, "cost": 4.23, "utility": {"currencyUnit": "USD", "value": 19.26}},
                            "Celia": {"revenue": 4.23}}, T0 + 90_000)
    assert buyer_event(ledger.book(key)).result == "Your allocation is worth $19.26 to you; you paid $4.23, so you gained $15.03."
    assert round_result(ParticipantTotals(cost=6.5, utility={"currencyUnit": "USD", "value": 0})) == \
        "Your allocation is worth $0.00 to you; you paid $6.50, so you lost $6.50."
    assert round_result(ParticipantTotals(cost=2.5, utility=None)) == "The EO gave no score for your allocation; you paid $2.50."


def test_a_participants_utility_is_read_from_the_totals_the_ledger_keeps() -> None:
    """The EO's totals as the ledger keeps them (each entry the platform's model): a utility that
    is no finite number is none; no totals, or no entry, is no entry."""
    totals = {"Human": {"cost": 2.0, "utility": {"currencyUnit": "EUR", "value": 3}}, "Celia": {"utility": {"value": float("nan")}}}
    human = participant_totals(totals, "Human")
    assert human is not None and utility_of(human) == 3.0 and round_result(human) == (
        "Your allocation is worth 3.00 EUR to you; you paid 2.00 EUR, so you gained 1.00 EUR.")
    assert utility_of(participant_totals(totals, "Celia")) is None
    assert participant_totals(totals, "Watson") is None and participant_totals(None, "Human") is None
def test_a_taken_offer_leaves_the_page_saying_none_is_open_not_none_yet() -> None:
    ledger = ledger_in_memory()
    key = a_round(ledger)
    assert buyer_event(ledger.book(key)).offered is False
    ledger.set_offer(key, "Celia", sell_offer({"egg": 2}, 3.5), "Two eggs...", T0)
    ledger.book_deal(key, "Celia", accept({"egg": 2}, 3.5), "Deal.", "m1", T0 + 1)
    view = buyer_event(ledger.book(key))
    assert view.offers == [] and view.offered is True


def test_what_became_of_each_deal_a_restart_cut() -> None:
    """Deals that waited for the buyer when the controller stopped: the EO's books say booked (a
    deal of the same seller, goods and price since), or, once the round is over or the EO's books
    agreed with the room's after the cut, not booked; until then, not known yet."""
    ledger = ledger_in_memory()
    key = a_round(ledger)
    ledger.add_prompt("p1", key, "Celia", "Deal.", accept({"egg": 2}, 1.0), T0)
    ledger.add_prompt("p2", key, "Watson", "Deal.", accept({"milk": 1}, 0.5), T0)
    ledger.cut_waiting_prompts()  # the next run of the controller finds them waiting
    ledger.add_reconciled_deal(key, "Celia", {"egg": 2}, 1.0, T0 + 5)  # the EO's totals had it
    fates = {f.id: f.fate for f in buyer_event(ledger.book(key)).cut}
    assert fates == {"p1": "booked", "p2": "unknown"}
    assert {f.id: f.fate for f in buyer_event(ledger.book(key), agreed_ms=T0 - 1).cut}["p2"] == "unknown"  # before the cut
    agreed = {f.id: f.fate for f in buyer_event(ledger.book(key), agreed_ms=T0 + 10).cut}
    assert agreed == {"p1": "booked", "p2": "not_booked"}  # the EO's books agreed with the room's since, without p2
    ledger.set_totals(key, {"Human": {"cost": 1.0}}, T0 + 90_000)  # the round is over: p2 was never booked
    fates = {f.id: (f.fate, f.why) for f in buyer_event(ledger.book(key)).cut}
    assert fates["p2"] == ("not_booked", "the room stopped before your answer reached the EO, which did not book it")


def test_what_the_hub_keeps_is_what_the_page_was_sent() -> None:
    ledger = ledger_in_memory()
    key = a_round(ledger)
    ledger.set_utility(key, UTILITY)
    ledger.book_deal(key, "Celia", accept({"egg": 2, "flour": 2, "milk": 1, "sugar": 1}, 6.0), "Deal.", "m1", T0)
    ledger.add_prompt("p1", key, "Watson", "Deal.", accept({"milk": 1}, 0.5), T0)
    ledger.cut_waiting_prompts()
    ledger.save_allocation(key, {"cake": {"quantity": 1}}, 25.0, T0 + 2)
    event = buyer_event(ledger.book(key))
    assert event.plan is not None and event.cut[0].fate == "unknown" and event.saved is not None
    assert event.view().wire() == event.payload()
