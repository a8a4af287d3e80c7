"""The stand-in EO's HTTP face: the platform's paths over :class:`StandinOrchestrator`, one
router for the rounds (set-up, start, end), one for their messages and totals, and ``/health``.

Bodies are read as raw JSON (not through FastAPI's validation) on the shared edge
(:mod:`workers.runtime.http.edge`), so that every refusal - not JSON we take, a missing
key, an unknown round - is one ``{"status": "error", "error": "..."}`` answer with a 4xx
status, never a crash and never a stack trace. The OpenAPI schema still documents the bodies.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse

from humaine_platform import endpoints as ep
from humaine_platform.models import InitializeRound, Message, StartRound, acknowledgement
from standins.eo.engine import StandinOrchestrator
from standins.eo.errors import StandinError
from standins.eo.settings import StandinSettings
from workers.runtime.http.edge import BodyDocs, EdgeJSONResponse, edge_app, json_body

log = logging.getLogger(__name__)


def engine_of(app: FastAPI) -> StandinOrchestrator:
    """The app's engine (``app.state.orchestrator``, put there by :func:`create_app`)."""
    engine: StandinOrchestrator = app.state.orchestrator
    return engine


def _engine(request: Request) -> StandinOrchestrator:
    return engine_of(request.app)


EngineDep = Annotated[StandinOrchestrator, Depends(_engine)]


async def refused(request: Request, exc: Exception) -> JSONResponse:
    """A :class:`StandinError` as its 4xx answer. A question about a round it does not know (the
    room's round check, a probe) is an answer, not a problem of the service: only refused writes
    are worth a warning."""
    assert isinstance(exc, StandinError)
    level = logging.DEBUG if request.method in ("GET", "HEAD") else logging.WARNING
    log.log(level, "%s %s refused (%s): %s", request.method, request.url.path, exc.status_code, exc.message)
    return EdgeJSONResponse(exc.body(), status_code=exc.status_code)


# -- the rounds ------------------------------------------------------------------------------------
async def initialize_round(request: Request, engine: EngineDep) -> dict[str, Any]:
    rnd = engine.initialize(await json_body(request))
    return acknowledgement(roundId=rnd.round_id)


async def start_round(request: Request, engine: EngineDep) -> dict[str, Any]:
    rnd = engine.start(await json_body(request))
    return acknowledgement(roundId=rnd.round_id, durations=rnd.durations.body())


async def end_round(request: Request, engine: EngineDep) -> dict[str, Any]:
    """The operator's End round: the current phase ends now."""
    rnd = engine.end_phase(await json_body(request))
    return acknowledgement(roundId=rnd.round_id, phase=rnd.phase)


# -- their messages and totals ---------------------------------------------------------------------
async def relay_message(request: Request, engine: EngineDep) -> dict[str, Any]:
    return await engine.relay(await json_body(request))


async def view_queue(round_id: str, engine: EngineDep) -> Any:
    return engine.view_queue(round_id)


async def view_queue_query(roundId: str, engine: EngineDep) -> Any:
    return engine.view_queue(roundId)


async def view_totals(round_id: str, engine: EngineDep) -> Any:
    return engine.view_totals(round_id)


async def view_totals_query(roundId: str, engine: EngineDep) -> Any:
    return engine.view_totals(roundId)


async def human_allocation(request: Request, engine: EngineDep) -> dict[str, Any]:
    return engine.human_allocation(await json_body(request))


async def health(engine: EngineDep) -> dict[str, Any]:
    return engine.summary()


def _routers(docs: BodyDocs) -> list[APIRouter]:
    """The rounds' router, their messages' and totals', and ``/health``'s; ``docs`` documents
    the raw bodies."""
    rounds, messages, health_router = APIRouter(), APIRouter(), APIRouter()
    rounds.add_api_route(ep.INITIALIZE_ROUND, initialize_round, methods=["POST"], openapi_extra=docs(InitializeRound))
    rounds.add_api_route(ep.START_ROUND, start_round, methods=["POST"], openapi_extra=docs(StartRound))
    rounds.add_api_route(ep.END_ROUND, end_round, methods=["POST"])
    messages.add_api_route(ep.RELAY_MESSAGE, relay_message, methods=["POST"], openapi_extra=docs(Message))
    messages.add_api_route(ep.VIEW_QUEUE + "/{round_id}", view_queue, methods=["GET"])
    messages.add_api_route(ep.VIEW_QUEUE, view_queue_query, methods=["GET"])
    messages.add_api_route(ep.VIEW_TOTALS + "/{round_id}", view_totals, methods=["GET"])
    messages.add_api_route(ep.VIEW_TOTALS, view_totals_query, methods=["GET"])
    messages.add_api_route(ep.RECEIVE_HUMAN_ALLOCATION, human_allocation, methods=["POST"])
    health_router.add_api_route(ep.HEALTH, health, methods=["GET"])
    return [rounds, messages, health_router]


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The engine's rounds and connections end with the app."""
    yield
    await engine_of(app).aclose()


def create_app(settings: StandinSettings | None = None, orchestrator: StandinOrchestrator | None = None) -> FastAPI:
    """An EO-compatible app. ``app.state.orchestrator`` is the engine (for inspection)."""
    app = edge_app(
        title="humaine-env stand-in Environment Orchestrator",
        description="The part of the HUMAINE EO a room needs: rounds, R0-R4, forwarding.",
        lifespan=_lifespan,
    )
    app.state.orchestrator = orchestrator or StandinOrchestrator(settings or StandinSettings())
    app.add_exception_handler(StandinError, refused)
    for router in _routers(BodyDocs(app)):
        app.include_router(router)
    return app
