"""The display page's live feed: a WebSocket hub fed from any thread.

Events come from three threads (HTTP handlers on the event loop, the speech thread, the MQTT
network thread) and go to every open page. The hub keeps the current picture (round, who is
speaking, captions, attention and whether the camera is up, pending confirmations, the round's
deals and totals) so a page opened or reloaded mid-round
shows the right state at once; after that it receives each event as it happens.
A page that cannot keep up (queue full) is disconnected rather than slowing the others.
Each event is serialised once, strictly: one that is not valid JSON (a ``NaN`` from anywhere)
is dropped with a line rather than sent as text the page's ``JSON.parse`` throws away.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator_client.http_edge import strict_dumps
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import PHASE_NAMES

log = logging.getLogger(__name__)
_drops = RateLimitedLog(log)

STATIC_DIR = Path(__file__).resolve().parent / "static"
CLIENT_QUEUE_MAX = 256
SNAPSHOT = "snapshot"
AUDIO_PATH = "/display-audio"
"""Where the page fetches an utterance's speech (``speaker = "browser"``): ``AUDIO_PATH/<name>``."""


class DisplayHub:
    """Fan-out of display events to WebSocket clients, with the state a new client needs."""

    def __init__(self, avatars: list[str], confirm_mode: str, looks: dict[str, str] | None = None) -> None:
        """``looks``: the figure drawn for each avatar (``female``/``male``, from its voice)."""
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: set[asyncio.Queue[str | None]] = set()
        self._state: dict[str, Any] = {
            "avatars": list(avatars),
            "looks": dict(looks or {}),
            "confirm_mode": confirm_mode,
            "round": None,
            "attention": None,
            "last_human": None,
            "speaking": None,
            "captions": {name: None for name in avatars},
            "confirms": [],
            "log": [],
            "camera": None,
            "deals": [],
            "totals": None,
            "phase_names": dict(PHASE_NAMES),
        }
        self.sent = 0

    # -- loop binding ------------------------------------------------------------------------
    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def detach(self) -> None:
        self._loop = None
        for queue in list(self._clients):
            queue.put_nowait(None)

    # -- state + events (any thread) ---------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"type": SNAPSHOT, **copy.deepcopy(self._state)}

    def snapshot_text(self) -> str:
        """The snapshot as the JSON text a new page gets first."""
        text = _serialise(self.snapshot())
        return text if text is not None else _serialise({"type": SNAPSHOT}) or "{}"

    def emit(self, event: dict[str, Any], update: Callable[[dict[str, Any]], bool | None] | None = None) -> None:
        """Apply ``update`` to the kept state, then send ``event`` to every page (unless
        ``update`` returns False: the state says the event changes nothing)."""
        text = _serialise(event)
        if text is None:
            return
        if update is not None:
            with self._lock:
                if update(self._state) is False:
                    return
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._fan_out, text)
        except RuntimeError:  # loop closed between the check and the call
            pass

    def _fan_out(self, event: str) -> None:
        for queue in list(self._clients):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:
                log.warning("display client too slow; disconnecting it")
                self._clients.discard(queue)
                queue.get_nowait()  # make room for the end marker the client's sender waits for
                queue.put_nowait(None)
        self.sent += 1

    # -- clients (event loop) ----------------------------------------------------------------
    def register(self) -> asyncio.Queue[str | None]:
        queue: asyncio.Queue[str | None] = asyncio.Queue(CLIENT_QUEUE_MAX)
        self._clients.add(queue)
        return queue

    def unregister(self, queue: asyncio.Queue[str | None]) -> None:
        self._clients.discard(queue)

    @property
    def client_count(self) -> int:
        return len(self._clients)


def _serialise(event: dict[str, Any]) -> str | None:
    """Strict JSON text of ``event``, or None (logged) when it holds something JSON has not."""
    try:
        return strict_dumps(event)
    except (TypeError, ValueError) as exc:
        _drops.warning(("unserialisable", event.get("type")), "display event %r dropped: %s", event.get("type"), exc)
        return None
