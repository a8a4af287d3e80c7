"""The platform models against every body captured from the real EO, and the doc's examples."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from humaine_platform import endpoints as ep
from humaine_platform import models as m
from tests.support.paths import FIXTURES

TRAFFIC = FIXTURES / "eo-observed-traffic.json"


def _captured() -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    data = json.loads(TRAFFIC.read_text(encoding="utf-8"))
    rows = []
    for service, calls in data.items():
        for label, call in calls.items():
            rows.append((service, label, call["body"], call["fake_answered"]))
    return rows


CAPTURED = _captured()


def _model_for(label: str, body: dict[str, Any]) -> m.PlatformModel:
    path = label.split(" ")[0]
    if path == ep.RECEIVE_MESSAGE:
        return m.parse_message(body)
    return m.MODELS_BY_PATH[path].model_validate(body)


def test_capture_covers_every_human_side_path() -> None:
    seen = {label.split(" ")[0] for _, label, _, _ in CAPTURED}
    assert set(ep.HUMAN_SIDE_PATHS) <= seen


@pytest.mark.parametrize(("service", "label", "body", "answer"), CAPTURED, ids=lambda v: str(v)[:40])
def test_captured_body_round_trips(service: str, label: str, body: dict, answer: dict) -> None:
    model = _model_for(label, body)
    assert model.body() == body, f"{service} {label} changed on re-serialisation"
    assert m.Acknowledgement.model_validate(answer).acknowledged


def test_captured_message_kinds() -> None:
    by_label = {(s, label): body for s, label, body, _ in CAPTURED}
    human = m.parse_message(by_label[("human-ui", "/receiveMessage (from Human)")])
    assert isinstance(human, m.HumanUtterance)
    assert human.roundId == "r1" and human.timestamp == 1795303932403
    agent = m.parse_message(by_label[("human-ui", "/receiveMessage (from agent)")])
    assert isinstance(agent, m.AgentMessage)
    assert agent.bid is not None and agent.bid.type == "SellOffer"
    assert agent.bid.quantity == {"egg": 2} and agent.bid.price == m.Price(unit="USD", value=3.5)
    assert agent.time_ms == 1795303932413
    log = m.LogEntry.model_validate(by_label[("human-ui", "/receiveLog (rejected)")])
    assert log.permitted is False and log.rationale == "Agent speaking twice"
    assert isinstance(log.message(), m.AgentMessage)
    rejection = m.Rejection.model_validate(by_label[("human-ui", "/receiveRejection")])
    assert isinstance(rejection.message(), m.HumanUtterance)
    accept = m.ConfirmAccept.model_validate(by_label[("human-ui", "/confirmAccept")])
    assert accept.bid.is_accept
    meta = m.RoundMetadata.model_validate(by_label[("human-ui", "/sendRoundMetadata")])
    assert meta.durations.round == 60 and meta.humanBudget.value == 50


def test_doc_examples_with_int_round_id() -> None:
    human = {"speaker": "Human", "addressee": "Watson", "text": "Watson I'd like to buy 5 eggs for $2",
             "role": "buyer", "environmentUUID": "abcdefg", "timestamp": 1582184608849, "roundId": 1}
    agent = {"text": "How about if I sell you 5 eggs for 3.73 USD.", "speaker": "Watson",
             "role": "seller", "addressee": "Human", "environmentUUID": "abcdefg",
             "timeStamp": "2020-02-20T08:08:05.825Z", "roundId": 1,
             "bid": {"type": "SellOffer", "quantity": {"egg": 5}, "price": {"unit": "USD", "value": 3.73}}}
    parsed_human = m.parse_message(human)
    assert parsed_human.roundId == 1 and parsed_human.body() == human
    assert m.parse_message(agent).body() == agent
    settings = m.AppSettings.model_validate(
        {"serviceMap": {ep.EO_SERVICE: {"protocol": "http", "host": "localhost", "port": 14010}}}
    )
    assert settings.serviceMap[ep.EO_SERVICE].url == "http://localhost:14010"


def test_extra_keys_are_kept() -> None:
    body = {"speaker": "Human", "addressee": "", "text": "hello", "role": "buyer",
            "environmentUUID": "e", "timestamp": 1, "roundId": "r1",
            "addresseeSource": "none", "gazeShare": {"Celia": 0.2}}
    assert m.parse_message(body).body() == body


@pytest.mark.parametrize("missing", ["text", "addressee", "environmentUUID", "roundId", "timestamp"])
def test_missing_required_key_is_named(missing: str) -> None:
    body = {"speaker": "Human", "addressee": "Celia", "text": "hi", "role": "buyer",
            "environmentUUID": "e", "timestamp": 1, "roundId": 1}
    del body[missing]
    with pytest.raises(ValidationError) as info:
        m.parse_message(body)
    assert missing in m.describe_error(info.value)


def test_agent_message_needs_iso_time_stamp() -> None:
    body = {"text": "t", "speaker": "Celia", "role": "seller", "addressee": "Human",
            "environmentUUID": "e", "roundId": 1, "timeStamp": "yesterday"}
    with pytest.raises(ValidationError, match="ISO 8601"):
        m.parse_message(body)


def test_unknown_bid_type_accepted_but_flagged() -> None:
    bid = m.Bid.model_validate({"type": "Counter", "quantity": {"egg": 1}})
    assert not bid.known_type and not bid.has_price
    assert m.Bid.model_validate({"type": "AcceptOffer"}).is_accept


def test_a_bids_goods_and_price_are_read_liberally() -> None:
    """Only whole, positive, finite quantities count as goods; only a finite price as one."""
    for quantity in (None, {}, {"egg": "two"}, [1], {"egg": float("nan"), "milk": True, "flour": float("inf")}):
        assert m.whole_goods(quantity) == {}
    assert m.whole_goods({"egg": 2.0, "milk": 0, "flour": -1}) == {"egg": 2}
    bid = m.Bid.model_validate({"type": "SellOffer", "quantity": {"egg": 2, "milk": 0}, "price": {"unit": "USD", "value": 1}})
    assert (bid.goods, bid.amount) == ({"egg": 2}, 1.0)
    assert m.Bid.model_validate({"type": "SellOffer"}).amount is None
    assert m.Bid.model_validate({"type": "SellOffer", "price": {"unit": "USD", "value": float("inf")}}).amount is None
    assert [m.finite_number(v) for v in (True, "1", float("nan"), 3)] == [None, None, None, 3.0]


def test_answers() -> None:
    assert m.confirm_accept_answer() == {"status": "acknowledged"}
    assert m.acknowledgement() == {"status": "Acknowledged"}
    assert m.ms_to_iso(m.iso_to_ms("2020-02-20T08:08:05.825Z")) == "2020-02-20T08:08:05.825Z"


def test_a_body_read_liberally_is_copied_as_the_eo_sent_it() -> None:
    """What had to be filled in to read a body (a role sent as null, a missing environmentUUID)
    is not put back into the EO's mouth when the body is passed on (``eo/verdict``)."""
    sent = {"speaker": "Human", "addressee": "Celia", "text": "hi", "role": None, "roundId": "r1", "permitted": False}
    read = m.read_lenient(m.LogEntry, sent)
    assert read.value is not None and read.value.role == "buyer" and "role" in read.filled
    assert read.value.as_sent() == sent
    complete = m.read_lenient(m.LogEntry, {**sent, "role": "buyer", "environmentUUID": "e1"})
    assert complete.value is not None and complete.value.as_sent()["role"] == "buyer"
