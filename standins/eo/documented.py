"""The ``documented`` mode's ``/relayMessage``: every proposed message judged by R0-R4 as the
platform documents them (:mod:`humaine_platform.rules`; nothing here decides a rule), logged to
the human side, told to a blocked sender or forwarded - to the agents without ``bid``, to the
human-side service with it. The answer says ``permitted``/``rationale``.

An Accept the human side declines is rejected as the platform EO rejects it ("User rejected bid
offer" to the seller, ``/receiveLog`` with ``permitted: false``) and never forwarded: a seller's
Accept with its bid on the human side's ``/receiveMessage`` always means a booked deal.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import ValidationError

from humaine_platform import endpoints as ep
from humaine_platform import eo_rules
from humaine_platform.client import Blocked, Delivered
from humaine_platform.models import (
    HUMAN,
    AgentMessage,
    Bid,
    Message,
    acknowledgement,
    confirm_accept_answer,
    describe_error,
    parse_message,
)
from humaine_platform.rules import R3_NO_HUMAN_RATIONALE, Entry, Proposal, TurnQueue, Verdict
from standins.eo.calls import ServiceCalls, outcome_text
from standins.eo.errors import SERVICE_FAILED, StandinError
from standins.eo.memory import RoundMemory
from standins.eo.rounds import Round
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)


def _overruled(record: dict[str, Any], verdict: Verdict) -> Verdict:
    """``verdict`` replaces the rules' one in the message's ``/viewQueue`` record."""
    record["permitted"], record["rationale"], record["rule"] = verdict.permitted, verdict.rationale, verdict.rule
    return verdict


class DocumentedRelay:
    """``/relayMessage`` and ``/viewQueue`` by the documented rules."""

    def __init__(self, memory: RoundMemory, calls: ServiceCalls) -> None:
        self._memory = memory
        self._calls = calls

    def view_queue(self, round_id: object) -> Any:
        rnd = self._memory.get(round_id)
        return {"roundId": rnd.round_id, "phase": rnd.phase, "queue": list(rnd.history), "failures": list(rnd.events)}

    async def relay(self, body: Any) -> dict[str, Any]:
        """Judge, log, tell or forward. Returns the JSON answer; raises :class:`StandinError` for
        what the real EO cannot survive."""
        arrived = time.monotonic() * 1000.0  # when it reached the stand-in: R0 and R2 measure the gaps
        rnd, queue, message = self._read(body)
        verdict = queue.propose(Proposal.from_body(body, arrived))
        entry = queue.entries[-1]
        record: dict[str, Any] = {
            **body, "permitted": verdict.permitted, "rationale": verdict.rationale, "rule": verdict.rule,
            "receivedAt": now_ms(),
        }
        rnd.history.append(record)
        if verdict.permitted and isinstance(message, AgentMessage) and message.bid is not None and message.bid.is_accept:
            # the platform EO's order: the human side confirms, then the verdict is logged
            verdict = await self._book_or_decline(rnd, body, message.bid, queue, entry, record)
        log_body = {**body, "permitted": verdict.permitted, "rationale": verdict.rationale}
        record["log"] = outcome_text(await self._calls.post(rnd.human, ep.RECEIVE_LOG, log_body))
        if not verdict.permitted:
            return await self._reject(rnd, body, verdict, record)
        return await self._forward(rnd, body, record)

    def _read(self, body: Any) -> tuple[Round, TurnQueue, Message]:
        """The round a message is for, its queue and the message, or the refusal where the EO
        would exit."""
        if not isinstance(body, dict):
            raise StandinError(422, "a message body must be a JSON object")
        if "roundId" not in body:
            raise StandinError(422, "roundId is required on /relayMessage (the platform EO exits without it)")
        rnd = self._memory.get(body["roundId"])
        if not rnd.relaying or rnd.queue is None:  # a round of this mode always has its queue
            raise StandinError(
                409,
                f"round {rnd.round_id!r} is in phase {rnd.phase!r}; messages are relayed only while "
                f"the round runs (after the warm-up, before /endRound)",
                roundId=rnd.round_id, phase=rnd.phase,
            )
        try:
            message = parse_message(body)
        except ValidationError as exc:
            raise StandinError(422, f"invalid message: {describe_error(exc)}") from None
        if isinstance(message, AgentMessage):
            if message.speaker not in rnd.agents:
                raise StandinError(
                    422,
                    f"speaker {message.speaker!r} is neither {HUMAN!r} nor an agent of round {rnd.round_id!r} "
                    f"({', '.join(rnd.agents)})",
                )
            if message.bid is not None and not message.bid.has_price:
                raise StandinError(422, "bid.price is required (the platform EO exits on a bid without price)")
        return rnd, rnd.queue, message

    async def _book_or_decline(self, rnd: Round, body: dict[str, Any], bid: Bid, queue: TurnQueue, entry: Entry,
                               record: dict[str, Any]) -> Verdict:
        """``/confirmAccept`` for a permitted Accept (``entry`` in the round's ``queue``): booked on
        the human side's yes (the verdict stands), rejected as the platform EO rejects it on
        anything else ("User rejected bid offer"), so a declined Accept is never forwarded; one
        not booked then counts neither as said nor as spent. Raises :class:`StandinError` (424)
        when the human side fails to answer, where the platform EO exits."""
        seller = entry.proposal.speaker
        outcome = await self._calls.confirm(rnd, body)
        record["booked"] = False
        if not isinstance(outcome, Delivered | Blocked):
            queue.overrule(entry, _overruled(record, Verdict(False, f"the human side failed {ep.CONFIRM_ACCEPT}")))
            raise StandinError(
                SERVICE_FAILED,
                f"the human-side service {rnd.human.name} failed {ep.CONFIRM_ACCEPT} ({outcome_text(outcome)}); the deal "
                f"is not booked (the platform EO exits on this)",
                permitted=False, booked=False, roundId=rnd.round_id,
            )
        answer = outcome.answer
        if isinstance(answer, dict) and answer.get("status") == confirm_accept_answer()["status"]:
            rnd.ledger.book(seller, bid)
            record["booked"] = True
            log.info("round %s: deal booked: %s sells %s", rnd.round_id, seller, bid.body())
            return Verdict(True)
        log.info("round %s: the human side declined %s's Accept (%s)", rnd.round_id, seller, answer)
        declined = _overruled(record, Verdict(False, eo_rules.USER_REJECTED))
        queue.overrule(entry, declined)
        return declined

    async def _reject(self, rnd: Round, body: dict[str, Any], verdict: Verdict, record: dict[str, Any]) -> dict[str, Any]:
        speaker = body["speaker"]
        target = rnd.human if speaker == HUMAN else rnd.agents[speaker]
        outcome = await self._calls.post(target, ep.RECEIVE_REJECTION, {**body, "rationale": verdict.rationale})
        record["rejection"] = outcome_text(outcome)
        log.info("round %s: %s blocked (%s: %s)", rnd.round_id, speaker, verdict.rule, verdict.rationale)
        answer = acknowledgement(permitted=False, rationale=verdict.rationale, rule=verdict.rule, roundId=rnd.round_id)
        if "booked" in record:
            answer["booked"] = record["booked"]
        if verdict.rationale == R3_NO_HUMAN_RATIONALE:
            # The platform EO exits here; say so plainly.
            raise StandinError(
                409,
                f"{speaker} spoke before the round's first Human message (the platform EO exits on this)",
                permitted=False, rationale=verdict.rationale, rule=verdict.rule, roundId=rnd.round_id,
            )
        return answer

    async def _forward(self, rnd: Round, body: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
        """A permitted message (an Accept only once booked) to the agents without its bid and to
        the human side with it."""
        sent = await self._calls.forward(rnd, body, human_first=False)
        forwarded = {s.name: outcome_text(o) for s, o in sent}
        record["forwarded"] = forwarded
        answer = acknowledgement(permitted=True, rationale=None, roundId=rnd.round_id, forwarded=forwarded)
        if "booked" in record:
            answer["booked"] = record["booked"]
        human_outcome = sent[-1][1]
        if not isinstance(human_outcome, Delivered):
            raise StandinError(
                SERVICE_FAILED,
                f"the human-side service {rnd.human.name} at {rnd.human.url} did not take the message "
                f"({outcome_text(human_outcome)}); the platform EO exits on this",
                **{k: v for k, v in answer.items() if k != "status"},
            )
        return answer
