"""Starting a round from outside the EO: what ``--auto-round`` and the suite's ``run`` do.

Synchronous on purpose (a supervisor or a CLI calls it once at start-up): wait until the
participants accept connections, then ``/initializeRound`` and ``/startRound`` on the EO -
the platform's own order.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

from humaine_platform import endpoints as ep
from humaine_platform.answers import PlatformCallError, RoundCallAnswer, read_answer
from humaine_platform.client import EOClient, HttpPoster, Timeouts, answer_of
from humaine_platform.models import InitializeRound
from humaine_platform.reachable import answers

log = logging.getLogger(__name__)

POLL_S = 0.1
REQUEST_TIMEOUT_S = 5.0


class RoundStartError(Exception):
    """The EO refused or did not answer; the message says which call and why."""


def service_urls(body: InitializeRound) -> list[str]:
    """Base URLs of every participant of a round body (agents, then the human side)."""
    infos: list[Any] = [*body.agents, body.human]
    urls = []
    for info in infos:
        data = info if isinstance(info, dict) else (info.model_dump() if info is not None else {})
        if data.get("host") and data.get("port"):
            urls.append(f"{data.get('protocol') or 'http'}://{data['host']}:{data['port']}")
    return urls


def wait_for_services(urls: Iterable[str], timeout: float, stop: threading.Event | None = None) -> list[str]:
    """Wait until every URL accepts connections, ``timeout`` passes or ``stop`` is set;
    returns those that still do not."""
    stop = stop or threading.Event()
    pending = list(urls)
    deadline = time.monotonic() + timeout
    while True:
        pending = [url for url in pending if not answers(url)]
        if not pending or time.monotonic() >= deadline or stop.wait(POLL_S):
            return pending


def start_round_sync(eo_url: str, body: InitializeRound, timeout: float = REQUEST_TIMEOUT_S) -> Any:
    """``/initializeRound`` then ``/startRound`` on the EO at ``eo_url`` (from a thread without an
    event loop: a CLI, a worker's thread); returns the ``/startRound`` answer. Raises
    :class:`RoundStartError` with a readable reason."""
    return asyncio.run(_start_round(eo_url, body, timeout))


async def _start_round(eo_url: str, body: InitializeRound, timeout: float) -> Any:
    eo = EOClient(eo_url, HttpPoster(timeouts=Timeouts(connect_s=1.0, read_s=timeout, total_s=timeout + 1.0)))
    try:
        answer = answer_of(await eo.initialize_round(body), f"{eo.base_url}{ep.INITIALIZE_ROUND}")
        refused = read_answer(RoundCallAnswer, answer, eo.base_url).refusal
        if refused:
            raise RoundStartError(f"{eo.base_url}{ep.INITIALIZE_ROUND} refused: {refused}")
        answer = answer_of(await eo.start_round(body.roundId), f"{eo.base_url}{ep.START_ROUND}")
    except PlatformCallError as exc:
        raise RoundStartError(f"{exc}; is the EO running?") from None
    finally:
        await eo.aclose()
    log.info("round %s started on %s", body.roundId, eo.base_url)
    return answer
