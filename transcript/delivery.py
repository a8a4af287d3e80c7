"""Where messages go: the EO's ``/relayMessage`` or every agent's ``/receiveMessage``."""

from __future__ import annotations

from typing import Any

from humaine_platform.client import EOClient, HttpPoster, Outcome, RetryPolicy, Timeouts, combine, fan_out
from humaine_platform.service_map import ServiceMapError, agent_urls, load_app_settings, resolve_eo_url
from transcript.settings import TranscriptSettings
from workers.runtime.config import OrchestratorSettings

TOTAL_TIMEOUT_MARGIN_S = 0.5
"""Slack of one attempt's overall bound over its connect + read timeouts."""


def poster_for(settings: TranscriptSettings) -> HttpPoster:
    timeouts = Timeouts(
        connect_s=settings.connect_timeout_s,
        read_s=settings.request_timeout_s,
        write_s=settings.request_timeout_s,
        pool_s=settings.connect_timeout_s,
        total_s=settings.connect_timeout_s + settings.request_timeout_s + TOTAL_TIMEOUT_MARGIN_S,
    )
    retry = RetryPolicy(settings.max_attempts, settings.backoff_s, settings.backoff_max_s)
    return HttpPoster(timeouts=timeouts, retry=retry)


class Delivery:
    """Resolves addresses once (a misconfiguration fails at start, not at the first utterance)."""

    def __init__(self, settings: TranscriptSettings, eo: OrchestratorSettings, avatars: list[str]) -> None:
        self.mode = settings.delivery
        self.poster = poster_for(settings)
        self.eo: EOClient | None = None
        self.agents: dict[str, str] = {}
        if self.mode == "eo":
            self.eo = EOClient(resolve_eo_url(eo), self.poster, verify_round=eo.verify_round)
        elif settings.agent_urls:
            self.agents = {name: url.rstrip("/") for name, url in settings.agent_urls.items()}
        elif eo.app_settings:
            self.agents = agent_urls(load_app_settings(eo.app_settings), avatars)
        else:
            raise ServiceMapError(
                "delivery 'agents' needs [transcript] agent_urls or an [eo] app_settings serviceMap with the agents"
            )

    def describe(self) -> str:
        if self.eo is not None:
            return f"EO {self.eo.base_url}"
        return "agents " + ", ".join(f"{name}={url}" for name, url in self.agents.items())

    async def send(self, body: dict[str, Any], deadline: float) -> Outcome:
        if self.eo is not None:
            return await self.eo.relay_message(body, deadline=deadline)
        return combine(await fan_out(self.poster, self.agents, body, deadline=deadline))

    async def aclose(self) -> None:
        await self.poster.aclose()
