"""The Avatar Controller's token: with ``[avatar] token`` set, every route but ``/health`` needs it.

:data:`TOKEN_REQUIRED` is a dependency of every router of the app but the one ``/health`` is on:
the platform's endpoints, ``/openapi.json``, ``/docs``, ``/redoc``, the pages, their files, their
WebSockets and the speech audio (``tests/unit/avatar/test_app_routes.py`` holds every route of the
app to it). Accepted as ``Authorization: Bearer <token>`` (the EO's side, through a proxy), or as
``?token=`` on a GET or a WebSocket (a browser opening a page or the docs); a page opened that way
gets the token as an HttpOnly same-site cookie, so the files and the feed it loads need no token
in their addresses. Without the token: 401 (a WebSocket: closed with :data:`WS_UNAUTHORIZED`).
"""

from __future__ import annotations

import hmac
import html
import logging
from collections.abc import MutableMapping
from http.cookies import SimpleCookie
from typing import Annotated, Any, Final
from urllib.parse import parse_qs, quote, unquote

from fastapi import Depends, HTTPException, Response, WebSocketException
from fastapi.responses import HTMLResponse
from starlette.requests import HTTPConnection

from avatar.deps import StateKey
from workers.runtime.logs import RateLimitedLog

log = logging.getLogger(__name__)
_denials = RateLimitedLog(log)

TOKEN_QUERY: Final = "token"
TOKEN_COOKIE: Final = "humaine_avatar_token"
WS_UNAUTHORIZED: Final = 4401
"""WebSocket close code for a missing or wrong token (4000-4999: application codes)."""
DENIED: Final = "missing or wrong token (Authorization: Bearer <token>, or ?token= on a page)"
TOKEN: Final = StateKey[str]("token")
"""``[avatar] token`` of the app ("": no token needed)."""


def _same(given: bytes, expected: bytes) -> bool:
    """Constant-time comparison on bytes: header values may hold any octet (``compare_digest``
    refuses non-ASCII ``str``)."""
    return bool(given) and hmac.compare_digest(given, expected)


def token_source(scope: MutableMapping[str, Any], token: bytes) -> str | None:
    """Where a valid ``token`` was found in a request's or WebSocket's ``scope`` (``header``,
    ``cookie``, ``query``), or None. Read from the raw headers: a value may hold any octet."""
    headers = dict(scope.get("headers") or [])
    scheme, _, value = headers.get(b"authorization", b"").partition(b" ")
    if scheme.lower() == b"bearer" and _same(value.strip(), token):
        return "header"
    cookie = headers.get(b"cookie")
    if cookie:
        try:
            jar = SimpleCookie(cookie.decode("latin-1"))
        except Exception:  # a malformed cookie header is no token
            jar = SimpleCookie()
        morsel = jar.get(TOKEN_COOKIE)
        if morsel is not None and _same(unquote(morsel.value).encode("utf-8", "replace"), token):
            return "cookie"
    if scope["type"] == "websocket" or scope.get("method") in ("GET", "HEAD"):
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        for given in query.get(TOKEN_QUERY, []):
            if _same(given.encode("utf-8", "replace"), token):
                return "query"
    return None


async def require_token(connection: HTTPConnection, response: Response, token: Annotated[str, Depends(TOKEN)]) -> None:
    """Refuse a request or WebSocket without the token; a page opened with ``?token=`` gets its
    cookie (on answers the route builds from what it returns: the pages' HTML)."""
    if not token:
        return
    expected = token.encode("utf-8")
    scope = connection.scope
    source = token_source(scope, expected)
    if source is None:
        _denials.warning(("denied", scope["type"]), "refused %s %s: missing or wrong token",
                         scope.get("method", "WebSocket"), scope.get("path"))
        if scope["type"] == "websocket":
            raise WebSocketException(WS_UNAUTHORIZED)
        if scope.get("method") == "GET" and b"text/html" in dict(scope.get("headers") or []).get(b"accept", b""):
            raise PageNeedsToken(str(scope.get("path") or "/"))
        raise HTTPException(401, DENIED, headers={"WWW-Authenticate": "Bearer"})
    if source == "query" and scope["type"] == "http":
        response.headers.append("set-cookie", f"{TOKEN_COOKIE}={quote(expected, safe='')}; HttpOnly; SameSite=Strict; Path=/")


TOKEN_REQUIRED: Final = Depends(require_token)
"""The router dependency of every route but ``/health``."""


class PageNeedsToken(Exception):
    """A browser asked for a page without the token: it gets a page saying how to open it
    (:func:`page_needs_token`), not a JSON error."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


NEEDS_TOKEN_PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>HUMAINE - this page needs the room's token</title>
<style>body{{font:18px/1.5 system-ui,sans-serif;background:#111318;color:#e9ecf2;max-width:40em;margin:10vh auto;padding:0 1em}}
code{{background:#23262f;padding:.1em .3em;border-radius:4px}}</style></head>
<body><h1>This page needs the room's token</h1>
<p>The room's Avatar Controller has a token (<code>[avatar] token</code>). Open this page with it:
<code>{path}?token=&hellip;</code> &mdash; the address <code>humaine-env run</code> printed has it.
Once opened that way, the browser keeps it for the room's other pages.</p></body></html>
"""


async def page_needs_token(_request: object, exc: Exception) -> HTMLResponse:
    """The app's answer to :class:`PageNeedsToken`: 401, and a page that says what to do."""
    path = html.escape(exc.path if isinstance(exc, PageNeedsToken) else "/")
    return HTMLResponse(NEEDS_TOKEN_PAGE.format(path=path), status_code=401, headers={"WWW-Authenticate": "Bearer"})
