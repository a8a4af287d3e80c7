"""Two buyer's pages open on one round, in a real headless Chromium fed by a real Avatar
Controller (the EO a recording server answering as the platform does): both show the same
state at every step. A seller's words read "$4.23" where the agent wrote "4.23 USD"; the notice of
a deal ends with the negotiation; a good measured in a unit reads with it ("4 ounces of
chocolate", in deals and in a saved plan); Check says what an allocation still needs in whole words
("2 more eggs"); a Save on one page shows on the other; the round's result says what its score
is and what the round gained."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from avatar.buyer.routes import BUYER_PATH
from humaine_platform import buyer_utility as bu
from humaine_platform import endpoints as ep
from standins.recorder import Behavior, RecordingServer
from tests.support import loopback
from tests.support.avatar import HTTP_TIMEOUT, AvatarRunner, agent, captured
from tests.support.helpers import UI_TIMEOUT_MS

PANCAKE: Final = {"egg": 1, "flour": 2, "milk": 2, "chocolate": 4}
"""What the buyer buys: one pancake's goods and 4 ounces of chocolate to put in it."""
PRICE: Final = 4.23
PANCAKE_VALUE: Final = round(bu.utility_value(captured("/setUtility")["utility"], {"pancake": {
    "unit": "each", "quantity": 1, "supplement": [{"chocolate": {"unit": "ounce", "quantity": 4}}]}}), 2)
"""The chocolate pancake's value in the utility the platform sent (``/setUtility`` in the
recorded traffic: $26.75 a pancake, chocolate measured in ounces)."""
SAVED: Final = f"Saved: worth ${PANCAKE_VALUE:.2f}. You may change it and save again until the post-round ends."


@pytest.fixture
def eo() -> Iterator[RecordingServer]:
    """The EO's side the controller calls: it keeps the saved allocation; it has no totals of the
    round to check the room's books against (a 404, as an EO that does not know the round)."""
    with RecordingServer(behaviors={f"{ep.VIEW_TOTALS}/r1": Behavior(status=404)}) as server:
        yield server


def _page(browser: Browser, url: str) -> Page:
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(url)
    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    return page


def test_two_buyer_pages_stay_in_step_and_read_as_people_write(
    start_avatar: AvatarRunner, browser: Browser, eo: RecordingServer, artifacts_dir: Path
) -> None:
    local, _observer = start_avatar(**{"eo.url": eo.url, "avatar.confirm_timeout_s": 60.0})
    pages = [_page(browser, local.url + BUYER_PATH) for _ in range(2)]
    first, second = pages
    metadata = captured("/sendRoundMetadata")
    metadata["durations"]["post"] = 120
    deal = {"type": "Accept", "quantity": PANCAKE, "price": {"unit": "USD", "value": PRICE}}
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        for key, body in (("/sendRoundMetadata", metadata), ("/setUtility", captured("/setUtility")), ("/startRound", None)):
            assert http.post(key, json=body or captured(key)).status_code == 200
        for page in pages:
            expect(page.locator("body")).to_have_attribute("data-phase", "round", timeout=UI_TIMEOUT_MS)

        # Celia accepts; both pages ask, in the seller's words with the amount written as people write it
        ask = {**captured("/confirmAccept"), "text": f"You've got it! An egg, 2 flour and 2 milk for {PRICE} USD.", "bid": deal}
        answer: dict[str, httpx.Response] = {}
        thread = threading.Thread(target=lambda: answer.update(r=http.post(ep.CONFIRM_ACCEPT, json=ask)))
        thread.start()
        for page in pages:
            expect(page.locator("#confirm-said")).to_have_text(f"“You've got it! An egg, 2 flour and 2 milk for ${PRICE}.”",
                                                               timeout=UI_TIMEOUT_MS)
            expect(page.locator("#confirm-deal")).to_have_text(f"4 ounces of chocolate, 1 egg, 2 flour, 2 milk for ${PRICE}")
        first.get_by_role("button", name="Accept").click()
        thread.join(HTTP_TIMEOUT)
        assert answer["r"].json() == {"status": "acknowledged"}
        booked = agent("Celia", f"Deal: that is yours for {PRICE} USD.", bid=deal)
        assert http.post(ep.RECEIVE_MESSAGE, json=booked).status_code == 200
        for page in pages:
            expect(page.locator("#notice")).to_contain_text(
                "Booked by the EO: 4 ounces of chocolate, 1 egg, 2 flour, 2 milk from Celia for $4.23.", timeout=UI_TIMEOUT_MS)

        # the negotiation ends: its notice goes with it, on every page, long before its 8 s are up
        assert http.post(ep.END_ROUND, json=captured("/endRound")).status_code == 200
        for page in pages:
            expect(page.locator("body")).to_have_attribute("data-phase", "post", timeout=UI_TIMEOUT_MS)
            expect(page.locator("#notice")).to_be_hidden(timeout=2_000)
            expect(page.locator("#allocation-panel")).to_be_visible()

        # a cake as well is more than was bought: Check says what it needs in whole words
        first.get_by_role("button", name="one cake more").click()
        first.get_by_role("button", name="Check").click()
        expect(first.locator("#allocation-status")).to_have_text(
            "Not enough: it needs 2 more eggs, 2 more flour, 1 more milk, 1 more sugar.", timeout=UI_TIMEOUT_MS)
        expect(first.locator(".count-row[data-product=cake] .count")).to_have_text("1")
        expect(first.locator(".count-row[data-product=cake] span").last).to_have_text("cake")  # one cake
        first.screenshot(path=str(artifacts_dir / "buyer-page-check-needs.png"))

        # the best plan saved on the first page: the second shows the same saved allocation and says so
        first.get_by_role("button", name="Use the best").click()
        first.get_by_role("button", name="Save").click()
        for page in pages:
            expect(page.locator("#allocation-status")).to_have_text(SAVED, timeout=UI_TIMEOUT_MS)
            expect(page.locator("#allocation-status")).to_have_attribute("data-ok", "true")
            expect(page.locator("#summary")).to_have_text(
                f"Saved: 1 pancake (with 4 ounces of chocolate), worth ${PANCAKE_VALUE:.2f}.")
            expect(page.locator(".count-row[data-product=pancake] .count")).to_have_text("1")
            expect(page.locator(".count-row[data-product=cake] .count")).to_have_text("0")
        assert eo.bodies(ep.RECEIVE_HUMAN_ALLOCATION)[-1]["payload"]["pancake"]["quantity"] == 1
        second.screenshot(path=str(artifacts_dir / "buyer-page-saved-elsewhere.png"))

        # the EO's totals: the score is what the allocation is worth, what was paid is apart
        totals = captured("/receiveRoundTotals")
        totals["roundTotals"]["Human"].update(quantity=PANCAKE, cost=PRICE, utility={"currencyUnit": "USD", "value": PANCAKE_VALUE})
        assert http.post(ep.RECEIVE_ROUND_TOTALS, json=totals).status_code == 200
    for page in pages:
        expect(page.locator("#summary")).to_contain_text(
            f"Your allocation is worth ${PANCAKE_VALUE:.2f} to you; you paid ${PRICE}, so you gained "
            f"${PANCAKE_VALUE - PRICE:.2f}.", timeout=UI_TIMEOUT_MS)
    second.screenshot(path=str(artifacts_dir / "buyer-page-result.png"))
