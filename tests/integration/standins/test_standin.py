"""The stand-in EO on a real socket, with recording agents and a recording human-side service."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from humaine_platform import endpoints as ep
from humaine_platform.client import RELAY_PERMITTED_KEY
from humaine_platform.eo_rules import USER_REJECTED
from humaine_platform.models import confirm_accept_answer, ms_to_iso
from humaine_platform.rules import R1_RATIONALE, R2_RATIONALE, R3_RATIONALE, R4_RATIONALE
from standins.eo import StandinServer, StandinSettings, default_round
from standins.eo.errors import SERVICE_FAILED
from standins.eo.round_setup import HUMAN_UTILITY, UNIT_COSTS
from standins.eo.worker import StandinWorker
from standins.recorder import Behavior, RecordingServer
from tests.support import loopback
from tests.support.helpers import free_port, wait_for
from tests.support.paths import FIXTURES
from workers.runtime.config import Config
from workers.runtime.logs import NOTICE

OBSERVED = json.loads((FIXTURES / "eo-observed-traffic.json").read_text())
ENV = "abcdefg"
LONG_ROUND = (0.0, 60.0, 0.0)


@dataclass
class StandinRoom:
    eo: StandinServer
    human: RecordingServer
    celia: RecordingServer
    watson: RecordingServer
    http: httpx.Client
    started_at: float = 0.0
    """Wall time just before ``/startRound`` was posted."""

    def post(self, path: str, body: Any) -> httpx.Response:
        return self.http.post(self.eo.url + path, json=body)

    def start(self, durations: tuple[float, float, float] = LONG_ROUND, round_id: Any = "r1", budget: float = 50.0) -> None:
        body = default_round(
            {"Celia": self.celia.port, "Watson": self.watson.port}, self.human.port, durations,
            round_id=round_id, budget=budget,
        )
        assert self.post(ep.INITIALIZE_ROUND, body.body()).status_code == 200
        self.started_at = time.time()
        assert self.post(ep.START_ROUND, {"roundId": round_id}).status_code == 200

    def start_and_wait(self, **kwargs: Any) -> None:
        self.start(**kwargs)
        assert self.human.wait_for(1, ep.START_ROUND, timeout=5)


def human(text: str, addressee: str = "Celia", round_id: Any = "r1") -> dict[str, Any]:
    return {
        "roundId": round_id, "speaker": "Human", "addressee": addressee, "text": text, "role": "buyer",
        "environmentUUID": ENV, "timestamp": time.time_ns() // 1_000_000,
    }


def agent(speaker: str, text: str, bid: dict[str, Any] | None = None, round_id: Any = "r1", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "roundId": round_id, "text": text, "speaker": speaker, "role": "seller", "addressee": "Human",
        "environmentUUID": ENV, "timeStamp": ms_to_iso(time.time_ns() // 1_000_000), **extra,
    }
    if bid is not None:
        body["bid"] = bid
    return body


def offer(kind: str = "SellOffer", eggs: int = 2, price: float | None = 3.5) -> dict[str, Any]:
    bid: dict[str, Any] = {"type": kind, "quantity": {"egg": eggs}}
    if price is not None:
        bid["price"] = {"unit": "USD", "value": price}
    return bid


def make_room(**settings: Any) -> Iterator[StandinRoom]:
    """The documented rules unless asked otherwise (the real EO's are tested in
    test_eo_conformance); R0 is off unless asked for (as in the current EO): the tests speak
    faster than 5 s."""
    settings.setdefault("rules", "documented")
    settings.setdefault("r0_min_gap_s", 0.0)
    settings.setdefault("request_timeout_s", 2.0)
    with (
        RecordingServer() as human_side,
        RecordingServer() as celia,
        RecordingServer() as watson,
        loopback.client(timeout=10) as http,
    ):
        # the Avatar Controller's answer; the recorder's usual "Acknowledged" would be a no
        human_side.behaviors[ep.CONFIRM_ACCEPT] = Behavior(answer=confirm_accept_answer())
        # the rounds Next round starts (from [standin]) have this room's services too
        settings.setdefault("human_port", human_side.port)
        settings.setdefault("agents", {"Celia": celia.port, "Watson": watson.port})
        eo = StandinServer(StandinSettings(port=0, **settings)).start()
        try:
            yield StandinRoom(eo, human_side, celia, watson, http)
        finally:
            eo.stop()


room_of = contextlib.contextmanager(make_room)
"""``with room_of(**settings) as room:`` (a room inside a test, where a fixture cannot be)."""


@pytest.fixture
def room() -> Iterator[StandinRoom]:
    yield from make_room(r2_window_s=0.5)


def test_round_timers_event_order_and_totals_after_a_confirmed_accept() -> None:
    for room in make_room():
        room.start((0.2, 1.0, 0.3))
        assert room.human.wait_for(1, ep.START_ROUND, timeout=5)
        assert room.post(ep.RELAY_MESSAGE, human("Celia, I want to buy 2 eggs for $3")).json()["permitted"]
        answer = room.post(ep.RELAY_MESSAGE, agent("Celia", "You've got it! 2 eggs for 3.5 USD.", offer("Accept"))).json()
        assert answer["permitted"] and answer["booked"] is True
        assert room.human.wait_for(1, ep.RECEIVE_ROUND_TOTALS, timeout=5)

        def when(server: RecordingServer, path: str) -> float:
            return next(r.wall_ns for r in server.received if r.path == path) / 1e9

        human_paths = [r.path for r in room.human.received if r.path in (
            ep.SEND_ROUND_METADATA, ep.SET_UTILITY, ep.START_ROUND, ep.END_ROUND, ep.RECEIVE_ROUND_TOTALS)]
        assert human_paths == [ep.SEND_ROUND_METADATA, ep.SET_UTILITY, ep.START_ROUND, ep.END_ROUND, ep.RECEIVE_ROUND_TOTALS]
        for seller in (room.celia, room.watson):
            assert [r.path for r in seller.received if r.path != ep.RECEIVE_MESSAGE] == [ep.SET_UTILITY, ep.START_ROUND, ep.END_ROUND]
        # the phases last at least their configured length, timed from the /startRound call
        assert when(room.human, ep.SEND_ROUND_METADATA) < when(room.human, ep.START_ROUND)
        assert when(room.human, ep.START_ROUND) - room.started_at >= 0.2 - 0.02
        assert when(room.human, ep.END_ROUND) - when(room.human, ep.START_ROUND) >= 1.0 - 0.02
        assert when(room.human, ep.RECEIVE_ROUND_TOTALS) - when(room.human, ep.END_ROUND) >= 0.3 - 0.02

        # bodies have the observed EO's keys
        observed = OBSERVED["human-ui"]
        for path in (ep.SEND_ROUND_METADATA, ep.SET_UTILITY, ep.START_ROUND, ep.END_ROUND, ep.RECEIVE_ROUND_TOTALS):
            assert set(room.human.bodies(path)[0]) == set(observed[path]["body"]), path
        celia_utility = room.celia.bodies(ep.SET_UTILITY)[0]
        assert set(celia_utility) == set(OBSERVED["agent-Celia"]["/setUtility"]["body"])
        assert celia_utility["name"] == "Celia"
        assert celia_utility["utility"]["egg"]["parameters"]["unitcost"] == UNIT_COSTS["Celia"]["egg"]
        assert room.human.bodies(ep.SET_UTILITY)[0]["name"] == "competition-ui"
        assert room.human.bodies(ep.SEND_ROUND_METADATA)[0]["durations"] == {"warmUp": 0.2, "round": 1.0, "post": 0.3}

        # confirmAccept came before the deal was booked, and the totals hold it
        confirm = room.human.bodies(ep.CONFIRM_ACCEPT)
        assert len(confirm) == 1 and confirm[0]["bid"]["type"] == "Accept"
        totals = room.human.bodies(ep.RECEIVE_ROUND_TOTALS)[0]["roundTotals"]
        assert totals["Human"] == {"quantity": {"egg": 2}, "cost": 3.5}
        assert totals["Celia"]["revenue"] == 3.5
        assert totals["Celia"]["utility"]["value"] == round(3.5 - 2 * UNIT_COSTS["Celia"]["egg"], 2)
        assert totals["Watson"]["revenue"] == 0
        # the round is over: relaying is refused, the views still answer
        late = room.post(ep.RELAY_MESSAGE, human("Celia, anyone there?"))
        assert late.status_code == 409 and "ended" in late.json()["error"]
        assert room.http.get(f"{room.eo.url}{ep.VIEW_TOTALS}/r1").json()["roundTotals"]["Human"]["cost"] == 3.5


def test_forwarding_shapes(room: StandinRoom) -> None:
    room.start_and_wait()
    utterance = human("Celia, I want to buy 2 eggs for $3")
    assert room.post(ep.RELAY_MESSAGE, utterance).json()["permitted"] is True
    reply = agent("Celia", "How about if I sell you 2 eggs for 3.5 USD. (Celia)", offer(), gesture="smile")
    answer = room.post(ep.RELAY_MESSAGE, reply).json()
    assert answer["permitted"] is True
    assert answer["forwarded"] == {"Celia": "delivered", "Watson": "delivered", "competition-ui": "delivered"}

    for seller in (room.celia, room.watson):
        received = seller.bodies(ep.RECEIVE_MESSAGE)
        assert received[0] == utterance
        assert "bid" not in received[1]
        assert received[1] == {k: v for k, v in reply.items() if k != "bid"}
    to_human = room.human.bodies(ep.RECEIVE_MESSAGE)
    assert to_human == [utterance, reply]
    assert to_human[1]["bid"] == offer() and to_human[1]["gesture"] == "smile"
    observed = OBSERVED["human-ui"]
    assert set(to_human[0]) == set(observed["/receiveMessage (from Human)"]["body"])
    assert set(to_human[1]) - {"gesture"} == set(observed["/receiveMessage (from agent)"]["body"])
    agent_copy = room.celia.bodies(ep.RECEIVE_MESSAGE)[1]
    assert set(agent_copy) - {"gesture"} == set(OBSERVED["agent-Celia"]["/receiveMessage (from agent)"]["body"])
    logs = room.human.bodies(ep.RECEIVE_LOG)
    assert [entry["permitted"] for entry in logs] == [True, True]
    assert logs[0]["rationale"] is None
    assert set(logs[0]) == set(observed["/receiveLog"]["body"])
    queue = room.http.get(f"{room.eo.url}{ep.VIEW_QUEUE}/r1").json()["queue"]
    assert [(e["speaker"], e["permitted"]) for e in queue] == [("Human", True), ("Celia", True)]


def test_r2_unaddressed_reply_blocked_then_allowed_after_the_window(room: StandinRoom) -> None:
    room.start_and_wait()
    room.post(ep.RELAY_MESSAGE, human("Celia, 2 eggs please"))
    early = room.post(ep.RELAY_MESSAGE, agent("Watson", "I sell eggs too", offer(price=2.0))).json()
    assert early["permitted"] is False and early["rule"] == "R2" and early["rationale"] == R2_RATIONALE
    rejection = room.watson.bodies(ep.RECEIVE_REJECTION)
    assert len(rejection) == 1 and rejection[0]["rationale"] == R2_RATIONALE and rejection[0]["bid"]["price"]["value"] == 2.0
    assert set(rejection[0]) == set(OBSERVED["agent-Celia"]["/receiveRejection"]["body"])
    blocked_log = room.human.bodies(ep.RECEIVE_LOG)[-1]
    assert blocked_log["permitted"] is False and blocked_log["rationale"] == R2_RATIONALE
    assert set(blocked_log) == set(OBSERVED["human-ui"]["/receiveLog (rejected)"]["body"])
    assert all(body["speaker"] != "Watson" for body in room.human.bodies(ep.RECEIVE_MESSAGE))
    time.sleep(0.6)  # the window is 0.5 s in this room
    late = room.post(ep.RELAY_MESSAGE, agent("Watson", "I sell eggs too", offer(price=2.0))).json()
    assert late["permitted"] is True
    assert room.human.bodies(ep.RECEIVE_MESSAGE)[-1]["speaker"] == "Watson"


def test_r3_second_reply_blocked_and_r4_long_message_blocked(room: StandinRoom) -> None:
    room.start_and_wait()
    room.post(ep.RELAY_MESSAGE, human("Celia, 2 eggs please"))
    assert room.post(ep.RELAY_MESSAGE, agent("Celia", "2 eggs for 3.5 USD", offer())).json()["permitted"]
    again = room.post(ep.RELAY_MESSAGE, agent("Celia", "2 eggs for 3.4 USD", offer(price=3.4))).json()
    assert again["permitted"] is False and again["rationale"] == R3_RATIONALE
    assert room.celia.bodies(ep.RECEIVE_REJECTION)[-1]["rationale"] == R3_RATIONALE

    room.post(ep.RELAY_MESSAGE, human("Watson, what do you have?", addressee="Watson"))
    long_text = " ".join(["word"] * 101)
    blocked = room.post(ep.RELAY_MESSAGE, agent("Watson", long_text, offer())).json()
    assert blocked["permitted"] is False and blocked["rule"] == "R4" and blocked["rationale"] == R4_RATIONALE
    exactly = room.post(ep.RELAY_MESSAGE, agent("Watson", " ".join(["word"] * 100), offer())).json()
    assert exactly["permitted"] is True
    texts = [b["text"] for b in room.human.bodies(ep.RECEIVE_MESSAGE)]
    assert long_text not in texts and "2 eggs for 3.4 USD" not in texts


def test_r0_second_human_message_too_soon_is_blocked() -> None:
    for room in make_room(r0_min_gap_s=5.0):
        room.start_and_wait()
        assert room.post(ep.RELAY_MESSAGE, human("Celia, 2 eggs")).json()["permitted"]
        second = room.post(ep.RELAY_MESSAGE, human("and some milk")).json()
        assert second["permitted"] is False and second["rule"] == "R0"
        assert room.human.bodies(ep.RECEIVE_REJECTION)[0]["text"] == "and some milk"
        assert [b["text"] for b in room.celia.bodies(ep.RECEIVE_MESSAGE)] == ["Celia, 2 eggs"]


def test_r1_budget_and_a_declined_confirmation() -> None:
    for room in make_room():
        room.start_and_wait(budget=5.0)
        room.post(ep.RELAY_MESSAGE, human("Celia, 2 eggs for 3.5"))
        first = room.post(ep.RELAY_MESSAGE, agent("Celia", "Deal, 2 eggs for 3.5 USD", offer("Accept"))).json()
        assert first["permitted"] and first["booked"] is True
        room.post(ep.RELAY_MESSAGE, human("Watson, 2 eggs for 2", addressee="Watson"))
        over = room.post(ep.RELAY_MESSAGE, agent("Watson", "Deal, 2 eggs for 2 USD", offer("Accept", price=2.0))).json()
        assert over["permitted"] is False and over["rule"] == "R1" and over["rationale"] == R1_RATIONALE
        assert len(room.human.bodies(ep.CONFIRM_ACCEPT)) == 1  # a blocked Accept is never put to the human side

        room.human.behaviors[ep.CONFIRM_ACCEPT] = Behavior(answer={"status": "Acknowledged"})  # wrong case: a no
        room.post(ep.RELAY_MESSAGE, human("Watson, 1 egg for 1", addressee="Watson"))
        declined = room.post(ep.RELAY_MESSAGE, agent("Watson", "Deal", offer("Accept", eggs=1, price=1.0))).json()
        # rejected as the platform EO rejects it, and never forwarded: an Accept with its bid on
        # the human side's /receiveMessage always means a booked deal
        assert declined["permitted"] is False and declined["booked"] is False and declined["rationale"] == USER_REJECTED
        assert room.watson.bodies(ep.RECEIVE_REJECTION)[-1]["rationale"] == USER_REJECTED
        logged = room.human.bodies(ep.RECEIVE_LOG)[-1]
        assert (logged["text"], logged["permitted"], logged["rationale"]) == ("Deal", False, USER_REJECTED)
        for service in (room.human, room.celia):
            assert "Deal" not in [b["text"] for b in service.bodies(ep.RECEIVE_MESSAGE)]
        totals = room.http.get(f"{room.eo.url}{ep.VIEW_TOTALS}/r1").json()["roundTotals"]
        assert totals["Human"]["cost"] == 3.5 and "Watson" in totals and totals["Watson"]["revenue"] == 0

        # the declined Accept counts neither as said (R3) nor as spent (R1: 3.5 + 1 + 1 > 5)
        room.human.behaviors[ep.CONFIRM_ACCEPT] = Behavior(answer=confirm_accept_answer())
        again = room.post(ep.RELAY_MESSAGE, agent("Watson", "Deal after all", offer("Accept", eggs=1, price=1.0))).json()
        assert again["permitted"] is True and again["booked"] is True
        assert room.human.bodies(ep.RECEIVE_MESSAGE)[-1]["bid"] == offer("Accept", eggs=1, price=1.0)


def test_survives_every_input_that_crashes_the_platform_eo(room: StandinRoom) -> None:
    # unknown roundId before any round exists
    unknown = room.post(ep.RELAY_MESSAGE, human("Celia, hello"))
    assert unknown.status_code == 404 and "unknown roundId" in unknown.json()["error"]
    assert room.post(ep.START_ROUND, {"roundId": "nope"}).status_code == 404
    room.start_and_wait()
    assert room.post(ep.RELAY_MESSAGE, human("Celia, hello", round_id="r9")).status_code == 404
    # an agent before the round's first Human message
    early = room.post(ep.RELAY_MESSAGE, agent("Celia", "Hello!", offer()))
    assert early.status_code == 409 and early.json()["permitted"] is False
    assert room.celia.bodies(ep.RECEIVE_REJECTION)
    room.post(ep.RELAY_MESSAGE, human("Celia, 2 eggs"))
    # a bid without price
    no_price = room.post(ep.RELAY_MESSAGE, agent("Celia", "2 eggs", offer(price=None)))
    assert no_price.status_code == 422 and "price" in no_price.json()["error"]
    # bodies that are not messages
    assert room.http.post(room.eo.url + ep.RELAY_MESSAGE, content=b"{not json").status_code == 400
    assert room.post(ep.RELAY_MESSAGE, [1, 2]).status_code == 422
    missing = room.post(ep.RELAY_MESSAGE, {"roundId": "r1", "speaker": "Human", "text": "hi"})
    assert missing.status_code == 422 and "timestamp" in missing.json()["error"]
    assert room.post(ep.RELAY_MESSAGE, {"speaker": "Human"}).status_code == 422
    assert room.post(ep.RELAY_MESSAGE, agent("Mallory", "hi", offer())).status_code == 422
    assert room.post(ep.INITIALIZE_ROUND, {"roundId": "r2"}).status_code == 422
    assert room.post(ep.START_ROUND, {"roundId": "r1"}).status_code == 409
    # the human side fails /confirmAccept
    room.human.behaviors[ep.CONFIRM_ACCEPT] = Behavior(status=500)
    failed = room.post(ep.RELAY_MESSAGE, agent("Celia", "Deal", offer("Accept")))
    assert failed.status_code == SERVICE_FAILED and failed.json()["booked"] is False and "confirmAccept" in failed.json()["error"]
    # the human side is down
    room.human.stop()
    down = room.post(ep.RELAY_MESSAGE, human("Watson, 3 eggs", addressee="Watson"))
    assert down.status_code == SERVICE_FAILED and down.json()["permitted"] is True
    assert room.watson.bodies(ep.RECEIVE_MESSAGE)[-1]["text"] == "Watson, 3 eggs"
    # still serving
    assert room.http.get(f"{room.eo.url}/health").json()["rounds"] == {"r1": "round"}
    assert room.http.get(f"{room.eo.url}{ep.VIEW_QUEUE}", params={"roundId": "r1"}).status_code == 200
    assert room.http.get(f"{room.eo.url}{ep.VIEW_TOTALS}/r7").status_code == 404


def _totals_of(room: StandinRoom, rules: str) -> dict[str, Any]:
    """The buyer's booked goods and money, whichever mode's ``/viewTotals`` shape."""
    totals = room.http.get(f"{room.eo.url}{ep.VIEW_TOTALS}/r1").json()
    if rules == "real_eo":
        human_side = totals.get("Human", {})
        return {"quantity": human_side.get("quantity"), "money": human_side.get("price")}
    human_side = totals["roundTotals"]["Human"]
    return {"quantity": human_side["quantity"] or None, "money": human_side["cost"] or None}


@pytest.mark.parametrize("rules", ["real_eo", "documented"])
def test_a_late_yes_is_booked_although_the_seller_gave_up_waiting(rules: str) -> None:
    """The buyer answers ``/confirmAccept`` after ``request_timeout_s``: the stand-in waits for
    it as the platform EO does (``confirm_wait_s``) and books the deal, even once the seller's
    own HTTP client stopped waiting for the relay's answer."""
    late_s = 1.5
    with room_of(rules=rules, request_timeout_s=0.5) as room:
        assert room.eo.settings.confirm_wait_s > late_s > room.eo.settings.request_timeout_s
        room.human.behaviors[ep.CONFIRM_ACCEPT] = Behavior(answer=confirm_accept_answer(), delay_s=late_s)
        room.start_and_wait()
        room.post(ep.RELAY_MESSAGE, human("Celia, 2 eggs for 3.5"))
        deal = agent("Celia", "Deal, 2 eggs for 3.5 USD", offer("Accept"))
        with pytest.raises(httpx.ReadTimeout):  # a seller whose client gives up before the buyer answers
            room.http.post(room.eo.url + ep.RELAY_MESSAGE, json=deal, timeout=0.3)

        def booked() -> bool:
            return any(b.get("text") == deal["text"] for b in room.human.bodies(ep.RECEIVE_MESSAGE))

        assert wait_for(booked, timeout=10), room.human.bodies(ep.RECEIVE_MESSAGE)
        forwarded = next(b for b in room.human.bodies(ep.RECEIVE_MESSAGE) if b.get("text") == deal["text"])
        assert forwarded["bid"] == offer("Accept")
        assert _totals_of(room, rules) == {"quantity": {"egg": 2}, "money": 3.5}
        assert not room.celia.bodies(ep.RECEIVE_REJECTION)


