"""The pages' live feeds: WebSocket hubs fed from any thread.

Events come from three threads (HTTP handlers on the event loop, the speech thread, the MQTT
network thread) and go to every open page. The display hub keeps the current picture (round, who
is speaking, captions, attention and whether the camera is up, pending confirmations, the round's
deals and totals) so a page opened or reloaded mid-round shows the right state at once; after
that it receives each event as it happens. A page that cannot keep up (queue full) is
disconnected rather than slowing the others. Each event is a model of :mod:`avatar.page_events`,
serialised once, strictly: one that is not valid JSON (a ``NaN`` from anywhere) is dropped with a
line rather than sent as text the page's ``JSON.parse`` throws away.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from avatar.page_events import DisplayEvent, DisplaySnapshot, DisplayState, PageEvent, RoundEvent
from formats import written
from workers.runtime.http.edge import strict_dumps
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import PHASE_NAMES

log = logging.getLogger(__name__)
_drops = RateLimitedLog(log)

STATIC_DIR = Path(__file__).resolve().parent / "static"
CLIENT_QUEUE_MAX = 256
AUDIO_PATH = "/display-audio"
"""Where the page fetches an utterance's speech (``speaker = "browser"``): ``AUDIO_PATH/<name>``."""

E = TypeVar("E", bound=PageEvent)
StateUpdate = Callable[[DisplayState], bool | None]
"""Applied to the display hub's kept state with an event; False: the event changes nothing."""


class EventHub(Generic[E]):
    """Fan-out of one feed's events (``E``) to WebSocket clients, from any thread; a new client
    gets :meth:`snapshot` first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: set[asyncio.Queue[str | None]] = set()
        self.sent = 0

    # -- loop binding ------------------------------------------------------------------------
    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def detach(self) -> None:
        self._loop = None
        for queue in list(self._clients):
            queue.put_nowait(None)

    # -- events (any thread) -----------------------------------------------------------------
    def snapshot(self) -> PageEvent:
        """The whole picture a new client gets first."""
        raise NotImplementedError

    def snapshot_text(self) -> str:
        """The snapshot as the JSON text a new page gets first."""
        snapshot = self.snapshot()
        text = _serialise(snapshot)
        return text if text is not None else strict_dumps({"type": snapshot.event_type()})

    def emit(self, event: E) -> bool:
        """Send ``event`` to every page; False when it cannot be serialised."""
        text = _serialise(event)
        if text is None:
            return False
        self._send(text)
        return True

    def _send(self, text: str) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._fan_out, text)
        except RuntimeError:  # loop closed between the check and the call
            pass

    def _fan_out(self, event: str) -> None:
        for queue in list(self._clients):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:
                log.warning("display client too slow; disconnecting it")
                self._clients.discard(queue)
                queue.get_nowait()  # make room for the end marker the client's sender waits for
                queue.put_nowait(None)
        self.sent += 1

    # -- clients (event loop) ----------------------------------------------------------------
    def register(self) -> asyncio.Queue[str | None]:
        queue: asyncio.Queue[str | None] = asyncio.Queue(CLIENT_QUEUE_MAX)
        self._clients.add(queue)
        return queue

    def unregister(self, queue: asyncio.Queue[str | None]) -> None:
        self._clients.discard(queue)

    @property
    def client_count(self) -> int:
        return len(self._clients)


class DisplayHub(EventHub[DisplayEvent]):
    """The display's feed (the display page and the buyer's page), with the state a new client needs."""

    def __init__(self, avatars: list[str], confirm_mode: str, looks: dict[str, str] | None = None) -> None:
        """``looks``: the figure drawn for each avatar (``female``/``male``, from its voice)."""
        super().__init__()
        self._state = DisplayState(
            avatars=list(avatars),
            looks=dict(looks or {}),
            confirm_mode=confirm_mode,
            round=None,
            attention=None,
            last_human=None,
            speaking=None,
            captions={name: None for name in avatars},
            confirms=[],
            log=[],
            camera=None,
            deals=[],
            totals=None,
            phase_names=dict(PHASE_NAMES),
            mass_nouns=sorted(written.MASS_NOUNS),
        )

    def snapshot(self) -> DisplaySnapshot:
        with self._lock:
            kept = self._state.model_dump(exclude_unset=True)  # fresh containers: a copy, taken under the lock
        return DisplaySnapshot.model_validate(kept)

    def set_round(self, event: RoundEvent) -> None:
        """The round's phase and deadlines changed. A round with another id is the next buyer's:
        the previous buyer's conversation (the captions, the history, what the buyer said) leaves
        the kept picture with the previous round's books (its deals, totals, prompts and the
        buyer page's view: the new round's follow from the ledger at once, :mod:`avatar.round_books`),
        and every open page gets the whole picture again after the round event, so no screen shows
        the last buyer's words into the next round's warm-up. The caption of an avatar still
        speaking stays while it is heard."""
        text = _serialise(event)
        if text is None:
            return
        view = event.view()
        with self._lock:
            before = self._state.round
            self._state.round = view
            fresh = view.round_id is not None and (before is None or before.round_id != view.round_id)
            if fresh:
                state = self._state
                speaking = state.speaking.avatar if state.speaking else None
                state.captions = {name: caption if name == speaking else None for name, caption in state.captions.items()}
                state.log, state.last_human = [], None
                state.deals, state.totals, state.confirms, state.buyer = [], None, [], None
        self._send(text)
        if fresh:
            self._send(self.snapshot_text())

    def emit(self, event: DisplayEvent, update: StateUpdate | None = None) -> bool:
        """Apply ``update`` to the kept state, then send ``event`` to every page (unless
        ``update`` returns False: the state says the event changes nothing). Returns whether it
        was sent."""
        text = _serialise(event)
        if text is None:
            return False
        if update is not None:
            with self._lock:
                if update(self._state) is False:
                    return False
        self._send(text)
        return True


def _serialise(event: PageEvent) -> str | None:
    """Strict JSON text of ``event``, or None (logged) when it holds something JSON has not."""
    try:
        return strict_dumps(event.wire())
    except (TypeError, ValueError) as exc:
        _drops.warning(("unserialisable", event.type), "display event %r dropped: %s", event.type, exc)
        return None
