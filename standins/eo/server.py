"""The stand-in EO's HTTP service (uvicorn in a background thread, see :mod:`workers.runtime.http.serving`)."""

from __future__ import annotations

from standins.eo.app import create_app
from standins.eo.engine import StandinOrchestrator
from standins.eo.settings import StandinSettings
from workers.runtime.http.serving import AppServer, ServerError

__all__ = ["AppServer", "ServerError", "StandinServer"]


class StandinServer(AppServer):
    """The stand-in EO on ``[standin] host/port``: ``StandinServer(settings).start()``."""

    def __init__(self, settings: StandinSettings | None = None, port: int | None = None) -> None:
        chosen = settings or StandinSettings()
        self.settings = chosen
        self.engine = StandinOrchestrator(chosen)
        super().__init__(create_app(chosen, self.engine), chosen.host, chosen.port if port is None else port, "stand-in EO")
