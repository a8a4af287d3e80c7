"""One WebSocket feed of an :class:`~avatar.display.EventHub`: the display page, the buyer's page
and the operator console are all fed this way (the snapshot first, then every event)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from fastapi import WebSocket, WebSocketDisconnect

from avatar.display import EventHub


async def serve_hub(websocket: WebSocket, hub: EventHub[Any], on_text: Callable[[str], None] | None = None) -> None:
    """Send ``hub``'s snapshot, then its events, until the page goes away (reading notices a
    closed page at once) or the hub closes; text the page sends goes to ``on_text``."""
    await websocket.accept()
    queue = hub.register()

    async def pump() -> None:
        await websocket.send_text(hub.snapshot_text())
        while (event := await queue.get()) is not None:
            await websocket.send_text(event)
        await websocket.close()

    sender = asyncio.create_task(pump())
    try:
        while (message := await websocket.receive())["type"] != "websocket.disconnect":
            text = message.get("text")
            if text is not None and on_text is not None:
                on_text(text)
    except WebSocketDisconnect:
        pass
    finally:
        hub.unregister(queue)
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender
