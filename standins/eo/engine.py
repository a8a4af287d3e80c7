"""The stand-in Environment Orchestrator's behaviour, without the HTTP server around it.

It does what the room needs from the platform's EO (``humaine-platform.md``): it creates and
times rounds, judges every proposed message with :mod:`humaine_platform.rules` (nothing
here decides a rule), forwards permitted messages - to the agents without ``bid``, to the
human-side service with it - tells blocked senders, logs every proposal to the human side and
books an Accept only once the human side answered ``/confirmAccept`` with exactly
``{"status": "acknowledged"}``.

Two modes (``[standin] rules``). ``real_eo``, the default, stands in for the EO a venue runs:
it judges, answers, tells and books exactly as the platform EO does
(:mod:`humaine_platform.eo_rules`; its answer to ``/relayMessage`` is ``{"status":
"Acknowledged"}`` for a blocked message and adds ``allResponses`` for a permitted one; a
rejected ``/confirmAccept`` becomes "User rejected bid offer" to the seller; totals in the EO's
shape). ``documented`` (and ``current_eo``) judge with :mod:`humaine_platform.rules` and say
``permitted``/``rationale`` in the answer.

In both modes an Accept the human side declines is rejected as the platform EO rejects it ("User
rejected bid offer" to the seller, ``/receiveLog`` with ``permitted: false``) and never forwarded:
a seller's Accept with its bid on the human side's ``/receiveMessage`` always means a booked deal.

Where the real EO exits (unknown round, an agent speaking before the human, a bid without a
price, a human-side service that is down or fails ``/confirmAccept``), this one raises
:class:`StandinError` with an HTTP status and a readable reason and goes on. Unlike the real EO
it also gives up on a service that does not answer within ``[standin] request_timeout_s`` -
except on ``/confirmAccept``, which it waits for as the real EO does (without a timeout of its
own: up to ``[standin] confirm_wait_s``, an hour by default), since the buyer may take the whole
of ``[avatar] confirm_timeout_s`` to answer and several deals may wait in turn.

Deliberately unlike the real EO, which stores any allocation it is sent, ``/receiveHumanAllocation``
refuses one that needs more than the buyer was booked (``{"status": "Failed", "Reason": "the
allocation needs 1 more egg, ... than the buyer bought"}``, the shape of the EO's own refusal):
a laptop's round then never scores cakes the buyer could not bake. The check is the utility
generator's, ported (:func:`humaine_platform.buyer_utility.still_needed`). An allocation it
cannot read is stored as the EO stores it.

Round ids are the caller's (the room allocates them, as the platform's competition manager
does); like the platform's EO, the stand-in keeps only its own memory of the rounds it was given.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from humaine_platform import buyer_utility, eo_rules
from humaine_platform import endpoints as ep
from humaine_platform.client import RELAY_PERMITTED_KEY, Blocked, Delivered, Failed, HttpPoster, Outcome, RetryPolicy, Timeouts
from humaine_platform.models import (
    HUMAN,
    AgentMessage,
    Bid,
    Budget,
    InitializeRound,
    acknowledgement,
    confirm_accept_answer,
    describe_error,
    ms_to_iso,
    parse_message,
)
from humaine_platform.rules import R3_NO_HUMAN_RATIONALE, Entry, Proposal, TurnQueue, Verdict
from standins.eo.round_setup import ROUND_ID_PREFIX
from standins.eo.rounds import Ledger, Round, Service, SetupError, round_key
from standins.eo.settings import StandinSettings

log = logging.getLogger(__name__)

FORWARD_RETRIES = RetryPolicy(max_attempts=2, backoff_s=0.05, backoff_max_s=0.05)
"""A service that refuses connections is tried twice, then reported: a round cannot wait."""


SERVICE_FAILED = 424
"""Answer to a message the human-side service did not take (down, or failing /confirmAccept):
a 4xx (Failed Dependency) like every other refusal of the stand-in, where the platform EO exits."""

ALLOCATION_FAILED = "Failed"
"""``status`` of the platform EO's answer to an allocation it does not take (with a ``Reason``)."""
NO_ALLOCATION_BODY = "No body supplied."
"""The platform EO's ``Reason`` when the buyer has no totals (bought nothing) or sent no body."""
NUMBERED_ROUND = re.compile(rf"{re.escape(ROUND_ID_PREFIX)}([1-9][0-9]*)")
"""A round id of the day's numbering (``r1``, ``r2``, ...)."""


