"""``/initializeRound``: a round made from its body, remembered until ``/startRound``."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from humaine_platform import eo_rules
from humaine_platform.models import Budget, InitializeRound, describe_error
from humaine_platform.rules import TurnQueue
from standins.eo.errors import StandinError
from standins.eo.memory import RoundMemory
from standins.eo.rounds import Ledger, Round, Service, SetupError
from standins.eo.settings import StandinSettings

log = logging.getLogger(__name__)


class RoundInitializer:
    """Reads an ``/initializeRound`` body into a :class:`Round` of the stand-in's memory."""

    def __init__(self, settings: StandinSettings, memory: RoundMemory) -> None:
        self._settings = settings
        self._memory = memory

    def initialize(self, body: Any) -> Round:
        """Remember the round; nothing is sent until ``/startRound``."""
        setup = self._setup_of(body)
        existing = self._memory.find(setup.roundId)
        if existing is not None and existing.running:
            raise StandinError(409, f"round {setup.roundId!r} is running (phase {existing.phase})", roundId=setup.roundId)
        try:
            human = self._human_service(setup)
            agents = [Service.from_info(info, "agent") for info in setup.agents]
        except SetupError as exc:
            raise StandinError(422, f"invalid /initializeRound body: {exc}") from None
        if not agents:
            raise StandinError(422, "invalid /initializeRound body: 'agents' is empty")
        budget = self._budget(body)
        rnd = Round(
            round_id=setup.roundId,
            setup=setup,
            agents={a.name: a for a in agents},
            human=human,
            durations=setup.durations,
            budget=budget.body(),
            ledger=Ledger(budget.currentUnit or self._settings.currency),
        )
        if self._settings.real_eo:
            rnd.eo_totals = eo_rules.Totals(float(budget.value), {})
        else:
            rnd.queue = TurnQueue(self._settings.rule_settings(float(budget.value)))
        self._memory.replace(rnd)
        log.info(
            "round %s initialized: agents %s, human-side %s, durations %s",
            rnd.round_id, ", ".join(f"{a.name}={a.url}" for a in agents), human.url, setup.durations.body(),
        )
        return rnd

    @staticmethod
    def _setup_of(body: Any) -> InitializeRound:
        if not isinstance(body, dict):
            raise StandinError(422, "the /initializeRound body must be a JSON object")
        try:
            return InitializeRound.model_validate(body)
        except ValidationError as exc:
            raise StandinError(422, f"invalid /initializeRound body: {describe_error(exc)}") from None

    def _budget(self, body: dict[str, Any]) -> Budget:
        """The round's ``humanBudget``, else ``[standin] human_budget``. The platform EO takes the
        budget from its appSettings.json, never from the round: so does the ``real_eo`` mode."""
        raw = None if self._settings.real_eo else body.get("humanBudget")
        if raw is None:
            return Budget(value=self._settings.human_budget, currentUnit=self._settings.currency)
        try:
            return Budget.model_validate(raw)
        except ValidationError as exc:
            raise StandinError(422, f"invalid humanBudget: {describe_error(exc)}") from None

    def _human_service(self, setup: InitializeRound) -> Service:
        """The human-side service: the platform EO reads it from its own settings
        (``negotiatorsInfo``) and its ``/initializeRound`` body gives ``human`` only a
        ``utilityFunction``; a body that names a host and port is taken at its word."""
        info = setup.human if isinstance(setup.human, dict) else (setup.human.body() if setup.human else {})
        s = self._settings
        if info.get("host") and isinstance(info.get("port"), int):
            return replace(Service.from_info(info, "human"), token=s.human_token)
        found = Service.from_info(
            {"name": s.human_name, "host": s.services_host, "port": s.human_port,
             "utilityFunction": info.get("utilityFunction") or {}},
            "human",
        )
        return replace(found, token=s.human_token)
