"""The demo sellers: reading utterances, pricing, and the full loop through the stand-in EO."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from avatar.gestures import VOCABULARY, parse_field
from humaine_platform import endpoints as ep
from humaine_platform.client import RELAY_PERMITTED_KEY
from humaine_platform.models import confirm_accept_answer
from standins.demo_agents.agent import SellerAgent
from standins.demo_agents.parsing import parse_offer
from standins.demo_agents.runner import DemoAgents
from standins.demo_agents.settings import DemoAgentsSettings
from standins.demo_agents.strategy import Seller
from standins.eo import StandinServer, StandinSettings, default_round
from standins.eo.round_setup import UNIT_COSTS
from standins.recorder import Behavior, RecordingServer
from tests.support import loopback


@pytest.mark.parametrize(
    ("text", "quantities", "price"),
    [
        ("Celia, I want to buy 2 eggs for $3", {"egg": 2}, 3.0),
        ("Watson I'd like to buy 5 eggs for $2", {"egg": 5}, 2.0),
        ("five eggs and three cups of flour for three dollars fifty", {"egg": 5, "flour": 3}, 3.5),
        ("a dozen eggs for 4 dollars and 50 cents", {"egg": 12}, 4.5),
        ("half a dozen eggs please", {"egg": 6}, None),
        ("twenty-five blueberries for 50 cents", {"blueberry": 25}, 0.5),
        ("3 teaspoons of vanilla for $1.25", {"vanilla": 3}, 1.25),
        ("some milk and 2 ounces of chocolate for 2", {"milk": 1, "chocolate": 2}, 2.0),
        ("one hundred and twenty eggs for twenty two dollars", {"egg": 120}, 22.0),
        ("two cups of sugar, one egg for 3 bucks", {"sugar": 2, "egg": 1}, 3.0),
        ("How about if I sell you 2 eggs for 3.5 USD. (Celia)", {"egg": 2}, 3.5),
        ("eggs for three fifty", {"egg": 1}, 3.5),
        ("<speak>I want <emphasis>four</emphasis> packets of blueberries</speak>", {"blueberry": 4}, None),
        ("hello there", {}, None),
    ],
)
def test_parsing_quantities_and_prices(text: str, quantities: dict[str, int], price: float | None) -> None:
    parsed = parse_offer(text)
    assert parsed.quantities == quantities
    assert parsed.price == price


@pytest.mark.parametrize(
    ("text", "accept", "reject"),
    [("OK Celia, deal!", True, False), ("I accept", True, False), ("no deal, that is too expensive", False, True),
     ("2 eggs please", False, False)],
)
def test_parsing_yes_and_no(text: str, accept: bool, reject: bool) -> None:
    parsed = parse_offer(text)
    assert (parsed.accept, parsed.reject) == (accept, reject)


def celia() -> Seller:
    return Seller("Celia", markup=0.6, min_margin=0.15, costs=dict(UNIT_COSTS["Celia"]))


def test_counter_offer_is_above_cost_and_concedes_toward_the_buyer() -> None:
    seller = celia()
    request = {"egg": 10, "flour": 4}
    cost = 10 * UNIT_COSTS["Celia"]["egg"] + 4 * UNIT_COSTS["Celia"]["flour"]
    first = seller.respond(parse_offer("I need 10 eggs and 4 cups of flour"))
    assert first is not None and first.bid_type == "SellOffer" and first.quantities == request
    assert first.price == round(cost * 1.6, 2)
    assert first.gesture in VOCABULARY  # first reply of the round greets
    low = seller.respond(parse_offer("10 eggs and 4 cups of flour for $1"))
    assert low is not None and low.bid_type == "SellOffer"
    assert cost < low.price < first.price
    assert str(low.price) in low.text
    lower = seller.respond(parse_offer("10 eggs and 4 cups of flour for $1"))
    assert lower is not None and cost * 1.15 - 0.01 <= lower.price < low.price


def test_accepts_a_good_offer_and_a_deal_on_its_own_offer() -> None:
    seller = celia()
    good = seller.respond(parse_offer("2 eggs for $3"))
    assert good is not None and good.bid_type == "Accept" and good.price == 3.0 and good.quantities == {"egg": 2}
    assert parse_field(good.gesture).names and not parse_field(good.gesture).unknown
    offer = seller.respond(parse_offer("4 cups of milk"))
    assert offer is not None and offer.bid_type == "SellOffer"
    deal = seller.respond(parse_offer("deal"))
    assert deal is not None and deal.bid_type == "Accept" and (deal.quantities, deal.price) == (offer.quantities, offer.price)
    assert deal.bid()["price"] == {"unit": "USD", "value": offer.price}


def test_follower_undercuts_above_its_floor_or_stays_quiet() -> None:
    seller = Seller("Watson", markup=0.5, min_margin=0.15, costs=dict(UNIT_COSTS["Watson"]))
    request = parse_offer("10 eggs")
    undercut = seller.follow(request, rival_price=6.0)
    assert undercut is not None and undercut.price == 5.4 and undercut.gesture == "point"
    assert seller.follow(request, rival_price=10 * UNIT_COSTS["Watson"]["egg"]) is None
    assert seller.follow(parse_offer("hello"), rival_price=None) is None


def test_do_better_lowers_the_price_and_a_question_books_nothing() -> None:
    seller = celia()
    offer = seller.respond(parse_offer("I need 10 eggs"))
    assert offer is not None and offer.bid_type == "SellOffer" and offer.price is not None
    better = seller.respond(parse_offer("Can you do better?"))
    assert better is not None and better.bid_type == "SellOffer" and better.price is not None
    assert seller.floor({"egg": 10}) <= better.price < offer.price
    for question in ("Deal?", "Is it a deal?", "would you accept that?"):
        answer = seller.respond(parse_offer(question))
        assert answer is not None and answer.bid_type != "Accept", question
    asked = seller.respond(parse_offer("Would you take 5 dollars for 10 eggs?"))  # above the floor
    assert asked is not None and asked.bid_type == "SellOffer" and asked.price == 5.0
    assert seller.respond(parse_offer("deal")).bid_type == "Accept"  # type: ignore[union-attr]


def test_an_acceptance_naming_a_price_takes_that_offer() -> None:
    seller = celia()
    first = seller.respond(parse_offer("I need 10 eggs"))
    second = seller.respond(parse_offer("and 4 cups of milk"))
    assert first is not None and second is not None and first.price != second.price
    taken = seller.respond(parse_offer(f"I accept your offer of ${first.price}"))
    assert taken is not None and taken.bid_type == "Accept"
    assert (taken.quantities, taken.price) == (first.quantities, first.price)
    never = seller.respond(parse_offer("I accept your offer of $0.01"))
    assert never is not None and never.bid_type == "Information" and "did not offer" in never.text


def test_an_unaddressed_acceptance_is_taken_up_by_the_seller_who_offered() -> None:
    seller = celia()
    offer = seller.respond(parse_offer("I need 10 eggs"))
    assert offer is not None
    taken = seller.follow(parse_offer("I accept"), rival_price=None)
    assert taken is not None and taken.bid_type == "Accept" and taken.price == offer.price
    # a seller with no offer on the table stays quiet; so does one whose rival already answered
    assert Seller("Watson").follow(parse_offer("I accept"), rival_price=None) is None
    assert seller.follow(parse_offer("I accept"), rival_price=3.0) is None


def test_an_unaddressed_acceptance_takes_up_the_latest_offer_in_the_room_and_a_closed_deal_is_not_undercut() -> None:
    """Celia offered, then Watson offered later: "I accept your offer" addressed to nobody is
    Watson's to take up, not Celia's (unless it names her price); and once a seller has closed
    a deal on a request, the other does not undercut it."""
    seller = celia()
    offer = seller.respond(parse_offer("I need 10 eggs"))
    assert offer is not None
    assert seller.follow(parse_offer("I accept your offer"), rival_price=None, ours_latest=False) is None
    named = seller.follow(parse_offer(f"I accept your offer of ${offer.price}"), rival_price=None, ours_latest=False)
    assert named is not None and named.bid_type == "Accept" and named.price == offer.price
    request = parse_offer("Watson, 4 eggs for 2 dollars")
    assert seller.follow(request, rival_price=2.0, rival_closed=True) is None
    assert seller.follow(request, rival_price=9.0) is not None  # an open rival offer is still undercut


def test_the_agent_knows_who_made_the_latest_offer_and_when_a_deal_closed() -> None:
    """The EO forwards another agent's message without its bid: the words tell an offer and a
    closed deal ("You've got it! ..."), after which nobody undercuts it."""
    async def scenario() -> None:
        agent = SellerAgent(celia(), "http://127.0.0.1:9", ["Watson"])
        rival = {"speaker": "Watson", "addressee": "Human", "text": "How about 4 eggs for 2.5 USD.", "role": "seller"}
        agent.receive_message(rival)
        assert agent.latest_offer_by == "Watson"
        agent.receive_message({"speaker": "Human", "addressee": "Watson", "text": "Watson, 4 eggs for 2 dollars", "role": "buyer"})
        agent.receive_message({**rival, "text": "You've got it! 4 eggs for 2.0 USD."})
        assert agent.latest_offer_by is None and agent.turn is not None and agent.turn.rival_closed
        await agent.aclose()

    asyncio.run(scenario())


# -- the loop: buyer -> stand-in EO -> sellers -> stand-in EO -> human side ------------------------
@dataclass
class Loop:
    eo: StandinServer
    sellers: DemoAgents
    human: RecordingServer
    http: httpx.Client

    def say(self, text: str, addressee: str) -> dict[str, Any]:
        body = {
            "roundId": "r1", "speaker": "Human", "addressee": addressee, "text": text, "role": "buyer",
            "environmentUUID": "abcdefg", "timestamp": time.time_ns() // 1_000_000,
        }
        answer = self.http.post(self.eo.url + ep.RELAY_MESSAGE, json=body).json()
        assert RELAY_PERMITTED_KEY in answer, answer
        return body

    def replies(self) -> list[dict[str, Any]]:
        return [b for b in self.human.bodies(ep.RECEIVE_MESSAGE) if b["speaker"] != "Human"]


@pytest.fixture
def loop() -> Iterator[Loop]:
    with RecordingServer() as human_side, loopback.client(timeout=10) as http:
        human_side.behaviors[ep.CONFIRM_ACCEPT] = Behavior(answer=confirm_accept_answer())
        # the platform EO's own rules (the stand-in's default) and the sellers' default waits
        eo = StandinServer(StandinSettings(port=0, human_port=human_side.port)).start()
        settings = DemoAgentsSettings(agents={"Celia": 0, "Watson": 0}, reply_delay_s=0.1)
        sellers = DemoAgents(settings, eo.url).start()
        try:
            body = default_round(sellers.ports, human_side.port, (0.0, 60.0, 0.0))
            assert http.post(eo.url + ep.INITIALIZE_ROUND, json=body.body()).status_code == 200
            assert http.post(eo.url + ep.START_ROUND, json={"roundId": "r1"}).status_code == 200
            assert human_side.wait_for(1, ep.START_ROUND, timeout=5)
            yield Loop(eo, sellers, human_side, http)
        finally:
            sellers.stop()
            eo.stop()


def wait_until(condition: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


def test_round_trip_reply_with_bid_and_gesture_then_deal(loop: Loop) -> None:
    said = time.monotonic()
    loop.say("Celia, I want to buy 10 eggs and 2 cups of flour", "Celia")
    assert wait_until(lambda: len(loop.replies()) >= 1)
    reply_ms = (time.monotonic() - said) * 1000
    first = loop.replies()[0]
    assert first["speaker"] == "Celia" and first["addressee"] == "Human" and first["roundId"] == "r1"
    assert first["bid"]["type"] == "SellOffer" and first["bid"]["quantity"] == {"egg": 10, "flour": 2}
    cost = 10 * UNIT_COSTS["Celia"]["egg"] + 2 * UNIT_COSTS["Celia"]["flour"]
    assert first["bid"]["price"]["value"] > cost
    assert first["gesture"] == "wave"
    assert reply_ms < 5000

    # Watson was not addressed: it waits for Celia, then undercuts her once
    assert wait_until(lambda: len(loop.replies()) >= 2)
    second = loop.replies()[1]
    assert second["speaker"] == "Watson" and second["bid"]["price"]["value"] < first["bid"]["price"]["value"]
    time.sleep(0.5)
    assert len(loop.replies()) == 2  # one reply each per utterance

    loop.say("Watson, deal", "Watson")
    assert wait_until(lambda: len(loop.human.bodies(ep.CONFIRM_ACCEPT)) == 1)
    confirm = loop.human.bodies(ep.CONFIRM_ACCEPT)[0]
    assert confirm["speaker"] == "Watson" and confirm["bid"]["type"] == "Accept"
    assert confirm["bid"]["price"] == second["bid"]["price"]
    assert wait_until(lambda: len(loop.replies()) == 3)
    totals = loop.http.get(f"{loop.eo.url}{ep.VIEW_TOTALS}/r1").json()
    assert totals["Watson"]["quantity"] == {"egg": 10, "flour": 2}
    assert totals["Human"]["price"] == second["bid"]["price"]["value"]

    # nobody addressed: both may speak after the window, staggered, and never twice
    loop.say("I also need 3 cups of milk", "")
    assert wait_until(lambda: len(loop.replies()) >= 4)
    time.sleep(1.5)
    late = loop.replies()[3:]
    assert late[0]["speaker"] == "Celia" and len({r["speaker"] for r in late}) == len(late)
    verdicts = loop.human.bodies(ep.RECEIVE_LOG)
    assert all(entry["permitted"] for entry in verdicts), [e for e in verdicts if not e["permitted"]]
    for agent in loop.sellers.agents.values():
        assert agent.rejections == []
        assert all(sent.outcome.kind == "delivered" for sent in agent.sent)
