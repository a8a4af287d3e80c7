"""The ``[demo_agents]`` configuration section of the demo sellers.

Example (``humaine-env.toml``)::

    [demo_agents]
    agents = { Celia = 14007, Watson = 14008 }
    markups = { Celia = 0.6, Watson = 0.5 }
    eo_url = ""                 # empty: the [eo] address (the stand-in's by default)

Every key can also be set with ``HUMAINE_ENV_DEMO_AGENTS_<KEY>`` or ``--set demo_agents.<key>=...``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from humaine_platform.eo_rules import UNADDRESSED_WAIT_MS
from standins.eo.settings import DEFAULT_AGENT_PORTS
from workers.runtime.config import ListenHost, Section

R2_MARGIN_S = 0.2
"""Waiting a little past the addressee's window keeps a follower clear of R2 despite latency."""


class DemoAgentsSettings(Section):
    section_name: ClassVar[str] = "demo_agents"

    host: ListenHost = "127.0.0.1"
    """Where the demo sellers listen, each on its port of ``agents``."""
    agents: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_AGENT_PORTS))
    """Seller name -> port (0: any free port)."""
    eo_url: str = ""
    """Where replies go (``/relayMessage``); empty: the ``[eo]`` address."""
    markups: dict[str, float] = Field(default_factory=lambda: {"Celia": 0.6, "Watson": 0.5})
    """Asking price = cost x (1 + markup); a seller not listed uses :attr:`default_markup`."""
    default_markup: float = Field(0.6, ge=0)
    """Markup of a seller not in ``markups``."""
    min_margin: float = Field(0.15, ge=0)
    """Offers at or above cost x (1 + min_margin) are accepted; counter-offers never go lower."""
    reply_delay_s: float = Field(0.3, ge=0)
    """The addressed seller answers this long after the buyer's message reached it."""
    follow_delay_s: float = Field(UNADDRESSED_WAIT_MS / 1000.0 + R2_MARGIN_S, ge=0)
    """When nobody was addressed, a seller may speak this long after the buyer's message."""
    follow_stagger_s: float = Field(1.0, ge=0)
    """...plus this much per seller after the first, so they do not talk at once."""
    follow_after_rival_s: float = Field(0.6, ge=0)
    """The unaddressed seller may undercut this long after the addressee answered..."""
    unaddressed_wait_s: float = Field(UNADDRESSED_WAIT_MS / 1000.0 + R2_MARGIN_S, ge=0)
    """...and never sooner than this after the buyer's message: the EO blocks the seller the
    buyer did not name for 2 s after a named message, even once the addressee has answered."""
    request_timeout_s: float = Field(120.0, gt=0)
    """How long a reply to the EO may take. An Accept is answered only once the buyer confirmed
    it (the EO waits for the human side's ``/confirmAccept``; the buyer has ``[avatar]
    confirm_timeout_s`` per deal, asked one after another), so this is minutes, not seconds."""
