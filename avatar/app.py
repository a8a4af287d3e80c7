"""The Avatar Controller's HTTP face: the EO's human-side endpoints, /health, the display page.

Paths and body models come from :mod:`orchestrator_client` (never spelled here). Bodies are
parsed as strict JSON on the shared edge (:mod:`orchestrator_client.http_edge`). The EO exits
when its human-side service answers it with an error, so every endpoint it calls reads its body
liberally (:func:`~orchestrator_client.models.read_lenient`) and always acknowledges: what is
missing is filled in, what cannot be read is logged once and ignored, and ``/confirmAccept``
always gives one of the EO's two answers. With a token set, :class:`~avatar.auth.TokenGuard` guards every route but ``/health``.
Handlers do only quick work and answer: the EO has no timeouts and
a slow answer holds up the agent that is waiting on its ``/relayMessage``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal, TypeVar
from urllib.parse import urlencode

from fastapi import FastAPI, Request, WebSocket
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from avatar.auth import TOKEN_QUERY, TokenGuard
from avatar.controller import CONFIRM_REJECTED_STATUS, AvatarController
from avatar.display import AUDIO_PATH, STATIC_DIR
from avatar.display.socket import serve_hub
from avatar.reconcile import Reconciler
from hardware.speaker_stream import stream_sink, wav_header
from orchestrator_client import endpoints as ep
from orchestrator_client.http_edge import BodyRefused, edge_app, parse_body
from orchestrator_client.models import (
    HUMAN,
    AgentMessage,
    ConfirmAccept,
    EndRound,
    HumanUtterance,
    LogEntry,
    PlatformModel,
    Rejection,
    RoundMetadata,
    RoundTotals,
    SetUtility,
    StartRound,
    acknowledgement,
    read_lenient,
)
from workers.runtime import __version__
from workers.runtime.logs import OnceLog

log = logging.getLogger(__name__)

HEALTH_PATH = ep.HEALTH
DISPLAY_PATH = "/"
DISPLAY_STATIC_PATH = "/display"
DISPLAY_WS_PATH = "/ws"
FAVICON_PATH = "/favicon.ico"
DOCS_PATH = "/docs"
STREAM_POLL_S = 0.01
"""How often a speech stream being served looks for new audio (the speaker writes every 20 ms)."""
STREAM_IDLE_S = 10.0
"""A speech stream with no new audio for this long is ended (its utterance died without an end)."""
REDOC_PATH = "/redoc"


M = TypeVar("M", bound=PlatformModel)
_UNREADABLE: Any = object()
"""A body that is not JSON we take."""
EO_PATHS = (ep.RECEIVE_MESSAGE, ep.SET_UTILITY, ep.SEND_ROUND_METADATA, ep.START_ROUND, ep.END_ROUND,
            ep.RECEIVE_LOG, ep.RECEIVE_REJECTION, ep.RECEIVE_ROUND_TOTALS)
"""The endpoints the EO calls besides ``/confirmAccept``: whatever happens, they acknowledge."""


def _body_schema(model: type[PlatformModel]) -> dict[str, Any]:
    """The body's documented shape for the OpenAPI page (bodies are read liberally, by hand)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "title": model.__name__, "description": ((model.__doc__ or "").strip().splitlines() or [""])[0],
        "properties": {name: {} for name in model.model_fields},
    }}}}}


class Ack(BaseModel):
    status: str


