"""The booking rules on their own: a bid's terms, what puts an offer or a deal in the books,
which confirmation a booked Accept answers, how a new round closes the ones left open."""

from __future__ import annotations

from avatar.books.rules import (
    SentYes,
    answered_prompt,
    closed_by_new_round,
    is_booked_deal,
    is_standing_offer,
)
from humaine_platform.models import AgentMessage, Bid
from tests.support.bids import accept, sell_offer


def test_a_bids_terms_are_whole_goods_and_a_finite_price() -> None:
    bid = Bid(type="SellOffer", quantity={"egg": 2.0, "milk": 0, "flour": -1, "salt": float("inf")},
              price={"unit": "USD", "value": float("nan")})
    assert (bid.goods, bid.amount) == ({"egg": 2}, None)
    assert not is_standing_offer(bid)  # no price: no offer


def test_an_offer_needs_goods_and_a_price_and_a_deal_is_an_accept_to_the_buyer() -> None:
    assert is_standing_offer(sell_offer({"egg": 2}, 3.0))
    assert not is_standing_offer(sell_offer({}, 3.0)) and not is_standing_offer(accept({"egg": 2}, 3.0))
    said = {"speaker": "Celia", "text": "Deal.", "role": "seller", "environmentUUID": "e", "roundId": "r1",
            "timeStamp": "2020-02-20T08:08:05.825Z"}
    assert is_booked_deal(AgentMessage(**said, addressee="Human", bid=accept({"egg": 2}, 3.0)))
    assert not is_booked_deal(AgentMessage(**said, addressee="Watson", bid=accept({"egg": 2}, 3.0)))
    assert not is_booked_deal(AgentMessage(**said, addressee="Human", bid=sell_offer({"egg": 2}, 3.0)))


def test_a_booked_deal_answers_the_oldest_yes_of_the_same_terms_else_the_oldest() -> None:
    sent = [SentYes("a", '{"egg":1}', 1.0), SentYes("b", '{"egg":2}', 2.0), SentYes("c", '{"egg":2}', 2.0)]
    assert answered_prompt(sent, '{"egg":2}', 2.0) == "b"
    assert answered_prompt(sent, '{"milk":1}', 9.0) == "a"
    assert answered_prompt([], '{"egg":2}', 2.0) is None


def test_a_new_round_ends_a_finished_negotiation_and_loses_a_running_one() -> None:
    closings = closed_by_new_round([(1, "post"), (2, "round"), (3, "warmup")], "r9")
    assert [(c.key, c.phase) for c in closings] == [(1, "ended"), (2, "lost"), (3, "lost")]
    assert "totals never" in closings[0].note and "round r9" in closings[1].note
