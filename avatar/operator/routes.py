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

import httpx
from fastapi import APIRouter, Depends, FastAPI, Request, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse, Response

from avatar.auth import TOKEN_REQUIRED
from avatar.controller import AvatarController
from avatar.deps import StateKey
from avatar.display.socket import serve_hub
from avatar.operator.day import DAY_DIR, DayBook, clean_buyer
from avatar.operator.feed import OperatorFeed, Subscriber
from avatar.pages import add_files, fill_page
from orchestrator_client import endpoints as ep
from orchestrator_client.http_edge import BodyRefused, StrictRoute, parse_body
from orchestrator_client.service_map import ServiceMapError, resolve_eo_url
from orchestrator_client.tls import client_tls
from orchestrator_client.wiring import eo_probe_url
from workers.runtime.config import Config, OrchestratorSettings
from workers.runtime.messages import MAX_PHASE_S, Calibration, Envelope, now_ms
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
CALIBRATE_PATH: Final = "/operator/calibrate"
ROUND_CONTROL_TIMEOUT_S: Final = 10.0
STATIC_DIR: Final = Path(__file__).resolve().parent / "static"
PAGE_FILE: Final = "console.html"
CONSOLE_SOURCE: Final = "operator-console"
"""The ``source`` of what the console publishes."""
LINK_POLL_S: Final = 0.5
"""How often the broker connection is looked at (a change reaches the consoles this fast)."""
EO_PROBE_INTERVAL_S: Final = 5.0
"""How often the EO is asked whether it answers, and only while a console is open."""
EO_PROBE_TIMEOUT_S: Final = 2.0


async def _watch_links(feed: OperatorFeed, broker_connected: Callable[[], bool], eo_url: str | None) -> None:
    """Keep the broker's and the EO's reachability current on the consoles, and notice workers
    that went silent."""
    next_probe = 0.0
    async with httpx.AsyncClient(timeout=EO_PROBE_TIMEOUT_S, verify=client_tls()) as http:
        while True:
            feed.set_link("broker", connected=broker_connected())
            feed.check_silent(now_ms())
            if eo_url and feed.hub.client_count and time.monotonic() >= next_probe:
                next_probe = time.monotonic() + EO_PROBE_INTERVAL_S
                try:
                    answer = await http.get(eo_probe_url(eo_url))
                    feed.set_link("eo", reachable=True, detail=f"answers (HTTP {answer.status_code})", standin=_is_standin(answer),
                                  durations=_next_durations(answer))
                except httpx.HTTPError as exc:
                    feed.set_link("eo", reachable=False, detail=str(exc) or type(exc).__name__)
            await asyncio.sleep(LINK_POLL_S)


def _is_standin(answer: httpx.Response) -> bool:
    """Whether the EO's health answer says it is the suite's stand-in (whose rounds the operator
    drives from here); the platform's EO drives its own rounds."""
    try:
        body = answer.json()
    except ValueError:
        return False
    return answer.status_code == 200 and isinstance(body, dict) and body.get(ep.STANDIN_MARK) is True


def _next_durations(answer: httpx.Response) -> dict[str, float] | None:
    """The durations the stand-in's next round takes (its health answer says them; the console
    shows them in its fields), or None."""
    try:
        body = answer.json()
    except ValueError:
        return None
    found = _durations({"durations": body.get(ep.STANDIN_NEXT_DURATIONS)}) if isinstance(body, dict) else None
    return found or None


async def _round_control(eo_url: str | None, path: str, body: dict[str, Any]) -> JSONResponse:
    """Ask the stand-in EO to start the next round or end the current phase; its answer, or why not."""
    if eo_url is None:
        return JSONResponse({"ok": False, "reason": "no EO is configured"}, status_code=409)
    try:
        async with httpx.AsyncClient(timeout=ROUND_CONTROL_TIMEOUT_S, verify=client_tls()) as http:
            health = await http.get(eo_probe_url(eo_url))
            if not _is_standin(health):
                return JSONResponse({"ok": False, "reason": "the platform's EO drives the rounds: start them there"}, status_code=409)
            answer = await http.post(eo_url.rstrip("/") + path, json=body)
    except httpx.HTTPError as exc:
        return JSONResponse({"ok": False, "reason": f"the EO did not answer: {exc or type(exc).__name__}"}, status_code=502)
    try:
        data = answer.json()
    except ValueError:
        data = {}
    if answer.status_code != 200:
        reason = next((data[k] for k in ("error", "reason", "msg", "message") if data.get(k)), None) if isinstance(data, dict) else None
        return JSONResponse({"ok": False, "reason": str(reason or f"HTTP {answer.status_code}")}, status_code=409)
    return JSONResponse({"ok": True, **(data if isinstance(data, dict) else {})})


