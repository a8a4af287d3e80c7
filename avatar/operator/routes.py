"""``/operator``: the console page, its files, its live feed and the operator's actions.

Its router is one of the Avatar Controller's app, behind the same token rules as the display
(``?token=`` on the page, then its cookie); what it reads is the app's :class:`Console`, and its
lifespan runs the console's side of the room (the feed's hub, the links it watches). The feed is
a WebSocket like the display's. The page learns the feed's and files' addresses from the HTML
this module serves, so no path is spelled in the page's script.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Protocol

from fastapi import APIRouter, Depends, FastAPI, Request, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse, Response

from avatar.auth import TOKEN_REQUIRED
from avatar.competition.control import ControlAnswer, RoundControl
from avatar.controller import AvatarController
from avatar.deps import StateKey
from avatar.display.socket import serve_hub
from avatar.operator.alerts import AlertBook
from avatar.operator.day import DAY_DIR, DayBook, clean_buyer
from avatar.operator.feed import OperatorFeed, Subscriber
from avatar.pages import add_files, fill_page
from workers.runtime.config import Config
from workers.runtime.http.edge import BodyRefused, StrictRoute, parse_body
from workers.runtime.messages import Calibration, Envelope, now_ms
from workers.runtime.topics import Topic

log = logging.getLogger(__name__)

CONSOLE_PATH: Final = "/operator"
CONSOLE_STATIC_PATH: Final = "/operator/static"
CONSOLE_FEED_PATH: Final = "/operator/ws"
NEXT_ROUND_PATH: Final = "/operator/round/next"
BUYER_PATH: Final = "/operator/buyer"
DAY_JSON_PATH: Final = "/operator/day.json"
DAY_CSV_PATH: Final = "/operator/day.csv"
END_ROUND_PATH: Final = "/operator/round/end"
STANDINGS_JSON_PATH: Final = "/operator/standings.json"
STANDINGS_CSV_PATH: Final = "/operator/standings.csv"
CALIBRATE_PATH: Final = "/operator/calibrate"
STATIC_DIR: Final = Path(__file__).resolve().parent / "static"
PAGE_FILE: Final = "console.html"
CONSOLE_SOURCE: Final = "operator-console"
"""The ``source`` of what the console publishes."""
LINK_POLL_S: Final = 0.5
"""How often the broker connection is looked at (a change reaches the consoles this fast)."""
EO_PROBE_INTERVAL_S: Final = 5.0
"""How often the EO is asked whether it answers, and only while a console is open."""


async def _watch_links(feed: OperatorFeed, broker_connected: Callable[[], bool], rounds: RoundControl | None) -> None:
    """Keep the broker's and the EO's reachability current on the consoles, and notice workers
    that went silent."""
    next_probe = 0.0
    while True:
        feed.set_link("broker", connected=broker_connected())
        feed.check_silent(now_ms())
        if rounds is not None and rounds.eo_url and feed.hub.client_count and time.monotonic() >= next_probe:
            next_probe = time.monotonic() + EO_PROBE_INTERVAL_S
            kind = await rounds.look()
            feed.set_link("eo", reachable=kind is not None, detail=rounds.driver()["text"], standin=kind == "standin")
        await asyncio.sleep(LINK_POLL_S)


def _answer(answer: ControlAnswer) -> JSONResponse:
    """Next or End round's answer to the console: what it did, or why not (409, in words)."""
    return JSONResponse(answer.body(), status_code=200 if answer.ok else 409)


class ConsoleBus(Subscriber, Protocol):
    """The console also publishes: the round state with its buyer, calibration requests."""

    def publish(self, topic: Topic, message: Envelope) -> None: ...


