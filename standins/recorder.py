"""A minimal platform service on 127.0.0.1 that records every body it receives.

It stands in for the EO or an agent where only the HTTP side matters (client tests, the
transcript benchmark, demos): a real uvicorn server on a real socket, answering each path
as the platform does (the usual acknowledgement; the EO's own answers on its paths) unless told
to be slow, fail, answer garbage or refuse.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from humaine_platform import endpoints as ep
from humaine_platform.client import RELAY_PERMITTED_KEY
from humaine_platform.models import acknowledgement
from workers.runtime.ports import free_port

log = logging.getLogger(__name__)

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class Behavior:
    """How the server answers one path."""

    delay_s: float = 0.0
    status: int = 200
    answer: Any = None
    """JSON answer; ``None`` means the usual acknowledgement."""
    raw: bytes | None = None
    """Sent verbatim instead of JSON (malformed replies)."""


def _platform_default(path: str) -> Behavior:
    """Answers like the current EO where the path is the EO's: a permitted ``/relayMessage``
    (``allResponses``) and a running round's empty queue; the usual acknowledgement elsewhere."""
    if path == ep.RELAY_MESSAGE:
        return Behavior(answer={**acknowledgement(), RELAY_PERMITTED_KEY: []})
    if path.startswith(ep.VIEW_QUEUE + "/"):
        return Behavior(answer=[])
    return Behavior()


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    body: Any
    """Parsed JSON, or the raw text when the body was not JSON."""
    query: str
    wall_ns: int
    """``time.time_ns()`` when the whole body had arrived."""


@dataclass
class RecordingServer:
    """``with RecordingServer() as server: ... server.url ... server.bodies(path)``."""

    host: str = "127.0.0.1"
    port: int = field(default_factory=free_port)
    behaviors: dict[str, Behavior] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    _server: uvicorn.Server | None = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)
    _cond: threading.Condition = field(default_factory=threading.Condition, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 10.0) -> RecordingServer:
        config = uvicorn.Config(
            self._app, host=self.host, port=self.port, log_level="warning", lifespan="off", access_log=False,
            interface="asgi3",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=f"recorder-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"recording server did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._server = None
        self._thread = None

    def __enter__(self) -> RecordingServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # -- inspection --------------------------------------------------------------------------
    def bodies(self, path: str | None = None) -> list[Any]:
        with self._cond:
            return [r.body for r in self.received if path is None or r.path == path]

    def wait_for(self, count: int, path: str | None = None, timeout: float = 10.0) -> bool:
        """Wait until at least ``count`` bodies (on ``path``) have arrived."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                got = sum(1 for r in self.received if path is None or r.path == path)
                remaining = deadline - time.monotonic()
                if got >= count:
                    return True
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)

    # -- ASGI --------------------------------------------------------------------------------
    async def _app(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            event = await receive()
            chunks.append(event.get("body", b""))
            if not event.get("more_body"):
                break
        raw = b"".join(chunks)
        arrived = time.time_ns()
        try:
            body: Any = json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = raw.decode("utf-8", "replace")
        path = scope["path"]
        record = Received(scope["method"], path, body, scope.get("query_string", b"").decode(), arrived)
        with self._cond:
            self.received.append(record)
            self._cond.notify_all()
        behavior = self.behaviors.get(path) or _platform_default(path)
        if behavior.delay_s:
            await asyncio.sleep(behavior.delay_s)
        if behavior.raw is not None:
            payload, content_type = behavior.raw, b"text/plain"
        else:
            answer = acknowledgement() if behavior.answer is None else behavior.answer
            payload, content_type = json.dumps(answer).encode(), b"application/json"
        await send(
            {
                "type": "http.response.start",
                "status": behavior.status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(payload)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})
