"""The asynchronous HTTP client of the EO (and of agents, for direct delivery).

What matters here is never sending an utterance twice and never hanging:

* every call has a timeout (connect, read, write, pool) and an overall deadline;
* a call is retried, with exponential backoff, **only** when it cannot have reached the
  server: the TCP connection was refused or could not be made. Once a byte of the request may
  have been written (a read timeout, a reset mid-answer, an HTTP error status), the outcome is
  final - the EO may have forwarded the message, and a duplicate human utterance would be
  blocked by R0 or, worse, make the agents answer twice;
* a deadline bounds the whole request, not only its start: an attempt gets at most the time
  left, and one still unanswered then is abandoned and its connection closed;
* every outcome is a value, never an exception: :class:`Delivered`, :class:`Blocked` (the EO
  refused it, with its rationale), :class:`Undelivered` (deliberately not sent, with the
  reason) or :class:`Failed` (with a reason and whether the request may have reached the
  server: :attr:`Failed.uncertain`).

Closing the connection does not take back bytes already written: a paused EO reads them when
it resumes (tried: a reset connection too). So :meth:`EOClient.relay_message` first asks the
EO about the round (``GET /viewQueue/{roundId}``, read-only) within the same deadline and
sends the message only once the EO has answered that: an EO that is paused or gone never gets
a message it would read after the deadline. Only a stall in the instant between the two
requests can still deliver late, and such a message is recorded as *may have been delivered*.

The current EO answers ``/relayMessage`` with ``{"status": "Acknowledged"}`` whether it
permitted the message or blocked it; only a permitted one carries ``allResponses`` (the
forwarded calls' answers). The reason of a block reaches the human-side service
(``/receiveRejection``, ``/receiveLog``), not the sender's answer: :class:`Blocked` then has an
empty rationale. The stand-in in its documented mode puts ``permitted``/``rationale`` in its
answer, which is read too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from typing import Any, Final, Literal
from urllib.parse import quote

import httpx

from humaine_platform import endpoints as ep
from humaine_platform.answers import EOProbe, PlatformCallError
from humaine_platform.models import PlatformModel, RoundId
from humaine_platform.tls import client_tls

log = logging.getLogger(__name__)

RELAY_PERMITTED_KEY = "allResponses"
"""Only in the current EO's answer to a permitted ``/relayMessage``."""


@dataclass(frozen=True)
class Delivered:
    """The server took the request (2xx with a JSON answer)."""

    answer: Any
    attempts: int = 1
    latency_ms: float = 0.0
    status_code: int = 200
    kind: Literal["delivered"] = "delivered"


@dataclass(frozen=True)
class Blocked:
    """The EO received the message and refused it (a turn-taking rule)."""

    rationale: str
    answer: Any = None
    attempts: int = 1
    latency_ms: float = 0.0
    kind: Literal["blocked"] = "blocked"


ACTED_ON_STATUSES = frozenset({HTTPStatus.FAILED_DEPENDENCY})
"""4xx answers that do not refuse the request: the server acted on it and something it depends
on failed (the stand-in EO answers 424 when its human-side service dies mid-relay, after it
queued the message and forwarded it to the agents). Such a failure may have been delivered."""


@dataclass(frozen=True)
class Failed:
    """The message was not (known to be) delivered. ``reached`` is True when the request may
    have reached the server - such a failure is never retried."""

    reason: str
    reached: bool = False
    attempts: int = 1
    latency_ms: float = 0.0
    status_code: int | None = None
    expired: bool = False
    """Not sent (any more) because its deadline came first."""
    kind: Literal["failed"] = "failed"

    @property
    def uncertain(self) -> bool:
        """The server may have acted on it: it may have been delivered (no answer in time, a
        connection lost mid-answer, a server error, a failed dependency or an unreadable
        answer). A refusal (any other 4xx) or a connection that never existed is a plain failure."""
        if not self.reached or self.status_code is None:
            return self.reached
        return not 400 <= self.status_code < 500 or self.status_code in ACTED_ON_STATUSES


