"""Both demo sellers, each on its own port, in this process.

Python API (what ``humaine-env demo-agents`` and the suite's ``run`` use)::

    sellers = DemoAgents(DemoAgentsSettings(), eo_url="http://127.0.0.1:14010").start()
    sellers.urls        # {"Celia": "http://127.0.0.1:14007", "Watson": "http://127.0.0.1:14008"}
    sellers.stop()
"""

from __future__ import annotations

from standins.demo_agents.agent import SellerAgent, Timing
from standins.demo_agents.app import create_agent_app
from standins.demo_agents.settings import DemoAgentsSettings
from standins.demo_agents.strategy import Seller
from workers.runtime.http.serving import AppServer, ServerError


class DemoAgents:
    """One :class:`SellerAgent` and one HTTP server per ``[demo_agents] agents`` entry.
    Ports are bound in the constructor, so a busy port fails here with :class:`ServerError`."""

    def __init__(self, settings: DemoAgentsSettings, eo_url: str) -> None:
        self.settings = settings
        self.eo_url = eo_url.rstrip("/")
        timing = Timing(settings.reply_delay_s, settings.follow_delay_s, settings.follow_after_rival_s, settings.unaddressed_wait_s)
        names = list(settings.agents)
        self.agents: dict[str, SellerAgent] = {}
        self.servers: dict[str, AppServer] = {}
        try:
            for index, name in enumerate(names):
                seller = Seller(name, settings.markups.get(name, settings.default_markup), settings.min_margin)
                agent = SellerAgent(
                    seller,
                    self.eo_url,
                    [n for n in names if n != name],
                    timing,
                    follow_offset_s=index * settings.follow_stagger_s,
                    request_timeout_s=settings.request_timeout_s,
                )
                self.agents[name] = agent
                self.servers[name] = AppServer(create_agent_app(agent), settings.host, settings.agents[name], f"seller {name}")
        except ServerError:
            self.stop()
            raise

    @property
    def urls(self) -> dict[str, str]:
        return {name: server.url for name, server in self.servers.items()}

    @property
    def ports(self) -> dict[str, int]:
        return {name: server.port for name, server in self.servers.items()}

    def start(self) -> DemoAgents:
        for server in self.servers.values():
            server.start()
        return self

    def stop(self) -> None:
        """Both sellers wind down together, so stopping takes one server's time, not two."""
        for server in self.servers.values():
            server.request_stop()
        for server in self.servers.values():
            server.stop()

    def __enter__(self) -> DemoAgents:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