class StandinError(Exception):
    """A request the stand-in refuses (where the real EO would crash). ``detail`` rides along
    in the JSON answer."""

    def __init__(self, status_code: int, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.detail = detail

    def body(self) -> dict[str, Any]:
        return {"status": "error", "error": self.message, **self.detail}


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def _monotonic_ms() -> float:
    return time.monotonic() * 1000.0


def _shortfall(bought: dict[str, Any], products: Any) -> dict[str, float]:
    """Per good, how much more than ``bought`` the allocation ``products`` needs (the recipes
    and counting of the utility generator's ``checkIngredients``, ported). An allocation it
    cannot read needs nothing here: the platform EO stores whatever it gets."""
    try:
        return buyer_utility.still_needed(bought, buyer_utility.Allocation.from_products(products))
    except (TypeError, ValueError) as exc:
        log.info("an allocation that cannot be checked is stored as sent (%s)", exc)
        return {}


def _outcome_text(outcome: Outcome) -> str:
    if isinstance(outcome, Delivered):
        return "delivered"
    if isinstance(outcome, Failed):
        return f"failed: {outcome.reason}"
    return f"refused: {outcome.rationale}"


class StandinOrchestrator:
    """Rounds by id, and the EO's endpoints as coroutines."""

    def __init__(
        self,
        settings: StandinSettings,
        clock_ms: Callable[[], float] = _monotonic_ms,
    ) -> None:
        self.settings = settings
        self.clock_ms = clock_ms
        self.poster = HttpPoster(timeouts=self._timeouts(settings.request_timeout_s), retry=FORWARD_RETRIES)
        self.confirm_poster = HttpPoster(timeouts=self._timeouts(settings.confirm_wait_s), retry=FORWARD_RETRIES)
        """``/confirmAccept`` only: the buyer answers it, which takes seconds, not a service's
        milliseconds (the platform EO waits without end)."""
        self.rounds: dict[str, Round] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        """Calls the platform EO makes without waiting for them (logs, rejections)."""

    def _timeouts(self, answer_s: float) -> Timeouts:
        """A call connects within ``connect_timeout_s`` and is answered within ``answer_s``."""
        connect_s = self.settings.connect_timeout_s
        return Timeouts(connect_s=connect_s, read_s=answer_s, total_s=connect_s + answer_s)

    def _background(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        """Stop every round's timers and close the connection pool."""
        tasks = [r.task for r in self.rounds.values() if r.task is not None and not r.task.done()]
        tasks += [t for t in self._tasks if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.poster.aclose()
        await self.confirm_poster.aclose()

    # -- helpers -----------------------------------------------------------------------------
    def _round(self, round_id: object) -> Round:
        found = self.rounds.get(round_key(round_id))
        if found is None:
            known = ", ".join(sorted(self.rounds)) or "none"
            raise StandinError(
                404,
                f"unknown roundId {round_id!r} (known rounds: {known}); POST {ep.INITIALIZE_ROUND} first",
                roundId=round_id,
            )
        return found

    async def _post(self, service: Service, path: str, body: dict[str, Any]) -> Outcome:
        outcome = await self.poster.post(service.url, path, body, headers=service.headers)
        if not isinstance(outcome, Delivered):
            log.warning("%s %s%s: %s", service.name, service.url, path, _outcome_text(outcome))
        return outcome

    async def _confirm(self, rnd: Round, body: dict[str, Any]) -> Outcome:
        """``/confirmAccept`` to the human side, waited for up to ``confirm_wait_s``. A decline
        (``{"status": "rejected"}``) comes back as :class:`Blocked` with its answer: the buyer's
        no is an answer, not a problem, so only a failure is a warning."""
        log.info("round %s: %s's Accept waits for the human side's %s", rnd.round_id, body.get("speaker"), ep.CONFIRM_ACCEPT)
        human = rnd.human
        outcome = await self.confirm_poster.post(human.url, ep.CONFIRM_ACCEPT, body, headers=human.headers)
        if not isinstance(outcome, Delivered | Blocked):
            log.warning("%s %s%s: %s", human.name, human.url, ep.CONFIRM_ACCEPT, _outcome_text(outcome))
        return outcome

    # -- round set-up --------------------------------------------------------------------------
    def initialize(self, body: Any) -> Round:
        """``/initializeRound``: remember the round; nothing is sent until ``/startRound``."""
        if not isinstance(body, dict):
            raise StandinError(422, "the /initializeRound body must be a JSON object")
        try:
            setup = InitializeRound.model_validate(body)
        except ValidationError as exc:
            raise StandinError(422, f"invalid /initializeRound body: {describe_error(exc)}") from None
        existing = self.rounds.get(round_key(setup.roundId))
        if existing is not None and existing.phase not in ("initialized", "ended"):
            raise StandinError(409, f"round {setup.roundId!r} is running (phase {existing.phase})", roundId=setup.roundId)
        try:
            human = self._human_service(setup)
            agents = [Service.from_info(info, "agent") for info in setup.agents]
        except SetupError as exc:
            raise StandinError(422, f"invalid /initializeRound body: {exc}") from None
        if not agents:
            raise StandinError(422, "invalid /initializeRound body: 'agents' is empty")
        # the platform EO takes the budget from its appSettings.json, never from the round
        raw_budget = None if self.real_eo else body.get("humanBudget")
        try:
            budget = (
                Budget.model_validate(raw_budget)
                if raw_budget is not None
                else Budget(value=self.settings.human_budget, currentUnit=self.settings.currency)
            )
        except ValidationError as exc:
            raise StandinError(422, f"invalid humanBudget: {describe_error(exc)}") from None
        currency = budget.currentUnit or self.settings.currency
        rnd = Round(
            round_id=setup.roundId,
            setup=setup,
            agents={a.name: a for a in agents},
            human=human,
            durations=setup.durations,
            budget=budget.body(),
            queue=TurnQueue(self.settings.rule_settings(float(budget.value))),
            ledger=Ledger(currency),
        )
        if self.real_eo:
            rnd.eo_totals = eo_rules.Totals(float(budget.value), {})
        if existing is not None and existing.task is not None:
            existing.task.cancel()
        self.rounds[rnd.key] = rnd
        log.info(
            "round %s initialized: agents %s, human-side %s, durations %s",
            rnd.round_id, ", ".join(f"{a.name}={a.url}" for a in agents), human.url, setup.durations.body(),
        )
        return rnd

    @property
    def real_eo(self) -> bool:
        return self.settings.rules == "real_eo"

    def _human_service(self, setup: InitializeRound) -> Service:
        """The human-side service: the platform EO reads it from its own settings
        (``negotiatorsInfo``) and its ``/initializeRound`` body gives ``human`` only a
        ``utilityFunction``; a body that names a host and port is taken at its word."""
        info = setup.human if isinstance(setup.human, dict) else (setup.human.body() if setup.human else {})
        s = self.settings
        if info.get("host") and isinstance(info.get("port"), int):
            return replace(Service.from_info(info, "human"), token=s.human_token)
        found = Service.from_info(
            {"name": s.human_name, "host": s.services_host, "port": s.human_port,
             "utilityFunction": info.get("utilityFunction") or {}},
            "human",
        )
        return replace(found, token=s.human_token)

    def start(self, body: Any) -> Round:
        """``/startRound {"roundId"}``: run the warm-up, round and post timers in the background."""
        if not isinstance(body, dict) or "roundId" not in body:
            raise StandinError(422, 'the /startRound body must be {"roundId": ...}')
        rnd = self._round(body["roundId"])
        if rnd.phase != "initialized":
            raise StandinError(409, f"round {rnd.round_id!r} was already started (phase {rnd.phase})", roundId=rnd.round_id)
        rnd.phase = "warmup"
        rnd.task = asyncio.get_running_loop().create_task(self._run_round(rnd), name=f"round-{rnd.key}")
        return rnd

    async def _broadcast(self, rnd: Round, path: str, body: dict[str, Any], human: bool = True) -> None:
        services = list(rnd.agents.values()) + ([rnd.human] if human else [])
        outcomes = await asyncio.gather(*(self._post(s, path, body) for s in services))
        self._note_failures(rnd, path, services, outcomes)

    def _note_failures(self, rnd: Round, path: str, services: list[Service], outcomes: list[Outcome]) -> None:
        for service, outcome in zip(services, outcomes, strict=True):
            if not isinstance(outcome, Delivered):
                rnd.events.append({"path": path, "service": service.name, "outcome": _outcome_text(outcome), "at": _wall_ms()})

    async def _run_round(self, rnd: Round) -> None:
        """The EO's round life cycle, timed from the ``/startRound`` call."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        durations = rnd.durations
        currency = rnd.ledger.currency
        try:
            metadata = {"roundId": rnd.round_id, "durations": durations.body(), "humanBudget": rnd.budget}
            outcome = await self._post(rnd.human, ep.SEND_ROUND_METADATA, metadata)
            self._note_failures(rnd, ep.SEND_ROUND_METADATA, [rnd.human], [outcome])
            outcome = await self._post(rnd.human, ep.SET_UTILITY, rnd.human.set_utility_body(rnd.round_id, currency))
            self._note_failures(rnd, ep.SET_UTILITY, [rnd.human], [outcome])
            agents = list(rnd.agents.values())
            outcomes = await asyncio.gather(
                *(self._post(a, ep.SET_UTILITY, a.set_utility_body(rnd.round_id, currency)) for a in agents)
            )
            self._note_failures(rnd, ep.SET_UTILITY, agents, list(outcomes))

            # each phase lasts its length from the moment everyone has been told it started
            await self._phase(rnd, started + float(durations.warmUp) - loop.time())
            rnd.phase = "round"
            log.info("round %s: negotiation starts (%s s)", rnd.round_id, durations.round)
            start_body = {"roundId": rnd.round_id, "roundDuration": durations.round, "timestamp": ms_to_iso(_wall_ms())}
            await self._broadcast(rnd, ep.START_ROUND, start_body)
            round_started = loop.time()

            await self._phase(rnd, round_started + float(durations.round) - loop.time())
            rnd.phase = "post"
            log.info("round %s: negotiation over; post-round phase (%s s)", rnd.round_id, durations.post)
            await self._broadcast(rnd, ep.END_ROUND, {"roundId": rnd.round_id, "timestamp": ms_to_iso(_wall_ms())})
            post_started = loop.time()

            await self._phase(rnd, post_started + float(durations.post) - loop.time())
            rnd.phase = "ended"
            totals = {"roundId": rnd.round_id, "roundTotals": self._round_totals(rnd)}
            outcome = await self._post(rnd.human, ep.RECEIVE_ROUND_TOTALS, totals)
            self._note_failures(rnd, ep.RECEIVE_ROUND_TOTALS, [rnd.human], [outcome])
            log.info("round %s ended: %s", rnd.round_id, totals["roundTotals"])
        except asyncio.CancelledError:
            log.info("round %s stopped in phase %s", rnd.round_id, rnd.phase)
            raise
        except Exception:  # a bug here must end the round, not the service
            log.exception("round %s failed in phase %s", rnd.round_id, rnd.phase)
        finally:
            rnd.phase = "ended"

    @staticmethod
    async def _phase(rnd: Round, seconds: float) -> None:
        """Let the current phase run ``seconds``, or until the operator ends it (:meth:`end_phase`)."""
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
            await asyncio.wait_for(rnd.skip.wait(), max(0.0, seconds))
        rnd.skip.clear()

    # -- the operator's End round ---------------------------------------------------------------
    def end_phase(self, body: Any) -> Round:
        """``/endRound {"roundId"}``: end the current phase now. Ending the negotiation leads to
        the post-round phase (the buyer still saves an allocation), ending that to the totals."""
        if not isinstance(body, dict) or "roundId" not in body:
            running = [r for r in self.rounds.values() if r.phase in ("warmup", "round", "post")]
            if not running:
                raise StandinError(409, "no round is running")
            rnd = running[-1]
        else:
            rnd = self._round(body["roundId"])
        if rnd.phase not in ("warmup", "round", "post"):
            raise StandinError(409, f"round {rnd.round_id!r} is not running (phase {rnd.phase})", roundId=rnd.round_id)
        log.info("round %s: the operator ends the %s phase", rnd.round_id, rnd.phase)
        rnd.skip.set()
        return rnd

    def free_round_id(self) -> str:
        """The round id ``--auto-round`` takes: one past the highest ``rN`` this process knows
        (``r1`` when it knows none). The room allocates its own ids (its ledger knows the day's);
        the stand-in, like the platform's EO, keeps only its own memory."""
        numbers = [int(found.group(1)) for used in self.rounds if (found := NUMBERED_ROUND.fullmatch(used))]
        return f"{ROUND_ID_PREFIX}{max(numbers, default=0) + 1}"

    def _round_totals(self, rnd: Round) -> dict[str, Any]:
        if rnd.eo_totals is None:
            return rnd.ledger.totals(rnd.agents)
        # the EO asks its utility generator; a seller's utility here is its margin, the buyer's
        # the utility generator's rating of the saved allocation (its buyer rules, ported)
        ledger = rnd.ledger.totals(rnd.agents)
        utilities = {name: entry.get("utility") for name, entry in ledger.items() if name in rnd.agents}
        utilities[HUMAN] = self._human_utility(rnd)
        return rnd.eo_totals.summary(list(rnd.agents), utilities)

    def _human_utility(self, rnd: Round) -> dict[str, Any] | None:
        """What the utility generator would answer the EO for the buyer: the value of the saved
        allocation (none saved: of nothing, as the EO's ``products: {}``)."""
        assert rnd.eo_totals is not None
        human = rnd.eo_totals.by_name.get(HUMAN)
        if human is None:
            return None
        function = rnd.human.utility
        try:
            value = buyer_utility.utility_value(buyer_utility.parse_utility(function), human.get("allocation") or {})
        except ValueError as exc:
            log.warning("round %s: the buyer's allocation cannot be rated (%s)", rnd.round_id, exc)
            return None
        return {"currencyUnit": function.get("currencyUnit", rnd.ledger.currency), "value": value}

    # -- messages ------------------------------------------------------------------------------
    async def relay(self, body: Any) -> dict[str, Any]:
        """``/relayMessage``: judge, log, tell or forward. Returns the JSON answer; raises
        :class:`StandinError` for what the real EO cannot survive."""
        if self.real_eo:
            return await self._relay_as_the_eo(body)
        arrived = self.clock_ms()
        if not isinstance(body, dict):
            raise StandinError(422, "a message body must be a JSON object")
        if "roundId" not in body:
            raise StandinError(422, "roundId is required on /relayMessage (the platform EO exits without it)")
        rnd = self._round(body["roundId"])
        if not rnd.relaying:
            raise StandinError(
                409,
                f"round {rnd.round_id!r} is in phase {rnd.phase!r}; messages are relayed only while "
                f"the round runs (after the warm-up, before /endRound)",
                roundId=rnd.round_id,
                phase=rnd.phase,
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

        verdict = rnd.queue.propose(Proposal.from_body(body, arrived))
        entry = rnd.queue.entries[-1]
        record: dict[str, Any] = {
            **body,
            "permitted": verdict.permitted,
            "rationale": verdict.rationale,
            "rule": verdict.rule,
            "receivedAt": _wall_ms(),
        }
        rnd.history.append(record)
        if verdict.permitted and isinstance(message, AgentMessage) and message.bid is not None and message.bid.is_accept:
            # the platform EO's order: the human side confirms, then the verdict is logged
            verdict = await self._book_or_decline(rnd, body, message.bid, entry, record)
        log_outcome = await self._post(rnd.human, ep.RECEIVE_LOG, {**body, "permitted": verdict.permitted, "rationale": verdict.rationale})
        record["log"] = _outcome_text(log_outcome)
        if not verdict.permitted:
            return await self._reject(rnd, body, verdict, record)
        return await self._forward(rnd, body, record)

    async def _book_or_decline(self, rnd: Round, body: dict[str, Any], bid: Bid, entry: Entry, record: dict[str, Any]) -> Verdict:
        """``/confirmAccept`` for a permitted Accept (``entry`` in the round's queue): booked on
        the human side's yes (the verdict stands), rejected as the platform EO rejects it on
        anything else ("User rejected bid offer"), so a declined Accept is never forwarded; one
        not booked then counts neither as said nor as spent. Raises :class:`StandinError` (424)
        when the human side fails to answer, where the platform EO exits."""
        seller = entry.proposal.speaker
        outcome = await self._confirm(rnd, body)
        answer = outcome.answer if isinstance(outcome, Delivered | Blocked) else None
        record["booked"] = False
        if not isinstance(outcome, Delivered | Blocked):
            failed = Verdict(False, f"the human side failed {ep.CONFIRM_ACCEPT}")
            record["permitted"], record["rationale"], record["rule"] = False, failed.rationale, None
            rnd.queue.overrule(entry, failed)
            raise StandinError(
                SERVICE_FAILED,
                f"the human-side service {rnd.human.name} failed {ep.CONFIRM_ACCEPT} ({_outcome_text(outcome)}); the deal "
                f"is not booked (the platform EO exits on this)",
                permitted=False,
                booked=False,
                roundId=rnd.round_id,
            )
        if isinstance(answer, dict) and answer.get("status") == confirm_accept_answer()["status"]:
            rnd.ledger.book(seller, bid)
            record["booked"] = True
            log.info("round %s: deal booked: %s sells %s", rnd.round_id, seller, bid.body())
            return Verdict(True)
        log.info("round %s: the human side declined %s's Accept (%s)", rnd.round_id, seller, answer)
        declined = Verdict(False, eo_rules.USER_REJECTED)
        record["permitted"], record["rationale"], record["rule"] = False, declined.rationale, None
        rnd.queue.overrule(entry, declined)
        return declined

    async def _reject(self, rnd: Round, body: dict[str, Any], verdict: Verdict, record: dict[str, Any]) -> dict[str, Any]:
        speaker = body["speaker"]
        target = rnd.human if speaker == HUMAN else rnd.agents[speaker]
        outcome = await self._post(target, ep.RECEIVE_REJECTION, {**body, "rationale": verdict.rationale})
        record["rejection"] = _outcome_text(outcome)
        log.info("round %s: %s blocked (%s: %s)", rnd.round_id, speaker, verdict.rule, verdict.rationale)
        answer = acknowledgement(permitted=False, rationale=verdict.rationale, rule=verdict.rule, roundId=rnd.round_id)
        if "booked" in record:
            answer["booked"] = record["booked"]
        if verdict.rationale == R3_NO_HUMAN_RATIONALE:
            # The platform EO exits here; say so plainly.
            raise StandinError(
                409,
                f"{speaker} spoke before the round's first Human message (the platform EO exits on this)",
                permitted=False,
                rationale=verdict.rationale,
                rule=verdict.rule,
                roundId=rnd.round_id,
            )
        return answer

    async def _forward(self, rnd: Round, body: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
        """A permitted message (an Accept only once booked) to the agents without its bid and to
        the human side with it."""
        to_agents = {k: v for k, v in body.items() if k != "bid"}
        services = [*rnd.agents.values(), rnd.human]
        bodies = [to_agents] * len(rnd.agents) + [body]
        outcomes = await asyncio.gather(*(self._post(s, ep.RECEIVE_MESSAGE, b) for s, b in zip(services, bodies, strict=True)))
        forwarded = {s.name: _outcome_text(o) for s, o in zip(services, outcomes, strict=True)}
        record["forwarded"] = forwarded
        answer = acknowledgement(permitted=True, rationale=None, roundId=rnd.round_id, forwarded=forwarded)
        if "booked" in record:
            answer["booked"] = record["booked"]
        human_outcome = outcomes[-1]
        if not isinstance(human_outcome, Delivered):
            raise StandinError(
                SERVICE_FAILED,
                f"the human-side service {rnd.human.name} at {rnd.human.url} did not take the message "
                f"({_outcome_text(human_outcome)}); the platform EO exits on this",
                **{k: v for k, v in answer.items() if k != "status"},
            )
        return answer

    # -- real_eo mode -----------------------------------------------------------------------------
    async def _relay_as_the_eo(self, body: Any) -> dict[str, Any]:
        """``/relayMessage`` as the platform EO does it, step by step (its
        ``environment-orchestrator.js``); :class:`StandinError` where it would exit."""
        arrived = float(_wall_ms())
        if not isinstance(body, dict):
            raise StandinError(422, "a message body must be a JSON object")
        rnd = self.rounds.get(round_key(body.get("roundId")))
        if rnd is None or rnd.phase in ("initialized", "ended") or rnd.eo_totals is None:
            state = "not started" if rnd is not None and rnd.phase == "initialized" else "unknown"
            raise StandinError(404, f"roundId {body.get('roundId')!r} is {state} (the platform EO exits on this)",
                               roundId=body.get("roundId"))
        names = [rnd.human.name, *rnd.agents]
        totals = rnd.eo_totals
        try:
            permitted, rationale = eo_rules.allow_message(
                body, totals.budget, rnd.eo_queue, self.settings.response_time_limit_s * 1000,
                self.settings.can_talk_at_once, arrived,
            )
            problem = eo_rules.bid_problem(body)
            if problem is not None:
                permitted, rationale = False, problem
            if not (eo_rules.check_message(body) and permitted):
                eo_rules.sender_of(body, names)
        except eo_rules.EOWouldExit as exc:
            raise StandinError(409 if "spoke before" in str(exc) else 422, f"{exc} (the platform EO exits on this)") from None
        record: dict[str, Any] = {**body, "permitted": permitted, "rationale": rationale, "receivedAt": int(arrived)}
        rnd.history.append(record)
        if not (eo_rules.check_message(body) and permitted):
            return await self._reject_as_the_eo(rnd, body, rationale, names, record)

        bid = body.get("bid") if isinstance(body.get("bid"), dict) else None
        if bid is not None and bid.get("type") == eo_rules.BOOKED_TYPE:
            outcome = await self._confirm(rnd, body)
            answer = outcome.answer if isinstance(outcome, Delivered | Blocked) else None
            if not isinstance(answer, dict):
                raise StandinError(
                    SERVICE_FAILED,
                    f"the human-side service {rnd.human.name} failed /confirmAccept ({_outcome_text(outcome)}); "
                    f"the deal is not booked (the platform EO exits on this)",
                )
            if answer.get("status") != confirm_accept_answer()["status"]:
                record["booked"] = False
                return await self._reject_as_the_eo(rnd, body, eo_rules.USER_REJECTED, names, record)
            totals.book(body)
            with contextlib.suppress(ValidationError):
                rnd.ledger.book(str(body.get("speaker")), Bid.model_validate(bid))
            record["booked"] = True
        self._background(self._post(rnd.human, ep.RECEIVE_LOG, {**body, "permitted": True, "rationale": None}))
        rnd.eo_queue.append(eo_rules.Queued(json.loads(json.dumps(body)), float(_wall_ms())))
        to_agents = {k: v for k, v in body.items() if k != "bid"}
        services = [rnd.human, *rnd.agents.values()]
        bodies = [body] + [to_agents] * len(rnd.agents)
        outcomes = await asyncio.gather(*(self._post(s, ep.RECEIVE_MESSAGE, b) for s, b in zip(services, bodies, strict=True)))
        record["forwarded"] = {s.name: _outcome_text(o) for s, o in zip(services, outcomes, strict=True)}
        answers = [o.answer if isinstance(o, Delivered) else None for o in outcomes]
        return {**acknowledgement(), RELAY_PERMITTED_KEY: answers}

    async def _reject_as_the_eo(
        self, rnd: Round, body: dict[str, Any], rationale: str | None, names: list[str], record: dict[str, Any]
    ) -> dict[str, Any]:
        """The EO's ``rejectMessage``: ``/receiveRejection`` to the sender, ``/receiveLog`` to
        the human side (neither awaited), and a plain acknowledgement."""
        sender = eo_rules.sender_of(body, names)
        target = rnd.human if sender == rnd.human.name else rnd.agents[sender]
        told = {**body, "rationale": rationale}
        self._background(self._post(target, ep.RECEIVE_REJECTION, told))
        self._background(self._post(rnd.human, ep.RECEIVE_LOG, {**told, "permitted": False}))
        record["permitted"], record["rationale"] = False, rationale
        log.info("round %s: %s blocked: %s", rnd.round_id, body.get("speaker"), rationale)
        return acknowledgement()

    # -- views ---------------------------------------------------------------------------------
    def view_queue(self, round_id: object) -> Any:
        if self.real_eo:
            rnd = self._known_to_the_eo(round_id)
            return None if rnd.phase == "initialized" else [q.view() for q in rnd.eo_queue]
        rnd = self._round(round_id)
        return {"roundId": rnd.round_id, "phase": rnd.phase, "queue": list(rnd.history), "failures": list(rnd.events)}

    def view_totals(self, round_id: object) -> Any:
        if self.real_eo:
            rnd = self._known_to_the_eo(round_id)
            return None if rnd.eo_totals is None else rnd.eo_totals.by_name
        rnd = self._round(round_id)
        return {"roundId": rnd.round_id, "phase": rnd.phase, "roundTotals": rnd.ledger.totals(rnd.agents)}

    def human_allocation(self, body: Any) -> dict[str, Any]:
        """``/receiveHumanAllocation``: the buyer's allocation joins its totals; answered
        ``Failed`` (200) when the human bought nothing, as the platform EO does, and - unlike
        it - when the allocation needs more than the buyer was booked, with the shortfall."""
        round_id = body.get("roundId") if isinstance(body, dict) else None
        rnd = self._round(round_id)
        human = rnd.eo_totals.by_name.get(HUMAN) if rnd.eo_totals is not None else None
        if human is None or not isinstance(body, dict):
            return {"roundId": round_id, "status": ALLOCATION_FAILED, "Reason": NO_ALLOCATION_BODY}
        payload = body.get("payload")
        shortfall = _shortfall(human.get("quantity") or {}, payload)
        if shortfall:
            # :g: whole units as "2", ounces as "1.5", float dust (0.30000000000000004) as "0.3"
            reason = "the allocation needs " + ", ".join(f"{amount:g} more {good}" for good, amount in shortfall.items())
            reason += " than the buyer bought"
            log.info("round %s: allocation refused: %s", rnd.round_id, reason)
            return {"roundId": round_id, "status": ALLOCATION_FAILED, "Reason": reason}
        human["allocation"] = payload
        return {"roundId": round_id, "status": ep.ACK_STATUS}

    def _known_to_the_eo(self, round_id: object) -> Round:
        """The round, or a refusal for an unknown one. The platform EO answers 500 there (and
        goes on); the stand-in answers 404, a client error as it is, which the round check reads
        the same way (any HTTP error: unknown) - no input gets a 5xx from our services."""
        rnd = self.rounds.get(round_key(round_id))
        if rnd is None or rnd.phase == "ended":
            raise StandinError(404, f"unknown roundId {round_id!r}", roundId=round_id)
        return rnd

    def summary(self) -> dict[str, Any]:
        """``/health``: the stand-in's mark (the room ends a phase here, where it ends a round on
        the platform's EO) and its rounds' phases."""
        return {"status": "ok", ep.STANDIN_MARK: True, "rounds": {key: r.phase for key, r in self.rounds.items()}}
