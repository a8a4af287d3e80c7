"""The Avatar Controller's HTTP face, assembled: one router per resource.

* :mod:`avatar.human_side`: the EO's human-side endpoints, ``/health``, the schema and its pages;
* :mod:`avatar.display.routes`: the display page, its feed, and the utterances' audio;
* :mod:`avatar.buyer.routes`: the buyer's page and its actions;
* :mod:`avatar.operator.routes`: the operator console.

What the routes read (the controller, the token, the console, the buyer's desk) is put on
``app.state`` here (:class:`~avatar.deps.StateKey`); with a token set, every router but the one of
``/health`` requires it (:mod:`avatar.auth`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Final

from fastapi import FastAPI

from avatar import human_side
from avatar.auth import TOKEN, PageNeedsToken, page_needs_token
from avatar.buyer import routes as buyer
from avatar.competition.control import RoundControl
from avatar.controller import AvatarController
from avatar.deps import StateKey
from avatar.display import routes as display
from avatar.operator import routes as operator
from avatar.reconcile import Reconciler
from hardware.speaker_stream import stream_sink
from workers.runtime import __version__
from workers.runtime.config import Config
from workers.runtime.http.edge import edge_app

log = logging.getLogger(__name__)

ROUNDS: Final = StateKey[RoundControl]("rounds")
"""The room's round control (Next and End round, the competition), when the app has one."""


@dataclass(frozen=True)
class PageSources:
    """What the buyer's page and the operator console read beyond the controller: the room's
    configuration (the EO, the utility generator, the data folder), its bus, and the round
    control the console's Next and End round drive (None: the console offers none)."""

    config: Config
    bus: operator.ConsoleBus
    broker_connected: Callable[[], bool]
    rounds: RoundControl | None = None


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The controller on the server's event loop, its books held against the EO's while the app
    serves, and the rounds' watcher (with ``[rounds] auto_start``, the first round started)."""
    controller = human_side.CONTROLLER.of(app)
    controller.attach(asyncio.get_running_loop())
    tasks = [asyncio.create_task(Reconciler(controller, controller.eo_url).run())] if controller.eo_url else []
    rounds = ROUNDS.of(app) if ROUNDS.present(app) else None
    if rounds is not None:
        tasks.append(asyncio.create_task(rounds.watch.run()))
        if rounds.rounds.auto_start:
            tasks.append(asyncio.create_task(rounds.auto_start()))
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if rounds is not None:
            await rounds.close()
        controller.detach()


def create_app(controller: AvatarController, pages: PageSources | None = None) -> FastAPI:
    """The FastAPI app of one controller (the controller is started/stopped with the app): the
    EO's endpoints always; with ``[avatar] display``, the display page, and the buyer's page and
    the console when ``pages`` says where they read from."""
    settings = controller.settings
    app = edge_app(
        title="humaine-env Avatar Controller",
        version=__version__,
        description=(
            "The HUMAINE Environment Orchestrator's human-side service: the avatars speak "
            "permitted agent messages and gesture; round events become the retained round state."
        ),
        lifespan=_lifespan,
        openapi_url=None,  # served by the human side's router, behind the token
        docs_url=None,
        redoc_url=None,
        max_body_bytes=settings.max_body_bytes,
        lenient=human_side.LENIENT,
        refusal=human_side.refusal,
        hidden_loc=("human", "agent"),
    )
    TOKEN.put(app, settings.token)
    app.add_exception_handler(PageNeedsToken, page_needs_token)
    human_side.CONTROLLER.put(app, controller)
    if pages is not None and pages.rounds is not None:
        ROUNDS.put(app, pages.rounds)
    human_side.INTAKE.put(app, human_side.Intake())
    app.include_router(human_side.router)
    app.include_router(human_side.health_router)
    if not settings.display:
        return app
    display.ROOM.put(app, controller)
    app.include_router(display.router)
    if stream_sink(controller.speaker.sink) is not None:
        app.include_router(display.audio_router)
    if pages is not None:
        operator.CONSOLE.put(app, operator.Console.open(pages.config, pages.bus, pages.broker_connected, controller, pages.rounds))
        app.include_router(operator.router)
        buyer.DESK.put(app, buyer.BuyerDesk.of(pages.config, controller))
        app.include_router(buyer.router)
    return app
