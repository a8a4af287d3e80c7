"""The EO's verdicts on the human's messages, as the Avatar Controller passes them on.

The current EO does not say in its answer why it blocked a message: it tells the human-side
service, and the Avatar Controller publishes that verdict (``EOVerdict``); a blocked message
waits up to :data:`VERDICT_WAIT_S` for it to record the rationale, and a relay whose answer was
lost is decided by the verdict when one arrives.
"""

from __future__ import annotations

import asyncio
from typing import Any

from workers.runtime.messages import EOVerdict

VERDICT_WAIT_S = 1.0
"""How long a blocked message waits for the EO's rationale (it comes over the Avatar Controller)."""
VERDICTS_KEPT = 256
"""Recent verdicts kept for messages whose relay has not finished yet."""

VerdictKey = tuple[object, object]
"""(timestamp, text) of the human's message: how a verdict finds its message."""


def key_of(body: dict[str, Any]) -> VerdictKey:
    return (body.get("timestamp"), body.get("text"))


class Verdicts:
    """Recent verdicts and the relays waiting for one. Lives on the worker's event loop: the bus
    hands each verdict over with ``call_soon_threadsafe``."""

    def __init__(self, wait_s: float = VERDICT_WAIT_S) -> None:
        self._wait_s = wait_s
        self._verdicts: dict[VerdictKey, EOVerdict] = {}
        """The most recent :data:`VERDICTS_KEPT` verdicts (a rejection wins over a log line)."""
        self._waiters: dict[VerdictKey, asyncio.Future[EOVerdict]] = {}
        """Relays waiting for the verdict on their message."""

    def arrived(self, verdict: EOVerdict) -> None:
        key = key_of(verdict.message)
        if verdict.via == "rejection" or key not in self._verdicts:
            self._verdicts[key] = verdict
        while len(self._verdicts) > VERDICTS_KEPT:
            del self._verdicts[next(iter(self._verdicts))]
        waiter = self._waiters.pop(key, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(verdict)

    async def on(self, body: dict[str, Any]) -> EOVerdict | None:
        """The EO's verdict on ``body`` as its human-side service heard it (waiting up to
        ``wait_s``), or None."""
        key = key_of(body)
        verdict = self._verdicts.get(key)
        if verdict is not None:
            return verdict
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[key] = waiter
        try:
            return await asyncio.wait_for(waiter, self._wait_s)
        except (asyncio.TimeoutError, TimeoutError):
            return None
        finally:
            self._waiters.pop(key, None)

    async def rationale(self, body: dict[str, Any]) -> str:
        """The EO's reason for blocking ``body``, as its human-side service heard it."""
        verdict = await self.on(body)
        if verdict is None:
            return "blocked by the EO (its rationale did not reach the Avatar Controller)"
        return verdict.rationale or "blocked by the EO (no rationale given)"
