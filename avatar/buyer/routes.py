"""``/buyer``: the buyer's page, its files, and the two things it asks of the server - check an
allocation, save it to the EO.

Its router is one of the Avatar Controller's app, with the same token rules as the display
(``?token=`` on the page, then its cookie); its live feed is the display hub's WebSocket (the
page answers confirmations on it), and the addresses are filled into the page's HTML so no path
is spelled in its script.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Final, Protocol

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse

from avatar.auth import TOKEN_REQUIRED
from avatar.books.ledger import RoomLedger
from avatar.books.records import RoundBook
from avatar.deps import StateKey
from avatar.display.routes import DISPLAY_FEED_PATH
from avatar.page_events import Number, PageModel, View
from avatar.pages import add_files, fill_page
from formats import written
from humaine_platform.allocation import AllocationCheck, AllocationServiceError, check_allocation, save_allocation
from humaine_platform.service_map import ServiceMapError, resolve_eo_url, resolve_utility_generator_url
from workers.runtime.config import Config, OrchestratorSettings
from workers.runtime.http.edge import BodyRefused, StrictRoute, parse_body
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import RoundState

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

BUYER_PATH: Final = "/buyer"
BUYER_STATIC_PATH: Final = "/buyer/static"
CHECK_PATH: Final = "/buyer/allocation/check"
SAVE_PATH: Final = "/buyer/allocation/save"
STATIC_DIR: Final = Path(__file__).resolve().parent / "static"
PAGE_FILE: Final = "buyer.html"
SAVE_PHASES: Final = ("post",)
"""The EO scores the allocation it has at the end of the post-round phase; before it the goods
may still change, after it the round is gone."""


class Refusal(PageModel):
    """Why the page's request was not done."""

    ok: bool
    reason: str


class CheckAnswer(PageModel):
    """What the page gets of a check; ``missing`` says what it still needs as the page shows it
    ("2 more eggs")."""

    ok: bool
    sufficient: bool
    rationale: dict[str, dict[str, Number]]
    """Per good: ``need`` and ``have``."""
    shortfall: dict[str, Number]
    missing: str
    value: Number | None
    rated_by: str

    @classmethod
    def of(cls, result: AllocationCheck) -> CheckAnswer:
        return cls(ok=result.sufficient, sufficient=result.sufficient, rationale=result.rationale, shortfall=result.shortfall,
                   missing=written.missing(result.shortfall), value=result.value, rated_by=result.rated_by)


class SaveAnswer(CheckAnswer):
    """What the page gets of a save the EO took: the check, and the EO's answer as it came."""

    saved: bool
    eo: View

    @classmethod
    def taken(cls, check: CheckAnswer, eo: View) -> SaveAnswer:
        """``check`` (of an allocation that suffices: only those are saved) with the EO's answer."""
        return cls(**dict(check), saved=True, eo=eo)


def _refused(reason: str, status: int = 422) -> JSONResponse:
    return JSONResponse(Refusal(ok=False, reason=reason).model_dump(), status_code=status)


def _products(data: object) -> View | None:
    """The ``products`` of a page's request, in the utility generator's shape, or None."""
    products = data.get("products") if isinstance(data, dict) else None
    if not isinstance(products, dict) or not all(isinstance(v, dict) for v in products.values()):
        return None
    return products


class Books(Protocol):
    """The round's books as :class:`avatar.round_books.RoundBooks` keeps them."""

    def current(self) -> RoundBook | None: ...

    def changed(self) -> None: ...


class RoomBooks(Protocol):
    """What the page needs of the Avatar Controller: the round's books and where they are kept."""

    @property
    def books(self) -> Books: ...

    @property
    def ledger(self) -> RoomLedger: ...

    def round_state(self) -> RoundState: ...


