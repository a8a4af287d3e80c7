"""``/``: the display page (the room's screen), its files, its live feed, and each utterance's
audio while it is spoken (``speaker = "browser"``).

The feed is the display hub's (:class:`~avatar.display.DisplayHub`); the buyer's page listens on
it too, and both answer confirmations on it (:class:`~avatar.page_events.PageDecision`). The page
learns the addresses of its files and feed from the HTML served here.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Final, Protocol

from fastapi import APIRouter, Depends, WebSocket
from fastapi.responses import FileResponse, HTMLResponse, Response, StreamingResponse

from avatar.auth import TOKEN_REQUIRED
from avatar.deps import StateKey
from avatar.display import AUDIO_PATH, STATIC_DIR, DisplayHub
from avatar.display.socket import serve_hub
from avatar.page_events import PageDecision
from avatar.pages import add_files, fill_page
from hardware.speaker import Speaker
from hardware.speaker_stream import stream_sink, wav_header
from workers.runtime.http.edge import StrictRoute

log = logging.getLogger(__name__)

DISPLAY_PATH: Final = "/"
DISPLAY_STATIC_PATH: Final = "/display"
DISPLAY_FEED_PATH: Final = "/ws"
"""The display hub's WebSocket: the display page's feed, and the buyer page's."""
FAVICON_PATH: Final = "/favicon.ico"
PAGE_FILE: Final = "index.html"
STREAM_POLL_S: Final = 0.01
"""How often a speech stream being served looks for new audio (the speaker writes every 20 ms)."""
STREAM_IDLE_S: Final = 10.0
"""A speech stream with no new audio for this long is ended (its utterance died without an end)."""


class DisplayRoom(Protocol):
    """What the display's routes need of the Avatar Controller."""

    hub: DisplayHub
    speaker: Speaker

    def decide(self, confirm_id: str, accepted: bool, by: str) -> bool: ...


ROOM: Final = StateKey[DisplayRoom]("display_room")
RoomDep = Annotated[DisplayRoom, Depends(ROOM)]

router = APIRouter(route_class=StrictRoute, dependencies=[TOKEN_REQUIRED])
"""The page, its icon, its files and its feed."""
audio_router = APIRouter(route_class=StrictRoute, dependencies=[TOKEN_REQUIRED])
"""The utterances' audio: only when the speaker feeds the browser."""


@functools.cache
def _page() -> str:
    return fill_page(STATIC_DIR / PAGE_FILE, {"static": DISPLAY_STATIC_PATH, "feed": DISPLAY_FEED_PATH})


@router.get(DISPLAY_PATH, include_in_schema=False, response_class=HTMLResponse)
async def display_page() -> str:
    return _page()


@router.get(FAVICON_PATH, include_in_schema=False)
async def favicon() -> FileResponse:
    """The pages' icon (browsers ask for it whatever the page says)."""
    return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")


add_files(router, DISPLAY_STATIC_PATH, STATIC_DIR, "display")


@router.websocket(DISPLAY_FEED_PATH)
async def display_feed(websocket: WebSocket, room: RoomDep) -> None:
    def decide(raw: str) -> None:
        try:
            decision = PageDecision.model_validate_json(raw)
        except ValueError:
            log.debug("display sent something we do not understand: %.80s", raw)
            return
        room.decide(decision.id, decision.accept, decision.by)

    await serve_hub(websocket, room.hub, decide)


@audio_router.get(AUDIO_PATH + "/{name}", include_in_schema=False)
async def speech_audio(name: str, room: RoomDep) -> Response:
    """An utterance as a WAV streamed while it is spoken (the page plays it); one not (or no
    longer) kept is a 404."""
    sink = stream_sink(room.speaker.sink)
    stream = sink.stream(name) if sink is not None else None
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