@dataclass(frozen=True)
class Undelivered:
    """Deliberately not sent: the EO does not know the round, or did not answer whether it does."""

    reason: str
    attempts: int = 0
    latency_ms: float = 0.0
    kind: Literal["undelivered"] = "undelivered"


Outcome = Delivered | Blocked | Failed | Undelivered


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries for requests that cannot have been sent."""

    max_attempts: int = 20
    backoff_s: float = 0.05
    backoff_max_s: float = 0.5

    def delay(self, attempt: int) -> float:
        """Pause after failed attempt number ``attempt`` (1-based)."""
        return min(self.backoff_s * 2.0 ** (attempt - 1), self.backoff_max_s)


MIN_ATTEMPT_S = 0.05
"""An attempt needs at least this much of its deadline left: one cut short sooner cannot tell
"never connected" from "sent, no answer yet", and would record a message that was never sent as
perhaps delivered (seen on a loaded machine: "no answer ... after 0.00 s")."""


@dataclass(frozen=True)
class Timeouts:
    connect_s: float = 0.5
    read_s: float = 2.0
    write_s: float = 1.0
    pool_s: float = 0.5
    total_s: float = 3.0
    """Upper bound of one attempt, whatever happens inside httpx."""

    def httpx(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect_s, read=self.read_s, write=self.write_s, pool=self.pool_s)


def _blocked_from(answer: Any) -> str | None:
    """The rationale when an answer says the message was refused, else None."""
    if not isinstance(answer, dict):
        return None
    if answer.get("permitted") is False:
        return str(answer.get("rationale") or "blocked by the EO")
    status = str(answer.get("status", "")).lower()
    if status in ("rejected", "blocked"):
        return str(answer.get("rationale") or status)
    return None


@dataclass
class HttpPoster:
    """POSTs JSON bodies with the retry and timeout rules above. One connection pool."""

    timeouts: Timeouts = field(default_factory=Timeouts)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    transport: httpx.AsyncBaseTransport | None = None
    _client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeouts.httpx(), transport=self.transport, verify=client_tls())
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def post(
        self,
        base_url: str,
        path: str,
        body: PlatformModel | dict[str, Any] | None,
        *,
        deadline: float | None = None,
        method: str = "POST",
        headers: dict[str, str] | None = None,
    ) -> Outcome:
        """Send ``body`` to ``base_url + path`` (a GET's query parameters; ``None``: none). ``deadline`` (``time.monotonic()``) bounds the
        retries: no attempt starts after it (one that started before it may finish).
        ``headers`` go with every attempt (a service's bearer token)."""
        payload = body.body() if isinstance(body, PlatformModel) else body
        url = base_url.rstrip("/") + path
        started = time.monotonic()
        attempt = 0
        last_reason = ""
        while True:
            attempt += 1
            if deadline is not None and deadline - time.monotonic() < MIN_ATTEMPT_S:
                reason = f"not sent before its deadline ({last_reason or 'no attempt made'})"
                return Failed(reason, reached=False, attempts=attempt - 1, latency_ms=_ms_since(started), expired=True)
            # the deadline bounds the whole attempt: what is not answered by then is abandoned
            budget = self.timeouts.total_s
            if deadline is not None:
                budget = min(budget, deadline - time.monotonic())
            outcome, retryable = await self._attempt(method, url, payload, budget, started, attempt, headers)
            if not retryable or attempt >= self.retry.max_attempts:
                return outcome
            assert isinstance(outcome, Failed)
            last_reason = outcome.reason
            pause = self.retry.delay(attempt)
            if deadline is not None and time.monotonic() + pause + MIN_ATTEMPT_S > deadline:
                return Failed(
                    f"not sent before its deadline ({last_reason})",
                    reached=False,
                    attempts=attempt,
                    latency_ms=_ms_since(started),
                    expired=True,
                )
            log.debug("%s %s: %s; retrying in %.2f s", method, url, last_reason, pause)
            await asyncio.sleep(pause)

    async def _attempt(
        self, method: str, url: str, payload: Any, budget: float, started: float, attempt: int,
        headers: dict[str, str] | None = None,
    ) -> tuple[Outcome, bool]:
        """One request. Returns the outcome and whether it may be retried."""
        attempt_started = time.monotonic()
        try:
            if method == "GET":
                request = self._http().get(url, params=payload or None, headers=headers)
            else:
                request = self._http().request(method, url, json=payload, headers=headers)
            response = await asyncio.wait_for(request, budget)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            # Nothing was written: the TCP connection does not exist. Safe to try again.
            return Failed(f"cannot connect to {url}: {_describe(exc)}", False, attempt, _ms_since(started)), True
        except httpx.PoolTimeout as exc:
            return Failed(f"no free connection to {url}: {_describe(exc)}", False, attempt, _ms_since(started)), True
        except (asyncio.TimeoutError, TimeoutError, httpx.TimeoutException) as exc:
            return (
                Failed(
                    # the time it really waited: the client's own read timeout may end it before the budget
                    f"no answer from {url} in time ({_describe(exc) if str(exc) else 'gave up'} "
                    f"after {time.monotonic() - attempt_started:.2f} s)",
                    True, attempt, _ms_since(started),
                ),
                False,
            )
        except httpx.HTTPError as exc:
            return Failed(f"{url}: {_describe(exc)}", True, attempt, _ms_since(started)), False
        latency = _ms_since(started)
        if not 200 <= response.status_code < 300:
            snippet = response.text[:200].strip()
            return (
                Failed(
                    f"{url} answered HTTP {response.status_code}: {snippet}",
                    True,
                    attempt,
                    latency,
                    response.status_code,
                ),
                False,
            )
        try:
            answer = response.json() if response.content else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return (
                Failed(
                    f"{url} answered HTTP {response.status_code} with a body that is not JSON: "
                    f"{response.text[:200]!r}",
                    True,
                    attempt,
                    latency,
                    response.status_code,
                ),
                False,
            )
        rationale = _blocked_from(answer)
        if rationale is not None:
            return Blocked(rationale, answer, attempt, latency), False
        return Delivered(answer, attempt, latency, response.status_code), False


class EOClient:
    """The Environment Orchestrator's HTTP API."""

    def __init__(self, base_url: str, poster: HttpPoster | None = None, verify_round: bool = True) -> None:
        self.base_url = base_url.rstrip("/")
        self.poster = poster or HttpPoster()
        self.verify_round = verify_round
        """Ask the EO whether it knows the round before relaying (the current EO exits on a
        ``/relayMessage`` for a round it does not know, e.g. after a restart)."""

    async def aclose(self) -> None:
        await self.poster.aclose()

    async def relay_message(self, message: PlatformModel | dict[str, Any], deadline: float | None = None) -> Outcome:
        """Propose an utterance; the EO applies its rules and forwards it if permitted. With
        :attr:`verify_round`, a message for a round the EO does not know (or that does not
        answer in time) is :class:`Undelivered`, never sent."""
        body = message.body() if isinstance(message, PlatformModel) else message
        started = time.monotonic()
        checks = 0
        if self.verify_round:
            round_id = body.get("roundId")
            check = await self.view_queue(round_id, deadline) if round_id is not None else None
            refusal = _round_refusal(round_id, check)
            if refusal is not None:
                return refusal
            checks = check.attempts if check is not None else 0
        outcome = read_relay_answer(await self.poster.post(self.base_url, ep.RELAY_MESSAGE, body, deadline=deadline))
        # attempts and latency of the whole delivery, the round check included
        return replace(outcome, attempts=outcome.attempts + checks, latency_ms=_ms_since(started))

    async def check_round(self, round_id: object, deadline: float | None = None) -> Undelivered | Failed | None:
        """``None`` when the EO runs round ``round_id``; otherwise why nothing may be relayed."""
        check = await self.view_queue(round_id, deadline) if round_id is not None else None
        return _round_refusal(round_id, check)

    async def initialize_round(self, body: PlatformModel | dict[str, Any]) -> Outcome:
        """``/initializeRound``: the whole round (or, after ``/endRound``, only ``roundId`` and
        ``serviceMap``: :func:`keep_alive_body`)."""
        return await self.poster.post(self.base_url, ep.INITIALIZE_ROUND, body)

    async def start_round(self, round_id: RoundId) -> Outcome:
        """``/startRound {"roundId"}`` of an initialized round. The platform's EO answers only
        after it has sent ``/sendRoundMetadata`` and every ``/setUtility``."""
        return await self.poster.post(self.base_url, ep.START_ROUND, {"roundId": round_id})

    async def start_standalone(self, body: PlatformModel | dict[str, Any]) -> Outcome:
        """``/startRound`` with the whole round, as an EO with ``"standalone": true`` takes it
        (competition-ui's Start; that EO calls every round ``"true"``)."""
        return await self.poster.post(self.base_url, ep.START_ROUND, body)

    async def end_round(self, round_id: RoundId) -> Outcome:
        """``/endRound {"roundId"}`` (competition-ui's End; the stand-in ends the current phase)."""
        return await self.poster.post(self.base_url, ep.END_ROUND, {"roundId": round_id})

    async def save_allocation(self, round_id: RoundId, products: dict[str, Any]) -> Outcome:
        """``/receiveHumanAllocation`` with competition-ui's body, ``{"roundId", "payload": products}``."""
        return await self.poster.post(self.base_url, ep.RECEIVE_HUMAN_ALLOCATION, {"roundId": round_id, "payload": products})

    async def probe(self) -> EOProbe:
        """Whether the EO answers (``GET /health``: any HTTP answer proves it is there, the
        platform's EO serves none) and whether it is the suite's stand-in, which says so there."""
        outcome = await self.poster.post(self.base_url, ep.HEALTH, None, method="GET")
        if isinstance(outcome, Failed) and outcome.status_code is None:
            return EOProbe(False, False, outcome.reason)
        answer = outcome.answer if isinstance(outcome, Delivered) else None
        standin = isinstance(answer, dict) and answer.get(ep.STANDIN_MARK) is True
        status = outcome.status_code if isinstance(outcome, Delivered | Failed) else None
        return EOProbe(True, standin, f"answers (HTTP {status})")

    async def view_queue(self, round_id: object, deadline: float | None = None) -> Outcome:
        """The EO's message queue of a round (GET; the answer is in :attr:`Delivered.answer`)."""
        return await self.poster.post(self.base_url, _round_path(ep.VIEW_QUEUE, round_id), None,
                                      deadline=deadline, method="GET")

    async def view_totals(self, round_id: object) -> Outcome:
        return await self.poster.post(self.base_url, _round_path(ep.VIEW_TOTALS, round_id), None, method="GET")


UNKNOWN_ROUND_STATUSES: Final = frozenset({404, 500})
"""What the EOs answer ``/viewTotals/{roundId}`` for a round they do not have: the stand-in 404,
the platform's EO 500 (it reads the totals of an undefined round). Any other error is no word
on the round (a proxy's 502, a refused token)."""


def round_known(outcome: Outcome) -> bool | None:
    """What an answer to ``/viewTotals/{roundId}`` says of the round: True, the EO has it; False,
    the EO says it has no such round (:data:`UNKNOWN_ROUND_STATUSES`); None, no word on it (the
    EO does not answer, or answers another error)."""
    if not isinstance(outcome, Failed):
        return True
    if outcome.status_code is None:
        return None
    if 200 <= outcome.status_code < 300:
        return True
    return False if outcome.status_code in UNKNOWN_ROUND_STATUSES else None


def answer_of(outcome: Outcome, where: str) -> Any:
    """The answer of a delivered call, or :class:`PlatformCallError` saying why there is none
    (``where``: the service and path, for the line)."""
    if isinstance(outcome, Delivered | Blocked):
        return outcome.answer
    reason = outcome.reason if isinstance(outcome, Failed | Undelivered) else repr(outcome)
    raise PlatformCallError(f"{where}: {reason}")


def _round_refusal(round_id: object, check: Outcome | None) -> Undelivered | Failed | None:
    """What the answer to ``GET /viewQueue/{roundId}`` says about relaying to that round. The
    current EO answers its queue (a list) for a started round, an empty body for one
    initialized but not started, and 500 for an unknown one (it survives that, unlike a
    ``/relayMessage`` for it)."""
    if round_id is None or check is None:
        return Undelivered("no roundId")
    if isinstance(check, Delivered):
        answer = check.answer
        if isinstance(answer, list) or (isinstance(answer, dict) and "queue" in answer):
            return None
        return Undelivered(f"round {round_id!r} is not started at the EO (its queue is {answer!r}); not relayed",
                           check.attempts, check.latency_ms)
    if isinstance(check, Failed) and check.status_code is not None:
        return Undelivered(
            f"round {round_id!r} is unknown to the EO (GET {ep.VIEW_QUEUE}/{round_id} answered HTTP "
            f"{check.status_code}); not relayed", check.attempts, check.latency_ms,
        )
    if isinstance(check, Failed) and check.reached:
        return Undelivered(f"the EO did not answer the round check ({check.reason}); not relayed",
                           check.attempts, check.latency_ms)
    if isinstance(check, Failed | Undelivered):
        return check
    return Undelivered(f"unexpected answer to the round check: {check!r}")


def _round_path(path: str, round_id: object) -> str:
    return f"{path}/{quote(str(round_id), safe='')}"


def read_relay_answer(outcome: Outcome) -> Outcome:
    """The true outcome of a ``/relayMessage``: the current EO acknowledges a blocked message
    like a permitted one, but only a permitted one's answer carries ``allResponses``. A blocked
    one becomes :class:`Blocked` with an empty rationale (the EO tells the reason to the
    human-side service, which publishes it: :class:`workers.runtime.messages.EOVerdict`)."""
    if not isinstance(outcome, Delivered) or not isinstance(outcome.answer, dict):
        return outcome
    answer = outcome.answer
    if RELAY_PERMITTED_KEY in answer or "permitted" in answer:
        return outcome
    return Blocked("", answer, outcome.attempts, outcome.latency_ms)


async def fan_out(
    poster: HttpPoster,
    agent_urls: dict[str, str],
    message: PlatformModel | dict[str, Any],
    deadline: float | None = None,
) -> dict[str, Outcome]:
    """The platform's original design: the message straight to every agent's
    ``/receiveMessage``, concurrently. Returns each agent's outcome."""
    names = list(agent_urls)
    results = await asyncio.gather(
        *(poster.post(agent_urls[name], ep.RECEIVE_MESSAGE, message, deadline=deadline) for name in names)
    )
    return dict(zip(names, results, strict=True))


def combine(outcomes: dict[str, Outcome]) -> Outcome:
    """One outcome for a fan-out: delivered only if every agent took it."""
    if not outcomes:
        return Failed("no agent to deliver to", reached=False, attempts=0)
    delivered = {name: o for name, o in outcomes.items() if isinstance(o, Delivered)}
    failed = {name: o for name, o in outcomes.items() if not isinstance(o, Delivered)}
    attempts = max(o.attempts for o in outcomes.values())
    latency = max(o.latency_ms for o in outcomes.values())
    if not failed:
        return Delivered({name: o.answer for name, o in delivered.items()}, attempts, latency)
    reasons = "; ".join(
        f"{name}: {'blocked: ' + o.rationale if isinstance(o, Blocked) else o.reason}" for name, o in failed.items()
    )
    reached = any(not isinstance(o, Failed) or o.reached for o in outcomes.values())
    expired = not reached and all(isinstance(o, Failed) and o.expired for o in failed.values())
    if delivered:
        reasons += f" (delivered to {', '.join(sorted(delivered))})"
    return Failed(reasons, reached=reached, attempts=attempts, latency_ms=latency, expired=expired)


def _ms_since(started: float) -> float:
    return (time.monotonic() - started) * 1000.0


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 200 else text[:200] + "..."
