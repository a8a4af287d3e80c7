"""The EO's human-side service: the endpoints the EO calls, ``/health``, and the OpenAPI schema
with its two pages.

Paths and body models come from :mod:`humaine_platform` (never spelled here). Bodies are
parsed as strict JSON on the shared edge (:mod:`workers.runtime.http.edge`). The EO exits
when its human-side service answers it with an error, so every endpoint it calls reads its body
liberally (:func:`~humaine_platform.models.read_lenient`) and always acknowledges: what is
missing is filled in, what cannot be read is logged once and ignored, and ``/confirmAccept``
always gives one of the EO's two answers (:data:`LENIENT` is what the edge answers there when a
body is refused before any handler sees it). Handlers do only quick work and answer: the EO has
no timeouts and a slow answer holds up the agent that is waiting on its ``/relayMessage``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, Final, TypeVar
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel

from avatar.auth import TOKEN_QUERY, TOKEN_REQUIRED
from avatar.confirmations import CONFIRM_REJECTED_STATUS
from avatar.controller import AvatarController
from avatar.deps import StateKey
from humaine_platform import endpoints as ep
from humaine_platform.models import (
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
from workers.runtime.http.edge import BodyRefused, StrictRoute, parse_body
from workers.runtime.logs import OnceLog

log = logging.getLogger(__name__)

HEALTH_PATH: Final = ep.HEALTH
OPENAPI_PATH: Final = "/openapi.json"
DOCS_PATH: Final = "/docs"
REDOC_PATH: Final = "/redoc"
EO_PATHS: Final = (ep.RECEIVE_MESSAGE, ep.SET_UTILITY, ep.SEND_ROUND_METADATA, ep.START_ROUND, ep.END_ROUND,
                   ep.RECEIVE_LOG, ep.RECEIVE_REJECTION, ep.RECEIVE_ROUND_TOTALS)
"""The endpoints the EO calls besides ``/confirmAccept``: whatever happens, they acknowledge."""
LENIENT: Final = {ep.CONFIRM_ACCEPT: {"status": CONFIRM_REJECTED_STATUS}, **{p: acknowledgement() for p in EO_PATHS}}
"""The edge's answer on the EO's paths instead of any refusal (the current EO dies on an error
answer, and reads ``status`` of /confirmAccept's): a body it sent that cannot be taken is
acknowledged, or the deal declined."""

M = TypeVar("M", bound=PlatformModel)
_UNREADABLE: Any = object()
"""A body that is not JSON we take."""


class Ack(BaseModel):
    status: str


def refusal(reason: str, errors: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A refused body: ``reason`` in one line, ``detail`` pydantic's errors when there are any."""
    return {"reason": reason, "detail": errors if errors is not None else reason}


def _body_schema(model: type[PlatformModel]) -> dict[str, Any]:
    """The body's documented shape for the OpenAPI page (bodies are read liberally, by hand)."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "title": model.__name__, "description": ((model.__doc__ or "").strip().splitlines() or [""])[0],
        "properties": {name: {} for name in model.model_fields},
    }}}}}


class Intake:
    """How the EO's bodies are read, and what could not be read said once per path and kind
    (one per app: a test's second app logs its own)."""

    def __init__(self) -> None:
        self.notes = OnceLog(log)

    async def load(self, request: Request) -> Any:
        """The body as strict JSON, or :data:`_UNREADABLE` (logged once per path)."""
        raw = await request.body()
        try:
            return parse_body(raw)
        except BodyRefused as exc:
            path = request.url.path
            self.notes.warning((path, "json"), "%s: %s (%.60r); acknowledged and ignored", path, exc.detail, raw)
            return _UNREADABLE

    def parse(self, path: str, model: type[M], data: Any) -> M | None:
        """``data`` as ``model``, read liberally (:func:`read_lenient`): the EO exits when we
        answer it with an error, so nothing it may send is refused. What had to be filled in,
        or could not be read at all, is logged once per path and kind."""
        if data is _UNREADABLE:
            return None
        result = read_lenient(model, data)
        if result.filled:
            self.notes.warning((path, result.filled), "%s: the EO sent no usable %s; filled in (logged once)",
                               path, ", ".join(result.filled))
        if result.value is None:
            self.notes.warning((path, result.error), "%s: unreadable body (%s); acknowledged and ignored", path, result.error)
        return result.value

    def act(self, path: str, handle: Callable[[M], object], body: M | None) -> None:
        """Do what the body asks; a failure is logged once and still acknowledged (an error
        answer would make the EO exit, and the next message may well be fine)."""
        if body is None:
            return
        try:
            handle(body)
        except Exception as exc:
            self.notes.warning((path, "failed", type(exc).__name__), "%s: handling the body failed (%s: %s); acknowledged",
                               path, type(exc).__name__, exc)
            log.debug("%s failed", path, exc_info=True)


CONTROLLER: Final = StateKey[AvatarController]("controller")
INTAKE: Final = StateKey[Intake]("intake")
ControllerDep = Annotated[AvatarController, Depends(CONTROLLER)]
IntakeDep = Annotated[Intake, Depends(INTAKE)]

router = APIRouter(route_class=StrictRoute, dependencies=[TOKEN_REQUIRED])
"""The EO's endpoints and the schema: behind the token."""
health_router = APIRouter(route_class=StrictRoute)
"""``/health``: open, for liveness probes."""


# -- the schema and its pages ----------------------------------------------------------------------
def _schema_url(request: Request) -> str:
    """The schema's address with the token the page was opened with."""
    token = request.query_params.get(TOKEN_QUERY)
    return f"{OPENAPI_PATH}?{urlencode({TOKEN_QUERY: token})}" if token else OPENAPI_PATH


@router.get(OPENAPI_PATH, include_in_schema=False)
async def openapi(request: Request) -> JSONResponse:
    return JSONResponse(request.app.openapi())


@router.get(DOCS_PATH, include_in_schema=False, response_class=HTMLResponse)
async def docs(request: Request) -> str:
    """Swagger UI (its HTML returned as text, so that a page opened with ``?token=`` gets its cookie)."""
    return bytes(get_swagger_ui_html(openapi_url=_schema_url(request), title=f"{request.app.title} - docs").body).decode()


@router.get(REDOC_PATH, include_in_schema=False, response_class=HTMLResponse)
async def redoc(request: Request) -> str:
    return bytes(get_redoc_html(openapi_url=_schema_url(request), title=f"{request.app.title} - ReDoc").body).decode()


# -- the EO's endpoints ----------------------------------------------------------------------------
@router.post(ep.RECEIVE_MESSAGE, response_model=Ack, summary="A permitted message", openapi_extra=_body_schema(AgentMessage))
async def receive_message(request: Request, controller: ControllerDep, intake: IntakeDep) -> dict[str, Any]:
    """Every message the EO permitted. An avatar's is spoken after this answer; the
    human's is shown. Optional extension: ``gesture`` (a name or a list of names)."""
    data = await intake.load(request)
    human = isinstance(data, dict) and data.get("speaker") == HUMAN
    if human:
        intake.act(ep.RECEIVE_MESSAGE, controller.receive_message, intake.parse(ep.RECEIVE_MESSAGE, HumanUtterance, data))
    else:
        intake.act(ep.RECEIVE_MESSAGE, controller.receive_message, intake.parse(ep.RECEIVE_MESSAGE, AgentMessage, data))
    return acknowledgement()


def _acknowledged(path: str, model: type[M], handle: Callable[[AvatarController, M], None], summary: str) -> None:
    """An endpoint that does what ``handle`` does with the body, and acknowledges."""

    async def endpoint(request: Request, controller: ControllerDep, intake: IntakeDep) -> dict[str, Any]:
        intake.act(path, lambda body: handle(controller, body), intake.parse(path, model, await intake.load(request)))
        return acknowledgement()

    endpoint.__name__ = path.strip("/").replace("/", "_")
    router.add_api_route(path, endpoint, methods=["POST"], response_model=Ack, summary=summary, openapi_extra=_body_schema(model))


_acknowledged(ep.SET_UTILITY, SetUtility, AvatarController.set_utility, "A participant's utility")
_acknowledged(ep.SEND_ROUND_METADATA, RoundMetadata, AvatarController.round_metadata, "Durations of the round; the warm-up starts")
_acknowledged(ep.START_ROUND, StartRound, AvatarController.start_round, "The negotiation starts")
_acknowledged(ep.END_ROUND, EndRound, AvatarController.end_round, "The negotiation ends")
_acknowledged(ep.RECEIVE_LOG, LogEntry, AvatarController.receive_log, "The EO's verdict on a proposed message")
_acknowledged(ep.RECEIVE_REJECTION, Rejection, AvatarController.receive_rejection, "A message the EO blocked")
_acknowledged(ep.RECEIVE_ROUND_TOTALS, RoundTotals, AvatarController.round_totals, "The round's totals")


@router.post(ep.CONFIRM_ACCEPT, response_model=Ack, openapi_extra=_body_schema(ConfirmAccept))
async def confirm_accept(request: Request, controller: ControllerDep, intake: IntakeDep) -> dict[str, Any]:
    """Answers exactly ``{"status": "acknowledged"}`` (the only yes the EO accepts) unless
    ``confirm_accept = "operator"`` and the operator declines on the display page. Always
    one of the two answers the EO understands, whatever the body."""
    body = intake.parse(ep.CONFIRM_ACCEPT, ConfirmAccept, await intake.load(request))
    try:
        return await controller.confirm_accept(body)
    except Exception as exc:
        intake.notes.warning((ep.CONFIRM_ACCEPT, "failed", type(exc).__name__), "%s: confirming failed (%s: %s); "
                             "answered as an unreadable deal", ep.CONFIRM_ACCEPT, type(exc).__name__, exc)
        return await controller.confirm_accept(None)


@health_router.get(HEALTH_PATH)
async def health(controller: ControllerDep) -> dict[str, Any]:
    return {"status": "ok", "version": __version__, **controller.health()}
