"""R0-R4 over synthetic queues, with the documented thresholds and a round's own."""

from __future__ import annotations

from humaine_platform import rules as r
from humaine_platform.rules import Proposal, RuleSettings, TurnQueue


def human(at: float, addressee: str = "Celia", text: str = "I want 2 eggs") -> Proposal:
    return Proposal("Human", addressee, text, at)


def agent(name: str, at: float, text: str = "How about 3 USD", bid: str | None = None, price: float | None = None) -> Proposal:
    return Proposal(name, "Human", text, at, bid, price)


def test_r0_documented_blocks_within_5_s_and_a_rounds_own_gap_holds() -> None:
    q = TurnQueue(RuleSettings())
    assert q.propose(human(0)).permitted
    verdict = q.propose(human(4999))
    assert not verdict.permitted and verdict.rule == "R0" and verdict.rationale == r.R0_RATIONALE
    assert q.propose(human(5000)).permitted  # measured from the last *permitted* one
    short = TurnQueue(RuleSettings(r0_min_gap_ms=1.0))
    assert short.propose(human(0)).permitted
    assert short.propose(human(1)).permitted
    assert not short.propose(human(1.4)).permitted


def test_r1_budget() -> None:
    q = TurnQueue(RuleSettings(human_budget=10))
    q.propose(human(0))
    assert q.propose(agent("Celia", 100, bid="Accept", price=6)).permitted
    q.propose(human(6000, addressee=""))
    verdict = q.propose(agent("Celia", 6100, bid="Accept", price=5))
    assert not verdict.permitted and verdict.rule == "R1"
    assert q.propose(agent("Watson", 6200, bid="SellOffer", price=50)).permitted  # offers cost nothing
    assert TurnQueue(RuleSettings()).propose(agent("Celia", 1, bid="Accept", price=1e6)).rule == "R3"


def test_r2_addressee_first_within_window() -> None:
    q = TurnQueue(RuleSettings())
    q.propose(human(0, addressee="Celia"))
    verdict = q.propose(agent("Watson", 1500))
    assert not verdict.permitted and verdict.rule == "R2" and verdict.rationale == r.R2_RATIONALE
    assert q.propose(agent("Watson", 2000)).permitted  # window over


def test_r2_other_agent_may_reply_once_addressee_spoke() -> None:
    q = TurnQueue(RuleSettings())
    q.propose(human(0, addressee="Celia"))
    assert q.propose(agent("Celia", 300)).permitted
    assert q.propose(agent("Watson", 400)).permitted


def test_r2_window_of_a_round_of_its_own() -> None:
    q = TurnQueue(RuleSettings(r2_window_ms=4000.0))
    q.propose(human(0, addressee="Watson"))
    assert q.propose(agent("Celia", 3000)).rule == "R2"
    assert q.propose(agent("Celia", 4000)).permitted


def test_r2_unaddressed_human_gives_no_priority() -> None:
    q = TurnQueue()
    q.propose(human(0, addressee=""))
    assert q.propose(agent("Watson", 10)).permitted
    assert q.propose(agent("Celia", 20)).permitted


def test_r3_once_per_human_turn_first_wins() -> None:
    q = TurnQueue()
    q.propose(human(0, addressee=""))
    assert q.propose(agent("Celia", 100)).permitted
    verdict = q.propose(agent("Celia", 101))
    assert not verdict.permitted and verdict.rationale == "Agent speaking twice"
    q.propose(human(6000, addressee=""))
    assert q.propose(agent("Celia", 6100)).permitted


def test_r3_agent_before_any_human() -> None:
    verdict = r.evaluate([], agent("Celia", 0))
    assert not verdict.permitted and verdict.rule == "R3"


def test_r4_length_and_ssml() -> None:
    long_text = " ".join(["word"] * 101)
    q = TurnQueue()
    q.propose(human(0, addressee=""))
    verdict = q.propose(agent("Celia", 10, text=long_text))
    assert not verdict.permitted and verdict.rationale == "Excessive message length"
    ssml = "<speak>" + " ".join(["<break time='1s'/> word"] * 100) + "</speak>"
    assert r.word_count(ssml) == 100 and q.propose(agent("Celia", 20, text=ssml)).permitted
    # the documented rule is for agents (the platform's EO also blocks long human messages: eo_rules)
    assert r.evaluate([], human(0, text=long_text), RuleSettings()).permitted


def test_blocked_messages_do_not_count() -> None:
    q = TurnQueue()
    q.propose(human(0, addressee=""))
    assert q.propose(agent("Celia", 10, text=" ".join(["w"] * 200))).rule == "R4"
    assert q.propose(agent("Celia", 20)).permitted  # the blocked one was not "speaking"


def test_proposal_from_platform_body() -> None:
    body = {"text": "deal", "speaker": "Celia", "role": "seller", "addressee": "Human",
            "bid": {"type": "Accept", "quantity": {"egg": 2}, "price": {"unit": "USD", "value": 3.5}}}
    proposal = Proposal.from_body(body, 42)
    assert proposal == Proposal("Celia", "Human", "deal", 42, "Accept", 3.5)
    assert Proposal.from_body({"speaker": "Human", "addressee": "", "text": "hi"}, 1).is_human
