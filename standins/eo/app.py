"""The stand-in EO's HTTP face: the platform's paths over :class:`StandinOrchestrator`.

Bodies are read as raw JSON (not through FastAPI's validation) on the shared edge
(:mod:`workers.runtime.http.edge`), so that every refusal - not JSON we take, a missing
key, an unknown round - is one ``{"status": "error", "error": "..."}`` answer with a 4xx
status, never a crash and never a stack trace. The OpenAPI schema still documents the bodies.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from humaine_platform import endpoints as ep
from humaine_platform.models import InitializeRound, Message, StartRound, acknowledgement
from standins.eo.engine import StandinError, StandinOrchestrator
from standins.eo.settings import StandinSettings
from workers.runtime.http.edge import BodyDocs, EdgeJSONResponse, edge_app, json_body

log = logging.getLogger(__name__)

HEALTH_PATH = ep.HEALTH


def create_app(settings: StandinSettings | None = None, orchestrator: StandinOrchestrator | None = None) -> FastAPI:
    """An EO-compatible app. ``app.state.orchestrator`` is the engine (for inspection)."""
    engine = orchestrator or StandinOrchestrator(settings or StandinSettings())

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await engine.aclose()

    app = edge_app(
        title="humaine-env stand-in Environment Orchestrator",
        description="The part of the HUMAINE EO a room needs: rounds, R0-R4, forwarding.",
        lifespan=lifespan,
    )
    app.state.orchestrator = engine
    docs = BodyDocs(app)

    @app.exception_handler(StandinError)
    async def refused(request: Request, exc: StandinError) -> JSONResponse:
        # a question about a round it does not know (the room's round check, a probe) is an
        # answer, not a problem of the service: only refused writes are worth a warning
        level = logging.DEBUG if request.method in ("GET", "HEAD") else logging.WARNING
        log.log(level, "%s %s refused (%s): %s", request.method, request.url.path, exc.status_code, exc.message)
        return EdgeJSONResponse(exc.body(), status_code=exc.status_code)

    @app.post(ep.INITIALIZE_ROUND, openapi_extra=docs(InitializeRound))
    async def initialize_round(request: Request) -> dict[str, Any]:
        rnd = engine.initialize(await json_body(request))
        return acknowledgement(roundId=rnd.round_id)

    @app.post(ep.START_ROUND, openapi_extra=docs(StartRound))
    async def start_round(request: Request) -> dict[str, Any]:
        rnd = engine.start(await json_body(request))
        return acknowledgement(roundId=rnd.round_id, durations=rnd.durations.body())

    @app.post(ep.RELAY_MESSAGE, openapi_extra=docs(Message))
    async def relay_message(request: Request) -> dict[str, Any]:
        return await engine.relay(await json_body(request))

    @app.get(ep.VIEW_QUEUE + "/{round_id}")
    async def view_queue(round_id: str) -> Any:
        return engine.view_queue(round_id)

    @app.get(ep.VIEW_QUEUE)
    async def view_queue_query(roundId: str) -> Any:
        return engine.view_queue(roundId)

    @app.get(ep.VIEW_TOTALS + "/{round_id}")
    async def view_totals(round_id: str) -> Any:
        return engine.view_totals(round_id)

    @app.get(ep.VIEW_TOTALS)
    async def view_totals_query(roundId: str) -> Any:
        return engine.view_totals(roundId)

    @app.post(ep.RECEIVE_HUMAN_ALLOCATION)
    async def human_allocation(request: Request) -> dict[str, Any]:
        return engine.human_allocation(await json_body(request))

    @app.post(ep.END_ROUND)
    async def end_round(request: Request) -> dict[str, Any]:
        """The operator's End round: the current phase ends now."""
        rnd = engine.end_phase(await json_body(request))
        return acknowledgement(roundId=rnd.round_id, phase=rnd.phase)

    @app.get(HEALTH_PATH)
    async def health() -> dict[str, Any]:
        return engine.summary()

    return app
