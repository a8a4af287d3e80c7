"""The Avatar Controller's HTTP face: the EO's human-side endpoints, /health, the display page.

Paths and body models come from :mod:`orchestrator_client` (never spelled here). Bodies are
validated by FastAPI; a malformed one gets a 422 whose ``reason`` is one readable line (and
``detail`` the usual list). Handlers do only quick work and answer: the EO has no timeouts and
a slow answer holds up the agent that is waiting on its ``/relayMessage``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, TypeVar

from fastapi import Depends, FastAPI, HTTPException, Request, WebSocket, WebSocketDisconnect, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from avatar.controller import AvatarController
from avatar.display import STATIC_DIR
from orchestrator_client import endpoints as ep
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
from workers import __version__
from workers.logs import OnceLog

log = logging.getLogger(__name__)

HEALTH_PATH = "/health"
DISPLAY_PATH = "/"
DISPLAY_STATIC_PATH = "/display"
DISPLAY_WS_PATH = "/ws"
TOKEN_QUERY = "token"


M = TypeVar("M", bound=PlatformModel)
_UNREADABLE: Any = object()
"""A body that is not JSON."""


def _body_schema(model: type[PlatformModel]) -> dict[str, Any]:
    """The body's documented shape for the OpenAPI page (bodies are read liberally, by hand)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "title": model.__name__, "description": ((model.__doc__ or "").strip().splitlines() or [""])[0],
        "properties": {name: {} for name in model.model_fields},
    }}}}}


class Ack(BaseModel):
    status: str


class OperatorDecision(BaseModel):
    """A display page's answer to a confirm request."""

    type: Literal["confirm"]
    id: str
    accept: bool


# -- middleware ---------------------------------------------------------------------------------
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class BodyLimitMiddleware:
    """413 for request bodies over ``limit`` bytes, so a huge body is never held in memory.

    With a ``content-length`` the check is on the declared length (the HTTP parser holds the
    sender to it). Without one (chunked upload), the body is read here up to the limit and
    replayed to the app; an exception raised mid-read would reach FastAPI's body parser,
    which turns it into a 400 that hides the reason."""

    def __init__(self, app: Callable[..., Awaitable[None]], limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            if declared.isdigit() and int(declared) > self.limit:
                await self._refuse(send)
                return
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, receive, send)  # disconnect: let the app see it
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps({"detail": f"request body over {self.limit} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})


def _reason(errors: list[dict[str, Any]]) -> str:
    parts = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "human", "agent")]
        parts.append(f"{'.'.join(loc) or 'body'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


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

    app = FastAPI(
        title="humaine-env Avatar Controller",
        version=__version__,
        description=(
            "The HUMAINE Environment Orchestrator's human-side service: Celia and Watson speak "
            "permitted agent messages and gesture; round events become the retained round state."
        ),
        lifespan=lifespan,
    )
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = jsonable_encoder(exc.errors(), custom_encoder={Exception: str})
        reason = _reason(errors)
        log.warning("422 on %s: %s", request.url.path, reason)
        return JSONResponse(status_code=422, content={"reason": reason, "detail": errors})

    def require_token(request: Request) -> None:
        if not settings.token:
            return
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip(), settings.token):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong bearer token",
                                headers={"WWW-Authenticate": "Bearer"})

    guarded = [Depends(require_token)]
    notes = OnceLog(log)
    ack = acknowledgement

    async def load(request: Request) -> Any:
        """The JSON body, or :data:`_UNREADABLE` (logged once per path)."""
        raw = await request.body()
        try:
            return json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            path = request.url.path
            notes.warning((path, "json"), "%s: the body is not JSON (%.60r); acknowledged and ignored", path, raw)
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
        app.add_api_route(path, endpoint, methods=["POST"], dependencies=guarded, response_model=Ack,
                          summary=summary, openapi_extra=_body_schema(model))

    @app.post(ep.RECEIVE_MESSAGE, dependencies=guarded, response_model=Ack, summary="A permitted message",
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

    @app.post(ep.CONFIRM_ACCEPT, dependencies=guarded, response_model=Ack, openapi_extra=_body_schema(ConfirmAccept))
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
    token = controller.settings.token

    def token_ok(given: str | None) -> bool:
        return not token or (given is not None and hmac.compare_digest(given, token))

    @app.get(DISPLAY_PATH, include_in_schema=False)
    async def display_page(request: Request) -> FileResponse:
        if not token_ok(request.query_params.get(TOKEN_QUERY)):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "add ?token=... to the display page's address")
        return FileResponse(STATIC_DIR / "index.html")

    app.mount(DISPLAY_STATIC_PATH, StaticFiles(directory=STATIC_DIR), name="display")

    @app.websocket(DISPLAY_WS_PATH)
    async def display_feed(websocket: WebSocket) -> None:
        if not token_ok(websocket.query_params.get(TOKEN_QUERY)):
            await websocket.close(code=4401)
            return
        await websocket.accept()
        queue = controller.hub.register()

        async def pump() -> None:
            await websocket.send_json(controller.hub.snapshot())
            while True:
                event = await queue.get()
                if event is None:
                    await websocket.close()
                    return
                await websocket.send_json(event)

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