@dataclass(frozen=True)
class Console:
    """The console's side of the room: its feed of the bus, the day book, the round control its
    Next and End round drive (None: none), the bus it publishes on and the controller that keeps
    the buyer's name."""

    feed: OperatorFeed
    day: DayBook
    rounds: RoundControl | None
    bus: ConsoleBus
    broker_connected: Callable[[], bool]
    controller: AvatarController

    @classmethod
    def open(cls, config: Config, bus: ConsoleBus, broker_connected: Callable[[], bool], controller: AvatarController,
             rounds: RoundControl | None = None) -> Console:
        """Subscribe the console's feed on ``bus`` (before the bus starts, so retained statuses
        arrive with the first connection). The day's rounds come from the controller's ledger
        (:class:`DayBook`); the buyer named here is written there and rides on the round state,
        for whoever files things per round; the competition's picture comes from ``rounds``."""
        feed = OperatorFeed(bus, AlertBook(controller.ledger), on_undelivered=controller.undelivered)
        if rounds is not None and rounds.eo_url:
            feed.set_link("eo", url=rounds.eo_url)
        else:
            feed.set_link("eo", reachable=False, detail=rounds.problem if rounds is not None else "no round control")
        day = DayBook(controller.ledger, config.core.data_dir / DAY_DIR)

        def day_changed(_book: object) -> None:
            summary, changed = day.export()
            if changed:
                feed.set_day(summary)
                if rounds is not None:
                    rounds.changed()  # a round's phase or totals move the competition's picture

        controller.books.listen(day_changed)
        controller.on_alert(feed.books_alert)
        feed.set_day(day.export()[0])
        if rounds is not None:
            rounds.on_change(feed.set_competition)
            feed.set_competition(rounds.view())
        return cls(feed, day, rounds, bus, broker_connected, controller)

    async def round_still_runs(self) -> bool:
        """Whether the room's open round still runs at the EO, so that a buyer named now is its
        buyer too. A round the EO no longer has (it restarted; the books' check is about to mark the
        round lost) keeps the buyer it was played by; an EO that does not answer cannot say, and
        the round the room shows is taken at its word."""
        current = self.controller.ledger.current()
        if current is None or not current.open:
            return False
        if self.rounds is None:
            return True
        return await self.rounds.eo.knows(current.round_id) is not False

    def name_buyer(self, name: Any, running: bool) -> str:
        """The buyer of the next rounds (and of the running one when ``running``), in the ledger."""
        label = clean_buyer(name)
        self.controller.name_buyer(label, running)
        return label


CONSOLE: Final = StateKey[Console]("console")
ConsoleDep = Annotated[Console, Depends(CONSOLE)]


async def _feed(console: ConsoleDep) -> OperatorFeed:
    return console.feed


FeedDep = Annotated[OperatorFeed, Depends(_feed)]


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """While the app serves: the feed's hub on the event loop, and the links watched."""
    console = CONSOLE.of(app)
    console.feed.hub.attach(asyncio.get_running_loop())
    watcher = asyncio.create_task(_watch_links(console.feed, console.broker_connected, console.rounds))
    try:
        yield
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        console.feed.hub.detach()


router = APIRouter(route_class=StrictRoute, dependencies=[TOKEN_REQUIRED], lifespan=_lifespan)


@functools.cache
def _page() -> str:
    """The console's HTML with the addresses of its files, feed and actions filled in."""
    return fill_page(STATIC_DIR / PAGE_FILE, {
        "static": CONSOLE_STATIC_PATH, "feed": CONSOLE_FEED_PATH, "next": NEXT_ROUND_PATH, "end": END_ROUND_PATH,
        "buyer": BUYER_PATH, "day_json": DAY_JSON_PATH, "day_csv": DAY_CSV_PATH, "calibrate": CALIBRATE_PATH,
        "standings_json": STANDINGS_JSON_PATH, "standings_csv": STANDINGS_CSV_PATH})


@router.get(CONSOLE_PATH, include_in_schema=False, response_class=HTMLResponse)
async def console_page() -> str:
    return _page()


add_files(router, CONSOLE_STATIC_PATH, STATIC_DIR, "operator")


@router.websocket(CONSOLE_FEED_PATH)
async def console_feed(websocket: WebSocket, feed: FeedDep) -> None:
    await serve_hub(websocket, feed.hub)  # the console sends nothing