class PageDecision(BaseModel):
    """A page's answer to a confirm request: the buyer page's, or the display's (operator)."""

    type: Literal["confirm"]
    id: str
    accept: bool
    by: Literal["buyer", "operator"] = "operator"


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
        controller.attach(asyncio.get_running_loop())
        checks = asyncio.create_task(Reconciler(controller, controller.eo_url).run()) if controller.eo_url else None
        try:
            yield
        finally:
            if checks is not None:
                checks.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await checks
            controller.detach()

    app = edge_app(
        title="humaine-env Avatar Controller",
        version=__version__,
        description=(
            "The HUMAINE Environment Orchestrator's human-side service: the avatars speak "
            "permitted agent messages and gesture; round events become the retained round state."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        max_body_bytes=settings.max_body_bytes,
        # The current EO dies on an error answer (and reads ``status`` of /confirmAccept's): a
        # body it sent that the edge cannot take is acknowledged, or the deal declined.
        lenient={ep.CONFIRM_ACCEPT: {"status": CONFIRM_REJECTED_STATUS}, **{p: acknowledgement() for p in EO_PATHS}},
        refusal=_refusal,
        hidden_loc=("human", "agent"),
    )
    _add_docs(app)
    if settings.token:
        app.add_middleware(TokenGuard, token=settings.token, open_paths=(HEALTH_PATH,))

    notes = OnceLog(log)
    ack = acknowledgement

    async def load(request: Request) -> Any:
        """The body as strict JSON, or :data:`_UNREADABLE` (logged once per path)."""
        raw = await request.body()
        try:
            return parse_body(raw)
        except BodyRefused as exc:
            path = request.url.path
            notes.warning((path, "json"), "%s: %s (%.60r); acknowledged and ignored", path, exc.detail, raw)
            return _UNREADABLE

    def parse(path: str, model: type[M], data: Any) -> M | None:
        """``data`` as ``model``, read liberally (:func:`read_lenient`): the EO exits when we
        answer it with an error, so nothing it may send is refused. What had to be filled in,
        or could not be read at all, is logged once per path and kind."""
        if data is _UNREADABLE:
            return None
        result = read_lenient(model, data)
        if result.filled:
            notes.warning((path, result.filled), "%s: the EO sent no usable %s; filled in (logged once)",
                          path, ", ".join(result.filled))
        if result.value is None:
            notes.warning((path, result.error), "%s: unreadable body (%s); acknowledged and ignored", path, result.error)
        return result.value

    def act(path: str, handle: Callable[[M], object], body: M | None) -> None:
        """Do what the body asks; a failure is logged once and still acknowledged (an error
        answer would make the EO exit, and the next message may well be fine)."""
        if body is None:
            return
        try:
            handle(body)
        except Exception as exc:
            notes.warning((path, "failed", type(exc).__name__), "%s: handling the body failed (%s: %s); acknowledged",
                          path, type(exc).__name__, exc)
            log.debug("%s failed", path, exc_info=True)

    def route(path: str, model: type[M], handle: Callable[[M], None], summary: str) -> None:
        async def endpoint(request: Request) -> dict[str, Any]:
            act(path, handle, parse(path, model, await load(request)))
            return ack()

        endpoint.__name__ = path.strip("/").replace("/", "_")
        app.add_api_route(path, endpoint, methods=["POST"], response_model=Ack, summary=summary,
                          openapi_extra=_body_schema(model))

    @app.post(ep.RECEIVE_MESSAGE, response_model=Ack, summary="A permitted message",
              openapi_extra=_body_schema(AgentMessage))
    async def receive_message(request: Request) -> dict[str, Any]:
        """Every message the EO permitted. An avatar's is spoken after this answer; the
        human's is shown. Optional extension: ``gesture`` (a name or a list of names)."""
        data = await load(request)
        human = isinstance(data, dict) and data.get("speaker") == HUMAN
        act(ep.RECEIVE_MESSAGE, controller.receive_message, parse(ep.RECEIVE_MESSAGE, HumanUtterance if human else AgentMessage, data))
        return ack()

    route(ep.SET_UTILITY, SetUtility, controller.set_utility, "A participant's utility")
    route(ep.SEND_ROUND_METADATA, RoundMetadata, controller.round_metadata, "Durations of the round; the warm-up starts")
    route(ep.START_ROUND, StartRound, controller.start_round, "The negotiation starts")
    route(ep.END_ROUND, EndRound, controller.end_round, "The negotiation ends")
    route(ep.RECEIVE_LOG, LogEntry, controller.receive_log, "The EO's verdict on a proposed message")
    route(ep.RECEIVE_REJECTION, Rejection, controller.receive_rejection, "A message the EO blocked")
    route(ep.RECEIVE_ROUND_TOTALS, RoundTotals, controller.round_totals, "The round's totals")

    @app.post(ep.CONFIRM_ACCEPT, response_model=Ack, openapi_extra=_body_schema(ConfirmAccept))
    async def confirm_accept(request: Request) -> dict[str, Any]:
        """Answers exactly ``{"status": "acknowledged"}`` (the only yes the EO accepts) unless
        ``confirm_accept = "operator"`` and the operator declines on the display page. Always
        one of the two answers the EO understands, whatever the body."""
        body = parse(ep.CONFIRM_ACCEPT, ConfirmAccept, await load(request))
        try:
            return await controller.confirm_accept(body)
        except Exception as exc:
            notes.warning((ep.CONFIRM_ACCEPT, "failed", type(exc).__name__), "%s: confirming failed (%s: %s); "
                          "answered as an unreadable deal", ep.CONFIRM_ACCEPT, type(exc).__name__, exc)
            return await controller.confirm_accept(None)

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

    @app.get(FAVICON_PATH, include_in_schema=False)
    async def favicon() -> FileResponse:
        """The pages' icon (browsers ask for it whatever the page says)."""
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    app.mount(DISPLAY_STATIC_PATH, StaticFiles(directory=STATIC_DIR), name="display")
    _add_audio(app, controller)

    @app.websocket(DISPLAY_WS_PATH)
    async def display_feed(websocket: WebSocket) -> None:
        def decide(raw: str) -> None:
            try:
                decision = PageDecision.model_validate_json(raw)
            except ValueError:
                log.debug("display sent something we do not understand: %.80s", raw)
                return
            controller.decide(decision.id, decision.accept, decision.by)

        await serve_hub(websocket, controller.hub, decide)


def _add_audio(app: FastAPI, controller: AvatarController) -> None:
    """``speaker = "browser"``: each utterance as a WAV streamed while it is spoken (the page
    plays it). Same token rules as the page; an utterance not (or no longer) kept is a 404."""
    sink = stream_sink(controller.speaker.sink)
    if sink is None:
        return

    @app.get(AUDIO_PATH + "/{name}", include_in_schema=False)
    async def speech_audio(name: str) -> Response:
        stream = sink.stream(name)
        if stream is None:
            return Response(status_code=404, content=f"no utterance {name!r}\n", media_type="text/plain")

        async def body() -> AsyncIterator[bytes]:
            yield wav_header(stream.sample_rate)
            sent, idle = 0, 0.0
            while idle < STREAM_IDLE_S:
                chunks, done = stream.read(sent)
                if chunks:
                    sent += len(chunks)
                    idle = 0.0
                    yield b"".join(chunks)
                elif done:
                    return
                else:
                    await asyncio.sleep(STREAM_POLL_S)
                    idle += STREAM_POLL_S

        return StreamingResponse(body(), media_type="audio/wav", headers={"Cache-Control": "no-store"})
