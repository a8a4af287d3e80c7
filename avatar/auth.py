"""The Avatar Controller's token: with ``[avatar] token`` set, every route but ``/health`` needs it.

One ASGI guard in front of the whole app, so nothing is left out by accident: the platform's
endpoints, ``/openapi.json``, ``/docs``, ``/redoc``, the display page, its static files and its
WebSocket. Accepted as ``Authorization: Bearer <token>`` (the EO's side, through a proxy), or as
``?token=`` on a GET or a WebSocket (a browser opening the display page or the docs); a page
opened that way gets the token as an HttpOnly same-site cookie, so the files and the feed it
loads need no token in their addresses.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from http.cookies import SimpleCookie
from typing import Any, Final
from urllib.parse import parse_qs, quote, unquote

from workers.runtime.logs import RateLimitedLog

log = logging.getLogger(__name__)
_denials = RateLimitedLog(log)

TOKEN_QUERY: Final = "token"
TOKEN_COOKIE: Final = "humaine_avatar_token"
WS_UNAUTHORIZED: Final = 4401
"""WebSocket close code for a missing or wrong token (4000-4999: application codes)."""

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[dict[str, Any], Receive, Send], Awaitable[None]]


def _same(given: bytes, expected: bytes) -> bool:
    """Constant-time comparison on bytes: header values may hold any octet (``compare_digest``
    refuses non-ASCII ``str``)."""
    return bool(given) and hmac.compare_digest(given, expected)


class TokenGuard:
    """401 (or a WebSocket closed with 4401) without the token, except on ``open_paths``."""

    def __init__(self, app: ASGIApp, token: str, open_paths: Iterable[str] = ()) -> None:
        self.app = app
        self.token = token.encode("utf-8")
        self.open_paths = frozenset(open_paths)

    def _source(self, scope: dict[str, Any]) -> str | None:
        """Where a valid token was found (``header``, ``cookie``, ``query``), or None."""
        headers = dict(scope.get("headers") or [])
        scheme, _, value = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer" and _same(value.strip(), self.token):
            return "header"
        cookie = headers.get(b"cookie")
        if cookie:
            try:
                jar = SimpleCookie(cookie.decode("latin-1"))
            except Exception:  # a malformed cookie header is no token
                jar = SimpleCookie()
            morsel = jar.get(TOKEN_COOKIE)
            if morsel is not None and _same(unquote(morsel.value).encode("utf-8", "replace"), self.token):
                return "cookie"
        if scope["type"] == "websocket" or scope.get("method") in ("GET", "HEAD"):
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
            for given in query.get(TOKEN_QUERY, []):
                if _same(given.encode("utf-8", "replace"), self.token):
                    return "query"
        return None

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in self.open_paths:
            await self.app(scope, receive, send)
            return
        source = self._source(scope)
        if source is None:
            _denials.warning(("denied", scope["type"]), "refused %s %s: missing or wrong token",
                             scope.get("method", "WebSocket"), scope.get("path"))
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": WS_UNAUTHORIZED})
                return
            body = json.dumps({"detail": "missing or wrong token (Authorization: Bearer <token>, or ?token= on a page)"}).encode()
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        if source != "query" or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cookie = f"{TOKEN_COOKIE}={quote(self.token, safe='')}; HttpOnly; SameSite=Strict; Path=/".encode("ascii")

        async def with_cookie(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        await self.app(scope, receive, with_cookie)
