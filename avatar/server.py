"""Running the Avatar Controller's app with uvicorn in a background thread
(:mod:`orchestrator_client.serving`), started and stopped together with the controller."""

from __future__ import annotations

import logging

from avatar.app import DISPLAY_PATH, create_app
from avatar.controller import AvatarController
from orchestrator_client.serving import AppServer, ServerError
from workers.runtime.logs import NOTICE
from workers.runtime.parent import started_by_run

__all__ = ["AvatarServer", "ServerError"]

log = logging.getLogger(__name__)

WS_PING_INTERVAL_S = 20
"""Keeps the display page's WebSocket alive through idle minutes between rounds."""


class AvatarServer(AppServer):
    """The controller's HTTP service on ``host:port`` (port 0: any free port)."""

    def __init__(self, controller: AvatarController, host: str, port: int) -> None:
        self.controller = controller
        super().__init__(
            create_app(controller), host, port, "Avatar Controller",
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
        self.request_stop()
        self.controller.stop()
        super().stop()
