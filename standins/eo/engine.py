"""The stand-in Environment Orchestrator's behaviour, without the HTTP server around it.

It does what the room needs from the platform's EO (``humaine-platform.md``): it creates and
times rounds, judges every proposed message, forwards permitted ones - to the agents without
``bid``, to the human-side service with it - tells blocked senders, logs every proposal to the
human side and books an Accept only once the human side answered ``/confirmAccept`` with
exactly ``{"status": "acknowledged"}``.

Two modes (``[standin] rules``), one rule engine each. ``real_eo``, the default, stands in for
the EO a venue runs: it judges, answers, tells and books exactly as the platform EO does
(:mod:`standins.eo.platform`). ``documented`` judges by R0-R4 as the platform documents them and
says ``permitted``/``rationale`` in the answer (:mod:`standins.eo.documented`).

Where the real EO exits (unknown round, an agent speaking before the human, a bid without a
price, a human-side service that is down or fails ``/confirmAccept``), this one raises
:class:`~standins.eo.errors.StandinError` with an HTTP status and a readable reason and goes on.
How long it waits for the services: :mod:`standins.eo.calls`; the totals and the buyer's
allocation: :mod:`standins.eo.totals`.

Round ids are the caller's (the room allocates them, as the platform's competition manager
does); like the platform's EO, the stand-in keeps only its own memory of the rounds it was given
(:mod:`standins.eo.memory`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from humaine_platform import endpoints as ep
from standins.eo.calls import ServiceCalls
from standins.eo.documented import DocumentedRelay
from standins.eo.initialize import RoundInitializer
from standins.eo.lifecycle import RoundPhases
from standins.eo.memory import RoundMemory
from standins.eo.platform import PlatformRelay
from standins.eo.rounds import Round
from standins.eo.settings import StandinSettings
from standins.eo.totals import TotalsKeeper


class Relay(Protocol):
    """A mode's ``/relayMessage`` and ``/viewQueue``."""

    async def relay(self, body: Any) -> dict[str, Any]: ...

    def view_queue(self, round_id: object) -> Any: ...


class StandinOrchestrator:
    """The EO's endpoints as methods, over the rounds' memory, the calls to their services,
    their life on timers, their totals and the mode's relay."""

    def __init__(self, settings: StandinSettings) -> None:
        self._memory = RoundMemory()
        self._calls = ServiceCalls(settings)
        self._initializer = RoundInitializer(settings, self._memory)
        self._totals = TotalsKeeper(self._memory, platform_view=settings.real_eo)
        self._life = RoundPhases(self._memory, self._calls, self._totals)
        self._relay: Relay = (
            PlatformRelay(settings, self._memory, self._calls) if settings.real_eo else DocumentedRelay(self._memory, self._calls)
        )

    async def aclose(self) -> None:
        """Stop every round's timers and the calls nobody waits for; close the connection pools."""
        timers = self._memory.timers()
        for task in timers:
            task.cancel()
        if timers:
            await asyncio.gather(*timers, return_exceptions=True)
        await self._calls.aclose()

    def initialize(self, body: Any) -> Round:
        """``/initializeRound``."""
        return self._initializer.initialize(body)

    def start(self, body: Any) -> Round:
        """``/startRound``."""
        return self._life.start(body)

    def end_phase(self, body: Any) -> Round:
        """``/endRound``: the operator's End round."""
        return self._life.end_phase(body)

    async def relay(self, body: Any) -> dict[str, Any]:
        """``/relayMessage``."""
        return await self._relay.relay(body)

    def view_queue(self, round_id: object) -> Any:
        return self._relay.view_queue(round_id)

    def view_totals(self, round_id: object) -> Any:
        return self._totals.view(round_id)

    def human_allocation(self, body: Any) -> dict[str, Any]:
        """``/receiveHumanAllocation``."""
        return self._totals.allocate(body)

    def knows(self, round_id: object) -> bool:
        """Whether this stand-in was given round ``round_id``."""
        return round_id in self._memory

    def free_round_id(self) -> str:
        return self._memory.free_round_id()

    def summary(self) -> dict[str, Any]:
        """``/health``: the stand-in's mark (the room ends a phase here, where it ends a round on
        the platform's EO) and its rounds' phases."""
        return {"status": "ok", ep.STANDIN_MARK: True, "rounds": self._memory.phases()}