def _products(product: str, count: int = 1) -> dict[str, Any]:
    return {product: {"unit": "each", "quantity": count, "supplement": []}}


def test_an_allocation_that_needs_more_than_was_bought_is_refused_with_the_shortfall() -> None:
    """Deliberately unlike the platform EO (which stores any allocation): what the buyer cannot
    bake from the goods booked is answered ``Failed`` with the shortfall, and not stored."""
    with room_of(rules="real_eo") as room:
        room.start_and_wait()

        def allocate(products: dict[str, Any]) -> dict[str, Any]:
            answer = room.post(ep.RECEIVE_HUMAN_ALLOCATION, {"roundId": "r1", "payload": products})
            assert answer.status_code == 200, answer.text
            return answer.json()

        def buy(text: str, **quantity: int) -> None:
            room.post(ep.RELAY_MESSAGE, human(text))
            bid = {"type": "Accept", "quantity": quantity, "price": {"unit": "USD", "value": 2.0}}
            assert RELAY_PERMITTED_KEY in room.post(ep.RELAY_MESSAGE, agent("Celia", "Deal", bid)).json()

        # nothing bought: the platform EO's own refusal
        assert allocate(_products("pancake")) == {"roundId": "r1", "status": "Failed", "Reason": "No body supplied."}
        buy("Celia, 2 cups of milk", milk=2)
        # a pancake is 1 egg, 2 flour, 2 milk (the utility generator's recipe)
        assert allocate(_products("pancake")) == {
            "roundId": "r1", "status": "Failed", "Reason": "the allocation needs 1 more egg, 2 more flour than the buyer bought",
        }
        assert "allocation" not in room.http.get(f"{room.eo.url}{ep.VIEW_TOTALS}/r1").json()["Human"]
        buy("Celia, an egg and 2 cups of flour", egg=1, flour=2)
        more = "the allocation needs 1 more egg, 2 more flour, 2 more milk than the buyer bought"
        assert allocate(_products("pancake", 2))["Reason"] == more
        assert allocate(_products("pancake")) == {"roundId": "r1", "status": "Acknowledged"}
        stored = room.http.get(f"{room.eo.url}{ep.VIEW_TOTALS}/r1").json()["Human"]
        assert stored["allocation"] == _products("pancake") and stored["quantity"] == {"milk": 2, "egg": 1, "flour": 2}


