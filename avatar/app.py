"""The Avatar Controller's HTTP face: the EO's human-side endpoints, /health, the display page.

Paths and body models come from :mod:`orchestrator_client` (never spelled here). Bodies are
parsed strictly and refused on the shared edge (:mod:`orchestrator_client.http_edge`): not JSON
we take is a 400, the wrong shape a 422 whose ``reason`` is one readable line (and ``detail``
the list of errors); ``/confirmAccept`` declines instead, since the EO dies on a refusal there.
With a token set, :class:`~avatar.auth.TokenGuard` guards every route but ``/health``.
Handlers do only quick work and answer: the EO has no timeouts and
a slow answer holds up the agent that is waiting on its ``/relayMessage``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import Body, FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Discriminator, Tag

from avatar.auth import TOKEN_QUERY, TokenGuard
from avatar.controller import CONFIRM_REJECTED_STATUS, AvatarController
from avatar.display import STATIC_DIR
from orchestrator_client import endpoints as ep
from orchestrator_client.http_edge import edge_app
from orchestrator_client.models import (
    HUMAN,
    AgentMessage,
    ConfirmAccept,
    EndRound,
    HumanUtterance,
    LogEntry,
    Rejection,
    RoundMetadata,
    RoundTotals,
    SetUtility,
    StartRound,
    acknowledgement,
)
from workers import __version__

log = logging.getLogger(__name__)

HEALTH_PATH = "/health"
DISPLAY_PATH = "/"
DISPLAY_STATIC_PATH = "/display"
DISPLAY_WS_PATH = "/ws"
DOCS_PATH = "/docs"
REDOC_PATH = "/redoc"


def _message_kind(value: Any) -> str:
    speaker = value.get("speaker") if isinstance(value, dict) else getattr(value, "speaker", None)
    return "human" if speaker == HUMAN else "agent"


IncomingMessage = Annotated[
    Annotated[HumanUtterance, Tag("human")] | Annotated[AgentMessage, Tag("agent")],
    Discriminator(_message_kind),
]
"""``/receiveMessage``: the human's own utterance (``speaker == "Human"``) or an agent's."""


class Ack(BaseModel):
    status: str


class OperatorDecision(BaseModel):
    """A display page's answer to a confirm request."""

    type: Literal["confirm"]
    id: str
    accept: bool


def _refusal(reason: str, errors: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A refused body: ``reason`` in one line, ``detail`` pydantic's errors when there are any."""
    return {"reason": reason, "detail": errors if errors is not None else reason}


def _add_docs(app: FastAPI) -> None:
    """``/docs`` and ``/redoc`` that load the schema with the token they were opened with."""

    def schema_url(request: Request) -> str:
        token = request.query_params.get(TOKEN_QUERY)
        return f"{app.openapi_url}?{urlencode({TOKEN_QUERY: token})}" if token else str(app.openapi_url)

    @app.get(DOCS_PATH, include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=schema_url(request), title=f"{app.title} - docs")

    @app.get(REDOC_PATH, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        return get_redoc_html(openapi_url=schema_url(request), title=f"{app.title} - ReDoc")


# -- the app ----------------------------------------------------------------------------------
def create_app(controller: AvatarController) -> FastAPI:
    """The FastAPI app of one controller (the controller is started/stopped with the app)."""
    settings = controller.settings

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        controller.hub.attach(asyncio.get_running_loop())
        try:
            yield
        finally:
            controller.hub.detach()

    app = edge_app(
        title="humaine-env Avatar Controller",
        version=__version__,
        description=(
            "The HUMAINE Environment Orchestrator's human-side service: Celia and Watson speak "
            "permitted agent messages and gesture; round events become the retained round state."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        max_body_bytes=settings.max_body_bytes,
        # The current EO reads ``status`` of this answer and dies on anything but a JSON object:
        # a body it sent that we cannot read is declined, never refused.
        lenient={ep.CONFIRM_ACCEPT: {"status": CONFIRM_REJECTED_STATUS}},
        refusal=_refusal,
        hidden_loc=("human", "agent"),
    )
    _add_docs(app)
    if settings.token:
        app.add_middleware(TokenGuard, token=settings.token, open_paths=(HEALTH_PATH,))

    ack = acknowledgement

    @app.post(ep.RECEIVE_MESSAGE, response_model=Ack, summary="A permitted message")
    async def receive_message(message: Annotated[IncomingMessage, Body()]) -> dict[str, Any]:
        """Every message the EO permitted. An avatar's is spoken after this answer; the
        human's is shown. Optional extension: ``gesture`` (a name or a list of names)."""
        controller.receive_message(message)
        return ack()

    @app.post(ep.SET_UTILITY, response_model=Ack)
    async def set_utility(body: SetUtility) -> dict[str, Any]:
        controller.set_utility(body)
        return ack()

    @app.post(ep.SEND_ROUND_METADATA, response_model=Ack)
    async def round_metadata(body: RoundMetadata) -> dict[str, Any]:
        """Durations of the round; the warm-up starts."""
        controller.round_metadata(body)
        return ack()

    @app.post(ep.START_ROUND, response_model=Ack)
    async def start_round(body: StartRound) -> dict[str, Any]:
        controller.start_round(body)
        return ack()

    @app.post(ep.END_ROUND, response_model=Ack)
    async def end_round(body: EndRound) -> dict[str, Any]:
        controller.end_round(body)
        return ack()

    @app.post(ep.RECEIVE_LOG, response_model=Ack)
    async def receive_log(body: LogEntry) -> dict[str, Any]:
        controller.receive_log(body)
        return ack()

    @app.post(ep.RECEIVE_REJECTION, response_model=Ack)
    async def receive_rejection(body: Rejection) -> dict[str, Any]:
        controller.receive_rejection(body)
        return ack()

    @app.post(ep.RECEIVE_ROUND_TOTALS, response_model=Ack)
    async def round_totals(body: RoundTotals) -> dict[str, Any]:
        controller.round_totals(body)
        return ack()

    @app.post(ep.CONFIRM_ACCEPT, response_model=Ack)
    async def confirm_accept(body: ConfirmAccept) -> dict[str, Any]:
        """Answers exactly ``{"status": "acknowledged"}`` (the only yes the EO accepts) unless
        ``confirm_accept = "operator"`` and the operator declines on the display page."""
        return await controller.confirm_accept(body)

    @app.get(HEALTH_PATH)
    async def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, **controller.health()}

    if settings.display:
        _add_display(app, controller)
    return app


def _add_display(app: FastAPI, controller: AvatarController) -> None:
    @app.get(DISPLAY_PATH, include_in_schema=False)
    async def display_page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    app.mount(DISPLAY_STATIC_PATH, StaticFiles(directory=STATIC_DIR), name="display")

    @app.websocket(DISPLAY_WS_PATH)
    async def display_feed(websocket: WebSocket) -> None:
        await websocket.accept()
        queue = controller.hub.register()

        async def pump() -> None:
            await websocket.send_text(controller.hub.snapshot_text())
            while True:
                event = await queue.get()
                if event is None:
                    await websocket.close()
                    return
                await websocket.send_text(event)

        sender = asyncio.create_task(pump())
        try:
            while True:
                raw = await websocket.receive_text()
                try:
                    decision = OperatorDecision.model_validate_json(raw)
                except ValueError:
                    log.debug("display sent something we do not understand: %.80s", raw)
                    continue
                controller.operator_decision(decision.id, decision.accept)
        except WebSocketDisconnect:
            pass
        finally:
            controller.hub.unregister(queue)
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
