"""What the three pages (display, buyer, operator console) share on the server: their HTML with
the addresses filled in, and their files served behind the token.

A page's script spells no path: the server writes each address into the page's HTML (a
``data-*`` attribute on ``<body>``, ``{{feed}}`` in the source) and the script reads it there.
The files are routes of the resource's router rather than a mount, because a router's
dependencies (the token) do not reach into a mounted app.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from fastapi import APIRouter, Request, Response
from fastapi.staticfiles import StaticFiles

ROOM_STOPPED: Final = "The room stopped at {time}. This page comes back by itself when the room does."
"""What every page says once it lost its feed (the Avatar Controller stopped, or the network
between them): ``{time}`` is when, on the page's clock. The page's timers stop with the room and
the words go when the feed is back (each page's script, ``data-stopped`` on ``<body>``)."""
PAGE_TEXTS: Final = {"stopped": ROOM_STOPPED}
"""The words every page takes from the server, filled in like its addresses."""


def fill_page(page: Path, addresses: Mapping[str, str]) -> str:
    """``page``'s HTML with each ``{{key}}`` replaced by its address, and each of
    :data:`PAGE_TEXTS` by its words."""
    text = page.read_text(encoding="utf-8")
    for key, value in {**addresses, **{k: html.escape(v) for k, v in PAGE_TEXTS.items()}}.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def add_files(router: APIRouter, path: str, directory: Path, name: str) -> None:
    """Serve ``directory``'s files at ``path/<file>`` on ``router`` (GET and HEAD; Starlette's
    :class:`StaticFiles` answers: conditional requests, 404, nothing outside the directory)."""
    files = StaticFiles(directory=directory)

    async def page_file(file: str, request: Request) -> Response:
        return await files.get_response(os.path.normpath(os.path.join(*file.split("/"))), request.scope)

    router.add_api_route(f"{path}/{{file:path}}", page_file, methods=["GET", "HEAD"], include_in_schema=False, name=name)
