"""Serving a FastAPI app with uvicorn in a background thread (the stand-in EO, the demo
sellers, the Avatar Controller).

The socket is bound here, before uvicorn starts, so a port in use is one readable line instead
of a traceback from a thread, and port 0 gives a free port that can be read back (tests).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI

from workers.runtime.http.deadline import DeadlineH11Protocol

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 1.5
UVICORN_LOGGER = "uvicorn.error"
"""The logger uvicorn reports its server's and the app's lifespan troubles on."""


class ServerError(Exception):
    """The service could not start (port in use, address not available)."""


class AppServer:
    """``app`` on ``host:port`` (port 0: any free port) until :meth:`stop`."""

    def __init__(self, app: FastAPI, host: str, port: int, name: str, hint: str = "", **uvicorn_options: Any) -> None:
        """``hint`` ends the one-line error of a busy port (which flag or setting to change);
        ``uvicorn_options`` go to :class:`uvicorn.Config`."""
        self.app = app
        self.host = host
        self.name = name
        try:
            # IPPROTO_TCP (not 0) so asyncio sets TCP_NODELAY: no 40 ms delayed-ACK stalls.
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            self._socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._socket.bind((host, port))
        except OSError as exc:
            raise ServerError(
                f"{name}: cannot listen on {host}:{port} ({exc.strerror or exc}); is it already running? "
                f"{hint or 'choose another port'}"
            ) from None
        self.port = int(self._socket.getsockname()[1])
        self._server = uvicorn.Server(
            uvicorn.Config(
                app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=1,
                http=DeadlineH11Protocol, log_config=None, **uvicorn_options
            )
        )
        self._forced = False
        self._thread = threading.Thread(target=self._serve, name=f"http-{name}", daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _serve(self) -> None:
        self._server.run(sockets=[self._socket])

    def _forced_stop_filter(self, record: logging.LogRecord) -> bool:
        """Keep the cancellation of a forced stop off the console. A stop that outlasts
        :data:`STOP_TIMEOUT_S` (a busy machine) is forced, and uvicorn then skips the app's
        lifespan shutdown: the cancelled lifespan is reported as a failed shutdown with its
        traceback, a wall of text for what :meth:`stop` already says in one line."""
        return not (self._forced and "CancelledError" in record.getMessage())

    def start(self) -> AppServer:
        """Returns once requests are answered."""
        logging.getLogger(UVICORN_LOGGER).addFilter(self._forced_stop_filter)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServerError(f"{self.name}: the HTTP service on {self.url} did not start")
            time.sleep(0.01)
        log.info("%s listening on %s", self.name, self.url)
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def request_stop(self) -> None:
        """Ask uvicorn to finish (returns at once; :meth:`stop` waits)."""
        self._server.should_exit = True

    def stop(self) -> None:
        self.request_stop()
        if self._thread.is_alive():
            self._thread.join(STOP_TIMEOUT_S)
        if self._thread.is_alive():
            log.info("%s: its HTTP service did not finish stopping in %.1f s; ending it", self.name, STOP_TIMEOUT_S)
            self._forced = True
            self._server.force_exit = True
            self._thread.join(STOP_TIMEOUT_S)
        if self._thread.is_alive():
            return  # still ending: its shutdown closes the socket and reports the cancellation
        logging.getLogger(UVICORN_LOGGER).removeFilter(self._forced_stop_filter)
        self._socket.close()

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


