"""Running the Avatar Controller's app with uvicorn in a background thread
(:mod:`workers.runtime.http.serving`), started and stopped together with the controller."""

from __future__ import annotations

import asyncio
import logging

from avatar.app import PageSources, create_app
from avatar.controller import AvatarController
from avatar.display.routes import DISPLAY_PATH
from workers.runtime.http.serving import AppServer, ServerError
from workers.runtime.logs import NOTICE
from workers.runtime.parent import started_by_run

__all__ = ["AvatarServer", "ServerError"]

log = logging.getLogger(__name__)

ANSWER_PENDING_TIMEOUT_S = 2.0
"""How long stopping waits for the waiting confirmations to be answered on the event loop."""
ANSWER_FLUSH_TURNS = 5
"""Event-loop turns given to the answered handlers to send their answers before uvicorn stops."""
WS_PING_INTERVAL_S = 20
"""Keeps the display page's WebSocket alive through idle minutes between rounds."""


class AvatarServer(AppServer):
    """The controller's HTTP service on ``host:port`` (port 0: any free port); ``pages``: where
    the buyer's page and the console read from (without it, neither is served)."""

    def __init__(self, controller: AvatarController, host: str, port: int, pages: PageSources | None = None) -> None:
        self.controller = controller
        super().__init__(
            create_app(controller, pages), host, port, "Avatar Controller",
            hint="choose another port with --port or [avatar] port", ws_ping_interval=WS_PING_INTERVAL_S,
        )

    def start(self) -> AvatarServer:
        """Start the controller and the HTTP service; returns once requests are answered."""
        self.controller.start()
        super().start()
        # what a quiet console still says, unless ``run`` already printed it
        log.log(logging.INFO if started_by_run() else NOTICE, "display page: %s%s", self.url, DISPLAY_PATH)
        return self

    def stop(self) -> None:
        """Answer every waiting confirmation first (the EO has no timeout and exits when the
        service it waits on goes away), then stop serving and speaking."""
        self.answer_pending()
        self.request_stop()
        self.controller.stop()
        super().stop()

    def answer_pending(self) -> int:
        """On the server's event loop: every waiting confirmation gets its configured answer and
        its HTTP answer a moment to leave. Returns how many were answered."""
        loop = self.controller.loop
        if loop is None or loop.is_closed() or not self.running:
            return 0

        async def answer() -> int:
            count = self.controller.answer_pending()
            for _ in range(ANSWER_FLUSH_TURNS):  # let the handlers return and their answers go out
                await asyncio.sleep(0)
            return count

        try:
            return asyncio.run_coroutine_threadsafe(answer(), loop).result(ANSWER_PENDING_TIMEOUT_S)
        except Exception as exc:  # a loop already gone: nothing waits on it any more
            log.debug("waiting confirmations could not be answered: %s", exc)
            return 0
