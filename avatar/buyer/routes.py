"""``/buyer``: the buyer's page, its files, and the two things it asks of the server - check an
allocation, save it to the EO.

Mounted on the Avatar Controller's app like the operator console: the same token rules as the
display (``?token=`` on the page, then its cookie), the display hub's WebSocket as its live
feed (the page answers confirmations on it), and the addresses filled into the page's HTML so
no path is spelled in its script.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Final, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from orchestrator_client.allocation import AllocationServiceError, check_allocation, save_allocation
from orchestrator_client.http_edge import BodyRefused, parse_body
from orchestrator_client.service_map import ServiceMapError, resolve_eo_url, resolve_utility_generator_url
from workers.runtime.config import Config, OrchestratorSettings
from workers.runtime.ledger import RoomLedger, RoundBook
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


def _page(feed_path: str) -> str:
    html = (STATIC_DIR / PAGE_FILE).read_text(encoding="utf-8")
    for key, value in (("static", BUYER_STATIC_PATH), ("feed", feed_path), ("check", CHECK_PATH), ("save", SAVE_PATH)):
        html = html.replace("{{" + key + "}}", value)
    return html


def _refused(reason: str, status: int = 422) -> JSONResponse:
    return JSONResponse({"ok": False, "reason": reason}, status_code=status)


def _products(data: Any) -> dict[str, Any] | None:
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

    books: Books
    ledger: RoomLedger

    def round_state(self) -> RoundState: ...


def mount_buyer_page(app: FastAPI, config: Config, controller: RoomBooks, feed_path: str) -> None:
    """Add ``/buyer`` and its two actions to ``app``: both read the round's book from the
    controller's ledger (what the EO booked), and a saved allocation is written to it."""
    eo = config.section(OrchestratorSettings)
    try:
        utility_generator = resolve_utility_generator_url(eo)
    except ServiceMapError as exc:
        log.warning("the utility generator cannot be found (%s); allocations are rated by the suite's port of its rules", exc)
        utility_generator = None
    page = _page(feed_path)

    @app.get(BUYER_PATH, include_in_schema=False)
    async def buyer_page() -> HTMLResponse:
        return HTMLResponse(page)

    app.mount(BUYER_STATIC_PATH, StaticFiles(directory=STATIC_DIR), name="buyer")

    async def read(request: Request) -> dict[str, Any] | JSONResponse:
        try:
            data = parse_body(await request.body())
        except BodyRefused as exc:
            return _refused(f"not a JSON body: {exc.detail}", 400)
        products = _products(data)
        if products is None:
            return _refused("the body needs 'products': {cake: {quantity, supplement}, pancake: {...}}", 400)
        return products

    async def checked(products: dict[str, Any]) -> dict[str, Any]:
        book = controller.books.current()
        bought = book.bought() if book is not None else {}
        result = await check_allocation(utility_generator, bought, products, book.round.utility if book is not None else None)
        return {"ok": result.sufficient, "sufficient": result.sufficient, "rationale": result.rationale,
                "shortfall": result.shortfall, "value": result.value, "rated_by": result.rated_by}

    @app.post(CHECK_PATH, include_in_schema=False)
    async def check(request: Request) -> JSONResponse:
        products = await read(request)
        if isinstance(products, JSONResponse):
            return products
        try:
            return JSONResponse(await checked(products))
        except (AllocationServiceError, ValueError) as exc:
            _notes.warning(("check", type(exc).__name__), "checking an allocation failed: %s", exc)
            return _refused(str(exc), 503 if isinstance(exc, AllocationServiceError) else 422)

    @app.post(SAVE_PATH, include_in_schema=False)
    async def save(request: Request) -> JSONResponse:
        products = await read(request)
        if isinstance(products, JSONResponse):
            return products
        state = controller.round_state()
        if state.round_id is None or state.phase not in SAVE_PHASES:
            when = "has not ended yet" if state.phase in ("warmup", "round") else "is over: the EO has scored the round"
            return _refused(f"not saved: the negotiation {when}" if state.phase != "idle" else "not saved: no round is running", 409)
        try:
            result = await checked(products)
            if not result["sufficient"]:
                short = ", ".join(f"{amount:g} more {good}" for good, amount in result["shortfall"].items())
                return _refused(f"not saved: it needs {short} than was bought", 422)
            answer = await save_allocation(resolve_eo_url(eo), state.round_id, products)
        except (AllocationServiceError, ServiceMapError, ValueError) as exc:
            _notes.warning(("save", type(exc).__name__), "saving the allocation failed: %s", exc)
            return _refused(f"not saved: {exc}", 503)
        status = str(answer.get("status", ""))
        if status.lower() != "acknowledged":
            reason = answer.get("Reason") or answer.get("reason") or status or "no answer"
            return _refused(f"not saved: the EO answered {reason}", 502)
        current = controller.ledger.round_for(state.round_id)
        if current is not None:
            controller.ledger.save_allocation(current.key, products, result["value"])
            controller.books.changed()
        log.info("the buyer saved an allocation worth %s for round %s", result["value"], state.round_id)
        return JSONResponse({**result, "ok": True, "saved": True, "eo": answer})
