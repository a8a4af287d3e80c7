"""The demo sellers as a suite worker: their HTTP services plus a retained MQTT status."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from humaine_platform.service_map import resolve_eo_url
from standins.demo_agents.runner import DemoAgents
from standins.demo_agents.settings import DemoAgentsSettings
from workers.runtime.config import Config, OrchestratorSettings
from workers.runtime.worker import Worker, wait_for_stop
from workers.runtime.worker_ids import DEMO_AGENTS


class DemoAgentsWorker(Worker):
    name: ClassVar[str] = DEMO_AGENTS
    serves_http: ClassVar[bool] = True

    def __init__(self, config: Config, worker_id: str | None = None) -> None:
        super().__init__(config, worker_id)
        settings = config.section(DemoAgentsSettings)
        eo_url = settings.eo_url or resolve_eo_url(config.section(OrchestratorSettings))
        self.sellers = DemoAgents(settings, eo_url)

    def health(self) -> dict[str, Any]:
        sent = {name: len(agent.sent) for name, agent in self.sellers.agents.items()}
        return {**super().health(), "urls": self.sellers.urls, "eo": self.sellers.eo_url, "replies": sent}

    def run(self, stop: threading.Event) -> None:
        self.sellers.start()
        listing = ", ".join(f"{name} {url}" for name, url in self.sellers.urls.items())
        self.report_ok(f"{listing}; replies to {self.sellers.eo_url}")
        wait_for_stop(stop)
        self.sellers.stop()
