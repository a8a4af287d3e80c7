"""A deadline for a client to send its whole request (headers and body) to one of our services.

uvicorn gives a connection a keep-alive timeout between requests, but none while a request is
being read: a client that sends half its headers, or announces a body and never sends it, held a
connection open for good (50 such requests stayed open at least 90 s on each of the Avatar
Controller, the stand-in EO and the demo sellers). :class:`DeadlineH11Protocol` is uvicorn's
h11 protocol with one timer per request, armed when its first byte arrives and cancelled when its
last one has: past :data:`REQUEST_READ_TIMEOUT_S` the client gets ``408 Request Timeout`` and the
connection is closed. Only the reading of a request is bounded, never the time our answer takes:
the EO waits for answers without end, and a ``/confirmAccept`` may wait on the buyer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from workers.runtime.logs import RateLimitedLog

log = logging.getLogger(__name__)
_timeouts = RateLimitedLog(log)

REQUEST_READ_TIMEOUT_S = 10.0
"""How long a client may take to send one request, headers and body (ours are small JSON bodies
on loopback or a LAN: milliseconds)."""


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on reading each request (see the module)."""

    read_timeout_s: float = REQUEST_READ_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvicorn's server hands its protocols a stream transport (its own signature says so)
        super().connection_made(cast(asyncio.Transport, transport))
        self._arm()  # a client that connects and sends nothing is reading a request too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._read_deadline is None and self.conn.their_state is h11.IDLE:
            self._arm()  # the first bytes of the next request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
            self._disarm()  # the whole request is in (or the connection is closing)

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._disarm()  # a WebSocket lives as long as its page
        super().handle_websocket_upgrade(event)

    def _arm(self) -> None:
        self._disarm()
        self._read_deadline = self.loop.call_later(self.read_timeout_s, self._timed_out)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _timed_out(self) -> None:
        self._read_deadline = None
        if self.transport.is_closing() or self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            return
        _timeouts.warning(("timeout", self.client and self.client[0]), "a client took more than %.0f s to send its request "
                       "(%s); answered 408 and closed", self.read_timeout_s, self.client and self.client[0])
        cycle = self.cycle if self.cycle is not None and not self.cycle.response_complete else None
        if cycle is None or not cycle.response_started:
            try:
                self.transport.write(self.conn.send(h11.Response(status_code=408, headers=[(b"connection", b"close"),
                                                                                      (b"content-length", b"0")])))
                self.transport.write(self.conn.send(h11.EndOfMessage()))
            except h11.LocalProtocolError:
                pass  # nothing more can be said on this connection: closing is all that is left
        if cycle is not None:
            cycle.disconnected = True  # the handler waiting for the body reads a disconnect; its answer goes nowhere
            cycle.message_event.set()
        self.transport.close()
