"""The HTTP edge every FastAPI app of the suite stands on (Avatar Controller, stand-in EO, demo sellers).

One body parser, one set of refusals and one last-resort guard, so that no input - not JSON,
``NaN``, ``1e308``, ``[[[[...``, a lone surrogate, a body too large, a handler that trips over
a shape nobody expected - ever becomes a 5xx, a traceback wall or a response that is not JSON:

* bodies are parsed by :func:`parse_body` (strict JSON, :mod:`workers.runtime.strict_json`, plus the
  platform's bounds: numbers within JavaScript's exact integers, lone surrogates replaced);
  a FastAPI model route gets it through :class:`StrictRoute`, a raw one calls :func:`json_body`;
* a refused body is a 400 (not JSON we take), 413 (too large) or 422 (JSON of the wrong shape),
  in the app's own error body, logged in one rate-limited line;
* a path the EO calls and whose answer it dereferences (``/confirmAccept``: the current EO
  crashes on anything but a JSON object with ``status``) is given a fixed ``lenient`` answer
  with status 200 instead of any refusal or failure;
* answers are serialised strictly (:class:`EdgeJSONResponse`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Final

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import TypeAdapter
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workers.runtime import strict_json
from workers.runtime.logs import RateLimitedLog
from workers.runtime.validation_text import error_line

log = logging.getLogger(__name__)
_refusals = RateLimitedLog(log)

DEFAULT_MAX_BODY_BYTES: Final = 256 * 1024
"""Larger request bodies are refused with 413 before being read (the platform's are < 4 KB)."""
MAX_MAGNITUDE: Final = float(2**53)
"""Numbers beyond JavaScript's exact integers are refused: the EO and the agents cannot send
them, no quantity, price or duration comes near, and a duration in ms stays a small int."""
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
REPLACEMENT_CHAR: Final = "\ufffd"
_ESCAPE: Final = re.compile(rb"(\\+)u([dD][0-9a-fA-F]{3})")
"""A ``\\uDxxx`` escape (a surrogate when >= D800; an escape when the backslashes are odd)."""

Refusal = Callable[[str, "list[dict[str, Any]] | None"], dict[str, Any]]
"""``(reason, validation errors or None) -> error body`` of one app."""


def error_body(reason: str, _errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The refusal body of the stand-in EO and the demo sellers."""
    return {"status": "error", "error": reason}


class BodyRefused(HTTPException):
    """The request body is refused before any handler sees it (``detail`` is the reason)."""


# -- parsing ------------------------------------------------------------------------------------
def _bounded(value: Any) -> Any:
    """Platform bounds on an already depth-checked value: magnitudes, lone surrogates."""
    if isinstance(value, str):
        return _SURROGATE.sub(REPLACEMENT_CHAR, value)
    if isinstance(value, dict):
        return {_SURROGATE.sub(REPLACEMENT_CHAR, k): _bounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bounded(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > MAX_MAGNITUDE:
        raise strict_json.StrictJSONError(f"the number {value:.6g} is out of range (at most 2^53 in magnitude)")
    return value


def _repair_lone_surrogates(raw: bytes) -> bytes:
    """``raw`` with every ``\\uD800``-``\\uDFFF`` escape that is not half of a pair turned into
    ``\\uFFFD``, before the strict parser (which refuses them) sees it."""
    escapes = [m for m in _ESCAPE.finditer(raw) if len(m.group(1)) % 2 and int(m.group(2), 16) >= 0xD800]
    lone, i = [], 0
    while i < len(escapes):
        m = escapes[i]
        nxt = escapes[i + 1] if i + 1 < len(escapes) else None
        if (int(m.group(2), 16) < 0xDC00 and nxt is not None and nxt.start() == m.end()
                and len(nxt.group(1)) == 1 and int(nxt.group(2), 16) >= 0xDC00):
            i += 2  # a pair: one character
            continue
        lone.append(m)
        i += 1
    if not lone:
        return raw
    out, last = [], 0
    for m in lone:
        out += [raw[last : m.end(1)], b"ufffd"]
        last = m.end()
    out.append(raw[last:])
    return b"".join(out)


def parse_body(raw: bytes) -> Any:
    """A request body as JSON within the platform's bounds (``None`` when empty); a lone
    surrogate, which ``JSON.stringify`` writes for half an emoji, becomes U+FFFD rather than
    losing the message. :class:`BodyRefused` (400) for anything else."""
    if not raw.strip():
        return None
    try:
        return _bounded(strict_json.loads(_repair_lone_surrogates(raw)))
    except strict_json.StrictJSONError as exc:
        raise BodyRefused(400, f"the body is not JSON we take: {exc}") from None


async def json_body(request: Request) -> Any:
    """For a route that reads its body itself (the stand-in, the demo sellers)."""
    return parse_body(await request.body())


class StrictRequest(Request):
    """A request whose ``json()`` is :func:`parse_body` (FastAPI's model routes call it)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse_body(await self.body())
        return self._json


class StrictRoute(APIRoute):
    """An :class:`APIRoute` whose body goes through :func:`parse_body`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictRequest(request.scope, request.receive))

        return strict


def strict_dumps(value: Any) -> str:
    """JSON text for a strict reader: ``ValueError`` rather than ``NaN``/``Infinity`` in the text,
    and lone surrogates (which UTF-8 cannot encode) replaced."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return _SURROGATE.sub(REPLACEMENT_CHAR, text)


class EdgeJSONResponse(JSONResponse):
    """JSON out as strict as JSON in: never ``NaN`` (``ValueError``, a bug of ours to see), and a
    lone surrogate that reached an answer (a path parameter echoed in an error) cannot make
    encoding fail."""

    def render(self, content: Any) -> bytes:
        return strict_dumps(content).encode("utf-8")


# -- OpenAPI for routes that read their body themselves ----------------------------------------
class EdgeApp(FastAPI):
    """A FastAPI app whose OpenAPI also holds the schemas of bodies that raw routes read
    themselves (added by :class:`BodyDocs`)."""

    def __init__(self, **fastapi_options: Any) -> None:
        super().__init__(**fastapi_options)
        self._body_schemas: dict[str, Any] = {}

    def add_body_schemas(self, defs: Mapping[str, Any]) -> None:
        """Component schemas a documented body refers to (before the OpenAPI is first built)."""
        self._body_schemas.update(defs)

    def openapi(self) -> dict[str, Any]:
        """FastAPI's schema with the documented bodies' component schemas, built once."""
        if self.openapi_schema is not None:
            return self.openapi_schema
        schema = super().openapi()
        schema.setdefault("components", {}).setdefault("schemas", {}).update(self._body_schemas)
        self.openapi_schema = schema
        return schema


class BodyDocs:
    """Request-body schemas for raw routes, from the platform models, in the app's OpenAPI.

    ``app.post(path, openapi_extra=docs(Model))`` documents the body the route expects (and
    lets a fuzzer generate it) while the route keeps its own parsing and refusals."""

    REF: Final = "#/components/schemas/{model}"

    def __init__(self, app: EdgeApp) -> None:
        self._app = app

    def __call__(self, model: Any) -> dict[str, Any]:
        schema = TypeAdapter(model).json_schema(ref_template=self.REF)
        self._app.add_body_schemas(schema.pop("$defs", {}))
        return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


# -- the app ------------------------------------------------------------------------------------
class EdgeMiddleware:
    """413 for bodies over ``limit`` bytes (never held in memory), and the last resort: an
    exception no handler took is one rate-limited line and a 500 (or the path's lenient
    answer), not uvicorn's traceback.

    With a ``content-length`` the size check is on the declared length (the HTTP parser holds
    the sender to it). Without one (chunked upload), the body is read here up to the limit and
    replayed to the app."""

    def __init__(self, app: ASGIApp, limit: int, lenient: Mapping[str, dict[str, Any]], refusal: Refusal) -> None:
        self.app = app
        self.limit = limit
        self.lenient = lenient
        self.refusal = refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            if scope["type"] == "http":
                limited = await self._limited(scope, receive)
                if limited is None:
                    await self._answer(send, path, 413, f"request body over {self.limit} bytes")
                    return
                receive = limited
            await self.app(scope, receive, tracking_send)
        except ClientDisconnect:
            log.debug("%s %s: the client left before its request was read", scope.get("method", "WS"), path)
        except Exception as exc:
            first = _refusals.error(("failed", path, type(exc)), "%s %s failed: %s: %s", scope.get("method", "WS"), path,
                                    type(exc).__name__, exc)
            if first:
                log.debug("the failure's traceback", exc_info=True)
            if scope["type"] == "http" and not started:
                await self._answer(send, path, 500, f"internal error: {type(exc).__name__}")

    async def _limited(self, scope: Scope, receive: Receive) -> Receive | None:
        """``receive`` for the app, or None when the body is over the limit."""
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            return None if declared.isdigit() and int(declared) > self.limit else receive
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return receive  # disconnect: let the app see it
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        return replay

    async def _answer(self, send: Send, path: str, status: int, reason: str) -> None:
        status, body = answer_for(path, status, reason, None, self.lenient, self.refusal)
        await EdgeJSONResponse(body, status_code=status)({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def answer_for(path: str, status: int, reason: str, errors: list[dict[str, Any]] | None,
               lenient: Mapping[str, dict[str, Any]], refusal: Refusal) -> tuple[int, dict[str, Any]]:
    """The status and body of a refusal on ``path``, logged once (rate-limited)."""
    if path in lenient:
        _refusals.warning(("lenient", path, status), "%s: answered %s instead of %d: %s", path, lenient[path], status, reason)
        return 200, dict(lenient[path])
    _refusals.warning(("refused", path, status), "%d on %s: %s", status, path, reason)
    return status, refusal(reason, errors)


def readable_errors(exc: RequestValidationError, hidden_loc: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """pydantic's errors without the rejected input (it may be huge) and with messages as text."""
    out = []
    for err in exc.errors():
        loc = [p if isinstance(p, (int, str)) else str(p) for p in err.get("loc", ()) if p not in hidden_loc]
        out.append({"loc": loc, "msg": str(err.get("msg", "invalid")), "type": str(err.get("type", ""))})
    return out


def edge_app(
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    lenient: Mapping[str, dict[str, Any]] | None = None,
    refusal: Refusal = error_body,
    hidden_loc: tuple[str, ...] = (),
    **fastapi_options: Any,
) -> EdgeApp:
    """A FastAPI app on the shared edge. Add routes after this (they get :class:`StrictRoute`).

    ``lenient``: path -> the 200 answer given instead of any refusal or failure there.
    ``hidden_loc``: parts of a validation error's location left out of the readable reason
    (e.g. the tag of a discriminated union)."""
    lenient = dict(lenient or {})
    app = EdgeApp(default_response_class=EdgeJSONResponse, **fastapi_options)
    app.router.route_class = StrictRoute

    @app.exception_handler(BodyRefused)
    async def refused(request: Request, exc: BodyRefused) -> JSONResponse:
        status, body = answer_for(request.url.path, exc.status_code, str(exc.detail), None, lenient, refusal)
        return EdgeJSONResponse(body, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = readable_errors(exc, ("body", *hidden_loc))
        reason = error_line(errors, "body")
        status, body = answer_for(request.url.path, 422, reason, errors, lenient, refusal)
        return EdgeJSONResponse(body, status_code=status)

    app.add_middleware(EdgeMiddleware, limit=max_body_bytes, lenient=lenient, refusal=refusal)
    return app