def _durations(data: Any) -> dict[str, float] | None:
    """The console's durations (seconds), checked: each a number from 0 (the round: above 0) to a day."""
    raw = data.get("durations") if isinstance(data, dict) else None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        return None
    found: dict[str, float] = {}
    for key in ("warmUp", "round", "post"):
        value = raw.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_PHASE_S:
            return None
        found[key] = float(value)
    return None if found.get("round") == 0 else found


class ConsoleBus(Subscriber, Protocol):
    """The console also publishes: the round state with its buyer, calibration requests."""

    def publish(self, topic: Topic, message: Envelope) -> None: ...


@dataclass(frozen=True)
class Console:
    """The console's side of the room: its feed of the bus, the day book, the EO whose rounds it
    drives (None: none configured), the bus it publishes on and the controller that keeps the
    buyer's name."""

    feed: OperatorFeed
    day: DayBook
    eo_url: str | None
    bus: ConsoleBus
    broker_connected: Callable[[], bool]
    controller: AvatarController

    @classmethod
    def open(cls, config: Config, bus: ConsoleBus, broker_connected: Callable[[], bool], controller: AvatarController) -> Console:
        """Subscribe the console's feed on ``bus`` (before the bus starts, so retained statuses
        arrive with the first connection). The day's rounds come from the controller's ledger
        (:class:`DayBook`); the buyer named here is written there and rides on the round state,
        for whoever files things per round."""
        feed = OperatorFeed(bus)
        try:
            eo_url: str | None = resolve_eo_url(config.section(OrchestratorSettings))
            feed.set_link("eo", url=eo_url)
        except ServiceMapError as exc:
            eo_url = None
            feed.set_link("eo", reachable=False, detail=str(exc))
        day = DayBook(controller.ledger, config.core.data_dir / DAY_DIR)

        def day_changed(_book: object) -> None:
            summary, changed = day.export()
            if changed:
                feed.set_day(summary)

        controller.books.listen(day_changed)
        controller.alert_listeners.append(feed.books_alert)
        feed.on_undelivered = controller.undelivered
        feed.set_day(day.export()[0])
        return cls(feed, day, eo_url, bus, broker_connected, controller)

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
    watcher = asyncio.create_task(_watch_links(console.feed, console.broker_connected, console.eo_url))
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
        "buyer": BUYER_PATH, "day_json": DAY_JSON_PATH, "day_csv": DAY_CSV_PATH, "calibrate": CALIBRATE_PATH})


@router.get(CONSOLE_PATH, include_in_schema=False, response_class=HTMLResponse)
async def console_page() -> str:
    return _page()


add_files(router, CONSOLE_STATIC_PATH, STATIC_DIR, "operator")


@router.websocket(CONSOLE_FEED_PATH)
async def console_feed(websocket: WebSocket, feed: FeedDep) -> None:
    await serve_hub(websocket, feed.hub)  # the console sends nothing


@router.post(NEXT_ROUND_PATH, include_in_schema=False)
async def next_round(request: Request, console: ConsoleDep) -> JSONResponse:
    """The operator's Next round (with the stand-in EO): the next round with these durations,
    for the buyer named (the day book files the round under that name)."""
    try:
        data = parse_body(await request.body())
    except BodyRefused as exc:
        return JSONResponse({"ok": False, "reason": f"not a JSON body: {exc.detail}"}, status_code=400)
    if isinstance(data, dict) and "buyer" in data:
        console.name_buyer(data["buyer"], running=False)
    durations = _durations(data)
    if durations is None:
        return JSONResponse({"ok": False, "reason": "durations are seconds: warmUp, round (above 0), post"}, status_code=422)
    answer = await _round_control(console.eo_url, ep.NEXT_ROUND, {"durations": durations} if durations else {})
    log.info("the operator started the next round: %s", answer.body.decode()[:200])
    return answer


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
    label = console.name_buyer(data["buyer"], running=True)
    return JSONResponse({"ok": True, "buyer": label})


@router.get(DAY_JSON_PATH, include_in_schema=False)
async def day_json(console: ConsoleDep) -> JSONResponse:
    """The day as in its exported file: per round, buyer and seller, and every round whole."""
    return JSONResponse({**console.day.summary(), "detail": console.day.detail()})


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
    """The operator's End round (with the stand-in EO): the current phase ends now."""
    current = console.feed.view()["round"] or {}
    body = {"roundId": current["round_id"]} if current.get("round_id") is not None else {}
    return await _round_control(console.eo_url, ep.END_ROUND, body)