def test_health_says_it_is_the_standin_and_names_the_rounds_it_was_given() -> None:
    """The stand-in keeps its own memory of rounds, as the platform's EO does: the room gives it
    the round ids (the room's ledger knows the day's; the stand-in never reads it)."""
    with room_of(rules="real_eo", warm_up_s=0.0, round_s=0.2, post_s=0.0) as room:
        health = room.http.get(room.eo.url + ep.HEALTH).json()
        assert health == {"status": "ok", ep.STANDIN_MARK: True, "rounds": {}}
        body = default_round({"Celia": room.celia.port, "Watson": room.watson.port}, room.human.port, (0, 0.2, 0), round_id="r7")
        assert room.post(ep.INITIALIZE_ROUND, body.body()).status_code == 200
        assert room.post(ep.START_ROUND, {"roundId": "r7"}).status_code == 200
        assert room.human.wait_for(1, ep.RECEIVE_ROUND_TOTALS, timeout=10)
        assert room.http.get(room.eo.url + ep.HEALTH).json()["rounds"] == {"r7": "ended"}
        assert room.eo.engine.free_round_id() == "r8"  # what its own --auto-round would take next


def test_the_worker_says_how_long_an_accept_waits_and_starts_a_round_with_drawn_utilities(
    make_config: Callable[..., Config], caplog: pytest.LogCaptureFixture
) -> None:
    """The stand-in alone (``--auto-round``) starts a round of its own, its utilities drawn from
    the platform generator's distributions (not fixed), and says in one NOTICE line how long a
    seller's Accept may wait."""
    with RecordingServer() as human_side, RecordingServer() as celia:
        human_side.behaviors[ep.CONFIRM_ACCEPT] = Behavior(answer=confirm_accept_answer())
        config = make_config(f"mqtt://127.0.0.1:{free_port()}", **{
            "standin.port": 0, "standin.human_port": human_side.port, "standin.agents": {"Celia": celia.port},
            "standin.warm_up_s": 0.0, "standin.round_s": 60.0, "standin.post_s": 0.0, "standin.wait_for_services_s": 5.0,
        })
        worker = StandinWorker(config, auto_start_round=True)
        stop = threading.Event()
        with caplog.at_level(NOTICE, logger="humaine.orchestrator"):
            thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
            thread.start()
            try:
                assert human_side.wait_for(1, ep.SEND_ROUND_METADATA, timeout=20)
                assert human_side.bodies(ep.SEND_ROUND_METADATA)[0]["roundId"] == "r1"
                assert human_side.wait_for(1, ep.SET_UTILITY, timeout=20) and celia.wait_for(1, ep.SET_UTILITY, timeout=20)
                cake = human_side.bodies(ep.SET_UTILITY)[0]["utility"]["cake"]["parameters"]["unitvalue"]
                egg = celia.bodies(ep.SET_UTILITY)[0]["utility"]["egg"]["parameters"]["unitcost"]
                assert 15 <= cake <= 30 and 0.25 <= egg <= 0.5  # the generator's ranges
                assert (cake, egg) != (HUMAN_UTILITY["cake"]["parameters"]["unitvalue"], UNIT_COSTS["Celia"]["egg"])
            finally:
                stop.set()
                thread.join(15)
        notices = [r.getMessage() for r in caplog.records if r.levelno == NOTICE]
        assert notices == [
            f"stand-in EO: a seller's Accept waits up to 3600 s for the human side's {ep.CONFIRM_ACCEPT}, "
            "as the platform EO waits without end"
        ], notices
