"""The buyer's book: the buyer page's state from what the EO tells, liberal in what it takes."""

from __future__ import annotations

from typing import Any

from avatar.buyer.book import STATE_KEY, BuyerBook
from avatar.display import DisplayHub

UTILITY = {
    "cake": {"type": "unitvaluePlusSupplement", "unit": "each", "parameters": {"unitvalue": 25, "supplement": {
        "chocolate": {"type": "trapezoid", "unit": "ounce",
                      "parameters": {"minQuantity": 3, "maxQuantity": 6, "minValue": 3, "maxValue": 6}}}}},
    "pancake": {"type": "unitvaluePlusSupplement", "unit": "each", "parameters": {"unitvalue": 10, "supplement": {}}},
}


def book() -> tuple[BuyerBook, DisplayHub]:
    hub = DisplayHub(["Celia", "Watson"], "buyer")
    return BuyerBook(hub), hub


def kept(hub: DisplayHub) -> dict[str, Any]:
    return hub.snapshot()[STATE_KEY]


def test_budget_values_offers_deals_and_the_best_plan() -> None:
    buyer, hub = book()
    buyer.set_budget("r1", 50.0)
    buyer.set_utility("r1", UTILITY)
    buyer.offer("Celia", {"type": "SellOffer", "quantity": {"egg": 2, "flour": 2}, "price": {"unit": "USD", "value": 3.5}}, "Two eggs...")
    buyer.offer("Watson", {"type": "Information", "quantity": {}}, "Hello")  # not an offer
    view = kept(hub)
    assert view["left"] == 50.0 and view["utility"]["lines"][0] == "cake: $25.00 each"
    assert [o["seller"] for o in view["offers"]] == ["Celia"] and view["offers"][0]["price"] == 3.5
    assert buyer.deal_view({"quantity": {"egg": 2}, "price": {"value": 1.25}})["budget_after"] == 48.75

    buyer.booked("Celia", {"type": "Accept", "quantity": {"egg": 2, "flour": 2, "milk": 1, "sugar": 1, "chocolate": 4},
                           "price": {"unit": "USD", "value": 6.0}})
    view = kept(hub)
    assert view["left"] == 44.0 and view["have"] == {"egg": 2, "flour": 2, "milk": 1, "sugar": 1, "chocolate": 4}
    assert view["offers"] == []  # the seller's offer was taken
    plan = view["plan"]
    cake = plan["products"]["cake"]
    assert cake["quantity"] == 1 and cake["supplement"] == [{"chocolate": {"unit": "ounce", "quantity": 4}}]
    assert plan["value"] == 29.0  # 25 + 3 + (4 - 3) * (6 - 3) / (6 - 3)
    assert plan["needed_for_one_more"]["pancake"] == {"egg": 1, "flour": 2, "milk": 2}


def test_a_new_round_starts_an_empty_book() -> None:
    buyer, hub = book()
    buyer.set_budget("r1", 50.0)
    buyer.booked("Celia", {"quantity": {"egg": 2}, "price": {"value": 4.0}})
    buyer.set_budget("r2", 40.0)
    view = kept(hub)
    assert view["round_id"] == "r2" and view["left"] == 40.0 and view["deals"] == [] and view["have"] == {}


def test_what_the_page_cannot_show_is_said_not_raised() -> None:
    buyer, hub = book()
    buyer.set_utility("r1", {"cake": {"parameters": {"unitvalue": "lots"}}})
    view = kept(hub)
    assert view["utility"] is None and "unitvalue" in view["utility_problem"] and view["plan"] is None
    for bid in (None, {}, {"type": "SellOffer"}, {"type": "SellOffer", "quantity": {"egg": "two"}, "price": {"value": 1}},
                {"type": "SellOffer", "quantity": {"egg": 2}, "price": "cheap"}, {"type": "SellOffer", "quantity": [1], "price": {}}):
        buyer.offer("Celia", bid, "x")
    buyer.booked("Watson", {"quantity": {"egg": float("nan"), "milk": True}, "price": None})
    view = kept(hub)
    assert view["offers"] == [] and view["have"] == {} and view["left"] is None