@dataclass(frozen=True)
class BuyerDesk:
    """What the page's actions need: the room's books, where the EO is, and the utility
    generator that rates an allocation (None: the suite's port of its rules)."""

    room: RoomBooks
    eo: OrchestratorSettings
    utility_generator: str | None

    @classmethod
    def of(cls, config: Config, room: RoomBooks) -> BuyerDesk:
        eo = config.section(OrchestratorSettings)
        try:
            utility_generator = resolve_utility_generator_url(eo)
        except ServiceMapError as exc:
            log.warning("the utility generator cannot be found (%s); allocations are rated by the suite's port of its rules", exc)
            utility_generator = None
        return cls(room, eo, utility_generator)

    async def checked(self, products: View) -> AllocationCheck:
        """``products`` checked against what the EO booked this round, and rated."""
        book = self.room.books.current()
        bought = book.bought() if book is not None else {}
        return await check_allocation(self.utility_generator, bought, products, book.round.utility if book is not None else None)


DESK: Final = StateKey[BuyerDesk]("buyer_desk")
DeskDep = Annotated[BuyerDesk, Depends(DESK)]

router = APIRouter(route_class=StrictRoute, dependencies=[TOKEN_REQUIRED])
"""The page, its files and its two actions: both read the round's book from the controller's
ledger (what the EO booked), and a saved allocation is written to it."""


@functools.cache
def _page() -> str:
    return fill_page(STATIC_DIR / PAGE_FILE, {"static": BUYER_STATIC_PATH, "feed": DISPLAY_FEED_PATH, "check": CHECK_PATH,
                                              "save": SAVE_PATH})


@router.get(BUYER_PATH, include_in_schema=False, response_class=HTMLResponse)
async def buyer_page() -> str:
    return _page()


add_files(router, BUYER_STATIC_PATH, STATIC_DIR, "buyer")


async def _read(request: Request) -> View | JSONResponse:
    """The page's ``products``, or the refusal to answer with."""
    try:
        data = parse_body(await request.body())
    except BodyRefused as exc:
        return _refused(f"not a JSON body: {exc.detail}", 400)
    products = _products(data)
    if products is None:
        return _refused("the body needs 'products': {cake: {quantity, supplement}, pancake: {...}}", 400)
    return products


@router.post(CHECK_PATH, include_in_schema=False)
async def check(request: Request, desk: DeskDep) -> JSONResponse:
    products = await _read(request)
    if isinstance(products, JSONResponse):
        return products
    try:
        return JSONResponse(CheckAnswer.of(await desk.checked(products)).model_dump())
    except (AllocationServiceError, ValueError) as exc:
        _notes.warning(("check", type(exc).__name__), "checking an allocation failed: %s", exc)
        return _refused(str(exc), 503 if isinstance(exc, AllocationServiceError) else 422)


@router.post(SAVE_PATH, include_in_schema=False)
async def save(request: Request, desk: DeskDep) -> JSONResponse:
    products = await _read(request)
    if isinstance(products, JSONResponse):
        return products
    room = desk.room
    state = room.round_state()
    if state.round_id is None or state.phase not in SAVE_PHASES:
        when = "has not ended yet" if state.phase in ("warmup", "round") else "is over: the EO has scored the round"
        return _refused(f"not saved: the negotiation {when}" if state.phase != "idle" else "not saved: no round is running", 409)
    try:
        result = await desk.checked(products)
        if not result.sufficient:
            return _refused(f"not saved: it needs {written.missing(result.shortfall)} than were bought", 422)
        answer = await save_allocation(resolve_eo_url(desk.eo), state.round_id, products)
    except (AllocationServiceError, ServiceMapError, ValueError) as exc:
        _notes.warning(("save", type(exc).__name__), "saving the allocation failed: %s", exc)
        return _refused(f"not saved: {exc}", 503)
    if not answer.taken:
        reason = answer.Reason or (answer.model_extra or {}).get("reason") or answer.status or "no answer"
        return _refused(f"not saved: the EO answered {reason}", 502)
    current = room.ledger.round_for(state.round_id)
    if current is not None:
        room.ledger.save_allocation(current.key, products, result.value)
        room.books.changed()
    log.info("the buyer saved an allocation worth %s for round %s", result.value, state.round_id)
    return JSONResponse(SaveAnswer.taken(CheckAnswer.of(result), answer.body()).model_dump())
