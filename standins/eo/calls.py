"""The stand-in's calls to a round's services: the seller agents and the human-side service.

Every call gives up after ``[standin] request_timeout_s`` - unlike the real EO - except
``/confirmAccept``, which waits as the real EO does (up to ``[standin] confirm_wait_s``): the
buyer may take the whole of ``[avatar] confirm_timeout_s`` to answer, and several deals may
wait in turn. What fails is logged, and a round's life-cycle calls that failed are kept for
``/viewQueue``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Final

from humaine_platform import endpoints as ep
from humaine_platform.client import Blocked, Delivered, Failed, HttpPoster, Outcome, RetryPolicy, Timeouts
from standins.eo.rounds import Round, Service
from standins.eo.settings import StandinSettings
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)

FORWARD_RETRIES: Final = RetryPolicy(max_attempts=2, backoff_s=0.05, backoff_max_s=0.05)
"""A service that refuses connections is tried twice, then reported: a round cannot wait."""


def outcome_text(outcome: Outcome) -> str:
    """An outcome in a few words, for the logs and ``/viewQueue``."""
    if isinstance(outcome, Delivered):
        return "delivered"
    if isinstance(outcome, Failed):
        return f"failed: {outcome.reason}"
    if isinstance(outcome, Blocked):
        return f"refused: {outcome.rationale}"
    return f"not sent: {outcome.reason}"


def _timeouts(connect_s: float, answer_s: float) -> Timeouts:
    """A call connects within ``connect_s`` and is answered within ``answer_s``."""
    return Timeouts(connect_s=connect_s, read_s=answer_s, total_s=connect_s + answer_s)


class ServiceCalls:
    """Posts to the round's services: awaited, fanned out, or in the background (the calls the
    platform EO makes without waiting for them)."""

    def __init__(self, settings: StandinSettings) -> None:
        connect_s = settings.connect_timeout_s
        self._poster = HttpPoster(timeouts=_timeouts(connect_s, settings.request_timeout_s), retry=FORWARD_RETRIES)
        self._confirm_poster = HttpPoster(timeouts=_timeouts(connect_s, settings.confirm_wait_s), retry=FORWARD_RETRIES)
        """``/confirmAccept`` only: the buyer answers it, which takes seconds, not a service's
        milliseconds (the platform EO waits without end)."""
        self._tasks: set[asyncio.Task[Any]] = set()

    async def post(self, service: Service, path: str, body: dict[str, Any]) -> Outcome:
        outcome = await self._poster.post(service.url, path, body, headers=service.headers)
        if not isinstance(outcome, Delivered):
            log.warning("%s %s%s: %s", service.name, service.url, path, outcome_text(outcome))
        return outcome

    async def post_each(self, services: list[Service], path: str, bodies: list[dict[str, Any]]) -> list[Outcome]:
        """``bodies[i]`` to ``services[i]``, all at once."""
        return list(await asyncio.gather(*(self.post(s, path, b) for s, b in zip(services, bodies, strict=True))))

    async def forward(self, rnd: Round, body: dict[str, Any], human_first: bool) -> list[tuple[Service, Outcome]]:
        """A permitted message on every service's ``/receiveMessage``, all at once: the agents get
        it without ``bid``, the human side with it. Each mode keeps its EO's order of the services
        (``human_first``), which the answers it reports follow."""
        to_agents = {k: v for k, v in body.items() if k != "bid"}
        agents = [(agent, to_agents) for agent in rnd.agents.values()]
        sends = [(rnd.human, body), *agents] if human_first else [*agents, (rnd.human, body)]
        outcomes = await self.post_each([s for s, _ in sends], ep.RECEIVE_MESSAGE, [b for _, b in sends])
        return [(service, outcome) for (service, _), outcome in zip(sends, outcomes, strict=True)]

    def background(self, service: Service, path: str, body: dict[str, Any]) -> None:
        """A call nobody waits for (logs, rejections); :meth:`aclose` stops those still running."""
        self._keep(self.post(service, path, body))

    def _keep(self, coro: Coroutine[Any, Any, Outcome]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def confirm(self, rnd: Round, body: dict[str, Any]) -> Outcome:
        """``/confirmAccept`` to the human side, waited for up to ``confirm_wait_s``. A decline
        (``{"status": "rejected"}``) comes back as :class:`Blocked` with its answer: the buyer's
        no is an answer, not a problem, so only a failure is a warning."""
        log.info("round %s: %s's Accept waits for the human side's %s", rnd.round_id, body.get("speaker"), ep.CONFIRM_ACCEPT)
        human = rnd.human
        outcome = await self._confirm_poster.post(human.url, ep.CONFIRM_ACCEPT, body, headers=human.headers)
        if not isinstance(outcome, Delivered | Blocked):
            log.warning("%s %s%s: %s", human.name, human.url, ep.CONFIRM_ACCEPT, outcome_text(outcome))
        return outcome

    async def tell(self, rnd: Round, path: str, services: list[Service], body: dict[str, Any]) -> None:
        """A round's life-cycle call, the same ``body`` to each of ``services``."""
        await self.tell_each(rnd, path, services, [body] * len(services))

    async def tell_each(self, rnd: Round, path: str, services: list[Service], bodies: list[dict[str, Any]]) -> None:
        """A round's life-cycle call, ``bodies[i]`` to ``services[i]``; those that fail are noted
        on the round (``/viewQueue``'s ``failures``)."""
        outcomes = await self.post_each(services, path, bodies)
        for service, outcome in zip(services, outcomes, strict=True):
            if not isinstance(outcome, Delivered):
                rnd.events.append({"path": path, "service": service.name, "outcome": outcome_text(outcome), "at": now_ms()})

    async def aclose(self) -> None:
        """Stop the calls nobody waits for and close the connection pools."""
        running = [t for t in self._tasks if not t.done()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        await self._poster.aclose()
        await self._confirm_poster.aclose()
