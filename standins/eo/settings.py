"""The ``[standin]`` configuration section of the stand-in Environment Orchestrator.

Example (``humaine-env.toml``)::

    [standin]
    port = 14010
    rules = "real_eo"           # the platform EO's own judgement (default); or "documented" (R0-R4 as written)
    human_budget = 50.0

    # what ``humaine-env orchestrator --auto-round`` starts (round_id: the next free rN unless set):
    warm_up_s = 5
    round_s = 600
    post_s = 120

Every key can also be set with ``HUMAINE_ENV_STANDIN_<KEY>`` or ``--set standin.<key>=...``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar, Final, Literal

from pydantic import Field, field_validator

from humaine_platform.endpoints import DEFAULT_EO_PORT, DEFAULT_HUMAN_PORT, FIRST_SAMPLE_AGENT_PORT, HUMAN_SERVICE_NAMES
from humaine_platform.rules import RuleSettings
from workers.runtime.config import DEFAULT_AVATARS, ListenHost, Section

DEFAULT_AGENT_PORTS: Final[dict[str, int]] = {name: FIRST_SAMPLE_AGENT_PORT + place for place, name in enumerate(DEFAULT_AVATARS)}
"""The ports the platform's sample sellers use; the demo sellers listen there too."""
DEFAULT_HUMAN_BUDGET: Final = 50.0
"""The budget seen in the current EO's ``/sendRoundMetadata``."""
REMOVED_RULES: Final = "current_eo"
"""The mode that approximated the platform's EO with the documented rules: ``real_eo`` replaced it."""


class StandinSettings(Section):
    section_name: ClassVar[str] = "standin"

    host: ListenHost = "127.0.0.1"
    """Where the stand-in EO listens (0.0.0.0: every interface)..."""
    port: int = Field(DEFAULT_EO_PORT, ge=0, le=65535)
    """...and its port (the platform EO's); ``run`` makes it everyone's ``[eo] url``."""
    rules: Literal["real_eo", "documented"] = "real_eo"
    """How the stand-in judges and answers: ``real_eo`` as the platform EO a venue runs (ported
    from its source, :mod:`humaine_platform.eo_rules`, with its answers, rationales and
    totals), ``documented`` by R0-R4 as the platform documents them
    (:mod:`humaine_platform.rules`)."""
    response_time_limit_s: float = Field(4.0, gt=0)
    """``real_eo``: the EO's ``responseTimeLimit`` (how long the addressed agent may take)."""
    can_talk_at_once: bool = True
    """``real_eo``: the EO's ``canTalkAtOnce`` (as shipped)."""
    r2_window_s: float | None = Field(None, gt=0)
    """``documented``: override of the addressee's priority window (R2)."""
    r0_min_gap_s: float | None = Field(None, ge=0)
    """``documented``: override of the minimum gap between human messages (R0)."""
    human_budget: float = Field(DEFAULT_HUMAN_BUDGET, ge=0)
    """R1's budget when ``/initializeRound`` carries no ``humanBudget``."""
    currency: str = "USD"
    """Currency of the human budget."""
    human_name: str = HUMAN_SERVICE_NAMES[0]
    """The human-side service's name (``name`` of its ``/setUtility``)."""
    connect_timeout_s: float = Field(0.5, gt=0)
    """How long a call to an agent or the human-side service may take to connect."""
    request_timeout_s: float = Field(5.0, gt=0)
    """Unlike the real EO, the stand-in gives up on a service that does not answer in time
    (every call but ``/confirmAccept``: :attr:`confirm_wait_s`)."""
    confirm_wait_s: float = Field(3600.0, gt=0)
    """How long a seller's Accept waits for the human side's answer to ``/confirmAccept``. The
    platform EO waits without end, and the Avatar Controller asks the buyer for up to ``[avatar]
    confirm_timeout_s`` per deal, several deals queued one after another: far longer than any
    of that, so a late yes is booked as the buyer's page says, never dropped by the stand-in."""

    # -- the round ``--auto-round`` initializes and starts (seconds) ------------------------
    auto_round: bool = False
    """Same as ``--auto-round``: the stand-in starts a round of its own. A room's rounds are the
    Avatar Controller's to start (``[rounds] auto_start``, the console's Next round); ``humaine-env
    run`` sets this only in a suite without the Avatar Controller, where nothing else would."""
    round_id: int | str | None = None
    """``roundId`` of the round ``--auto-round`` starts; unset, the next ``rN`` this stand-in has
    not run (``r1`` when it starts: it keeps no record of an earlier process's rounds)..."""
    warm_up_s: float = Field(5.0, ge=0)
    """...its warm-up,"""
    round_s: float = Field(600.0, gt=0)
    """...its negotiation,"""
    post_s: float = Field(30.0, ge=0)
    """...and its post-round phase."""
    agents: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_AGENT_PORTS))
    """Agent name -> port on :attr:`services_host`."""
    human_port: int = Field(DEFAULT_HUMAN_PORT, ge=1, le=65535)
    """The human-side service (the Avatar Controller)."""
    human_token: str = Field("", json_schema_extra={"secret": True})
    """Bearer token sent with every call to the human-side service. Unset, the stand-in
    sends the Avatar Controller's ``[avatar] token`` of the same configuration (the stock EO
    sends none: it needs a proxy that adds it)."""
    services_host: str = "127.0.0.1"
    """Host of the agents and the human-side service."""
    wait_for_services_s: float = Field(60.0, ge=0)
    """How long to wait for the agents and the human-side service to accept connections
    before starting the round anyway (their absence is then logged per call)."""

    @field_validator("rules", mode="before")
    @classmethod
    def _no_approximation(cls, value: object) -> object:
        if value == REMOVED_RULES:
            raise ValueError(f"{REMOVED_RULES!r} is gone: use 'real_eo' (the platform EO's own rules, ported) "
                             "or 'documented' (R0-R4 as written)")
        return value

    @property
    def real_eo(self) -> bool:
        """Whether the stand-in judges as the platform EO does (``rules = "real_eo"``)."""
        return self.rules == "real_eo"

    def rule_settings(self, human_budget: float | None) -> RuleSettings:
        """The documented R0-R4 thresholds for one round, with this section's overrides."""
        rules = RuleSettings(human_budget=human_budget)
        if self.r0_min_gap_s is not None:
            rules = replace(rules, r0_min_gap_ms=self.r0_min_gap_s * 1000.0)
        if self.r2_window_s is not None:
            rules = replace(rules, r2_window_ms=self.r2_window_s * 1000.0)
        return rules
