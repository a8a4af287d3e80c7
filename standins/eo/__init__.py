"""A stand-in Environment Orchestrator: what the room needs from the HUMAINE EO, on a laptop.

Python API (what ``humaine-env orchestrator`` and the suite's ``run`` use)::

    from standins.eo import StandinServer, StandinSettings, default_round, start_round_sync

    server = StandinServer(StandinSettings(port=14010)).start()
    start_round_sync(server.url, default_round({"Celia": 14007, "Watson": 14008}, 7040, (5, 600, 30)))
    ...
    server.stop()

Import cost: FastAPI and uvicorn (no MQTT, no models).
"""

from standins.eo.app import create_app
from standins.eo.auto import RoundStartError, start_round_sync, wait_for_services
from standins.eo.engine import StandinOrchestrator
from standins.eo.errors import StandinError
from standins.eo.round_setup import default_round
from standins.eo.server import AppServer, ServerError, StandinServer
from standins.eo.settings import StandinSettings

__all__ = [
    "AppServer",
    "RoundStartError",
    "ServerError",
    "StandinError",
    "StandinOrchestrator",
    "StandinServer",
    "StandinSettings",
    "create_app",
    "default_round",
    "start_round_sync",
    "wait_for_services",
]