@router.post(NEXT_ROUND_PATH, include_in_schema=False)
async def next_round(request: Request, console: ConsoleDep) -> JSONResponse:
    """The operator's Next round: the schedule's next round (with a roster), else the avatars'
    sellers for the buyer named, with these durations (``{"durations": {...}}``; none: the last
    ones used)."""
    try:
        data = parse_body(await request.body())
    except BodyRefused as exc:
        return JSONResponse({"ok": False, "reason": f"not a JSON body: {exc.detail}"}, status_code=400)
    if console.rounds is None:
        return JSONResponse({"ok": False, "reason": "this Avatar Controller starts no rounds"}, status_code=409)
    if not isinstance(data, dict):
        return JSONResponse({"ok": False, "reason": 'the body is {"durations": {...}, "buyer": "name"}'}, status_code=422)
    durations = data.get("durations")
    if durations is not None and not isinstance(durations, dict):
        return JSONResponse({"ok": False, "reason": "durations are seconds: warmUp, round (above 0), post"}, status_code=422)
    buyer = None
    if "buyer" in data and not console.rounds.tournament.enabled:
        buyer = console.name_buyer(data["buyer"], running=False)
    answer = await console.rounds.next_round(durations, buyer)
    log.info("the operator's Next round: %s", answer.body())
    return _answer(answer)


@router.post(BUYER_PATH, include_in_schema=False)
async def set_buyer(request: Request, console: ConsoleDep) -> JSONResponse:
    """The buyer of the next round, and of the running one (with the platform's EO, whose
    rounds start there, the operator names the buyer of the round in progress)."""
    try:
        data = parse_body(await request.body())
    except BodyRefused as exc:
        return JSONResponse({"ok": False, "reason": f"not a JSON body: {exc.detail}"}, status_code=400)
    if not isinstance(data, dict) or not isinstance(data.get("buyer"), str):
        return JSONResponse({"ok": False, "reason": 'the body is {"buyer": "name"}'}, status_code=422)
    running = await console.round_still_runs()
    label = console.name_buyer(data["buyer"], running=running)
    return JSONResponse({"ok": True, "buyer": label, "running": running})


@router.get(DAY_JSON_PATH, include_in_schema=False)
async def day_json(console: ConsoleDep) -> JSONResponse:
    """The day as in its exported file: per round, buyer and seller, and every round whole."""
    return JSONResponse(console.day.whole().model_dump())


@router.get(DAY_CSV_PATH, include_in_schema=False)
async def day_csv(console: ConsoleDep) -> Response:
    day = console.day
    return Response(day.csv_text(), media_type="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="humaine-day-{day.date}.csv"'})


@router.post(CALIBRATE_PATH, include_in_schema=False)
async def calibrate(console: ConsoleDep) -> JSONResponse:
    """The operator's Calibrate (a new buyer in the seat): the camera worker, which holds the
    webcam, measures each avatar's direction; its progress reaches the consoles on the feed."""
    feed = console.feed
    why_not = feed.camera_unavailable()
    if why_not is not None:
        return JSONResponse({"ok": False, "reason": why_not}, status_code=409)
    request = Calibration(source=CONSOLE_SOURCE, state="requested")
    console.bus.publish(feed.topics.camera_calibration(), request)
    feed.on_calibration("", request)
    log.info("the operator asked the camera worker to calibrate")
    return JSONResponse({"ok": True, "calibration": "requested", "request_id": request.id})


@router.post(END_ROUND_PATH, include_in_schema=False)
async def end_round(console: ConsoleDep) -> JSONResponse:
    """The operator's End round: on the stand-in the current phase ends now; on the platform's EO
    the round ends (its totals come at its own end)."""
    if console.rounds is None:
        return JSONResponse({"ok": False, "reason": "this Avatar Controller ends no rounds"}, status_code=409)
    answer = await console.rounds.end_round()
    log.info("the operator's End round: %s", answer.body())
    return _answer(answer)


@router.get(STANDINGS_JSON_PATH, include_in_schema=False)
async def standings_json(console: ConsoleDep) -> JSONResponse:
    """The competition's standings: per agent its rounds, mean utility and mean social welfare;
    per buyer their rounds and total utility; the rounds that count in none, with why."""
    if console.rounds is None:
        return JSONResponse({"agents": [], "buyers": [], "unscored": []})
    return JSONResponse(console.rounds.standings().body())


@router.get(STANDINGS_CSV_PATH, include_in_schema=False)
async def standings_csv(console: ConsoleDep) -> Response:
    text = console.rounds.standings().csv_text() if console.rounds is not None else ""
    return Response(text, media_type="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="humaine-standings-{console.day.date}.csv"'})
