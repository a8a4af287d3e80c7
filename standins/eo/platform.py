"""The ``real_eo`` mode's ``/relayMessage``: the platform EO's, step by step (its
``environment-orchestrator.js``), judged by the port of its own code
(:mod:`humaine_platform.eo_rules`). Its answer is ``{"status": "Acknowledged"}`` for a blocked
message and adds ``allResponses`` for a permitted one; a rejected ``/confirmAccept`` becomes
"User rejected bid offer" to the seller; ``/viewQueue`` shows its queue.

Where the platform EO exits, the stand-in raises :class:`~standins.eo.errors.StandinError`
with an HTTP status and a readable reason and goes on.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from typing import Any

from pydantic import ValidationError

from humaine_platform import endpoints as ep
from humaine_platform import eo_rules
from humaine_platform.client import RELAY_PERMITTED_KEY, Blocked, Delivered
from humaine_platform.models import Bid, acknowledgement, confirm_accept_answer
from standins.eo.calls import ServiceCalls, outcome_text
from standins.eo.errors import SERVICE_FAILED, StandinError
from standins.eo.memory import RoundMemory
from standins.eo.rounds import Round
from standins.eo.settings import StandinSettings
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)


class PlatformRelay:
    """``/relayMessage`` and ``/viewQueue`` as the platform EO answers them."""

    def __init__(self, settings: StandinSettings, memory: RoundMemory, calls: ServiceCalls) -> None:
        self._response_limit_ms = settings.response_time_limit_s * 1000
        self._can_talk_at_once = settings.can_talk_at_once
        self._memory = memory
        self._calls = calls

    def view_queue(self, round_id: object) -> Any:
        rnd = self._memory.known_to_the_eo(round_id)
        return None if rnd.phase == "initialized" else [q.view() for q in rnd.eo_queue]

    async def relay(self, body: Any) -> dict[str, Any]:
        """Judge, then reject, or book (an Accept the human side confirms), log and forward."""
        arrived = float(now_ms())
        rnd, totals = self._running(body)
        names = [rnd.human.name, *rnd.agents]
        permitted, rationale = self._judge(body, totals, rnd, names, arrived)
        record: dict[str, Any] = {**body, "permitted": permitted, "rationale": rationale, "receivedAt": int(arrived)}
        rnd.history.append(record)
        if not permitted:
            return self._reject(rnd, body, rationale, names, record)
        bid = body.get("bid") if isinstance(body.get("bid"), dict) else None
        if bid is not None and bid.get("type") == eo_rules.BOOKED_TYPE:
            if not await self._confirmed(rnd, body):
                record["booked"] = False
                return self._reject(rnd, body, eo_rules.USER_REJECTED, names, record)
            totals.book(body)
            with contextlib.suppress(ValidationError):
                rnd.ledger.book(str(body.get("speaker")), Bid.model_validate(bid))
            record["booked"] = True
        return await self._forward(rnd, body, record)

    def _running(self, body: Any) -> tuple[Round, eo_rules.Totals]:
        """The started round a message is for, with its totals; a refusal where the EO exits."""
        if not isinstance(body, dict):
            raise StandinError(422, "a message body must be a JSON object")
        rnd = self._memory.find(body.get("roundId"))
        if rnd is None or not rnd.running or rnd.eo_totals is None:
            state = "not started" if rnd is not None and rnd.phase == "initialized" else "unknown"
            raise StandinError(404, f"roundId {body.get('roundId')!r} is {state} (the platform EO exits on this)",
                               roundId=body.get("roundId"))
        return rnd, rnd.eo_totals

    def _judge(self, body: dict[str, Any], totals: eo_rules.Totals, rnd: Round, names: list[str],
               arrived: float) -> tuple[bool, str | None]:
        """``allowMessage``, the bid's checks and ``checkMessage``: whether it goes on, and why not."""
        try:
            permitted, rationale = eo_rules.allow_message(
                body, totals.budget, rnd.eo_queue, self._response_limit_ms, self._can_talk_at_once, arrived,
            )
            problem = eo_rules.bid_problem(body)
            if problem is not None:
                permitted, rationale = False, problem
            permitted = permitted and eo_rules.check_message(body)
            if not permitted:
                eo_rules.sender_of(body, names)
        except eo_rules.EOWouldExit as exc:
            raise StandinError(409 if "spoke before" in str(exc) else 422, f"{exc} (the platform EO exits on this)") from None
        return permitted, rationale

    async def _confirmed(self, rnd: Round, body: dict[str, Any]) -> bool:
        """The human side's answer to ``/confirmAccept``: a yes books the deal; no answer is a
        refusal (424), where the platform EO exits."""
        outcome = await self._calls.confirm(rnd, body)
        answer = outcome.answer if isinstance(outcome, Delivered | Blocked) else None
        if not isinstance(answer, dict):
            raise StandinError(
                SERVICE_FAILED,
                f"the human-side service {rnd.human.name} failed {ep.CONFIRM_ACCEPT} ({outcome_text(outcome)}); "
                f"the deal is not booked (the platform EO exits on this)",
            )
        return bool(answer.get("status") == confirm_accept_answer()["status"])

    async def _forward(self, rnd: Round, body: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
        """``/receiveLog`` (not awaited), the queue, then the message to the human side with its
        bid and to the agents without; the answer carries every service's answer."""
        self._calls.background(rnd.human, ep.RECEIVE_LOG, {**body, "permitted": True, "rationale": None})
        rnd.eo_queue.append(eo_rules.Queued(copy.deepcopy(body), float(now_ms())))
        sent = await self._calls.forward(rnd, body, human_first=True)
        record["forwarded"] = {s.name: outcome_text(o) for s, o in sent}
        answers = [o.answer if isinstance(o, Delivered) else None for _, o in sent]
        return {**acknowledgement(), RELAY_PERMITTED_KEY: answers}

    def _reject(self, rnd: Round, body: dict[str, Any], rationale: str | None, names: list[str],
                record: dict[str, Any]) -> dict[str, Any]:
        """The EO's ``rejectMessage``: ``/receiveRejection`` to the sender, ``/receiveLog`` to
        the human side (neither awaited), and a plain acknowledgement."""
        sender = eo_rules.sender_of(body, names)
        target = rnd.human if sender == rnd.human.name else rnd.agents[sender]
        told = {**body, "rationale": rationale}
        self._calls.background(target, ep.RECEIVE_REJECTION, told)
        self._calls.background(rnd.human, ep.RECEIVE_LOG, {**told, "permitted": False})
        record["permitted"], record["rationale"] = False, rationale
        log.info("round %s: %s blocked: %s", rnd.round_id, body.get("speaker"), rationale)
        return acknowledgement()
