"""The display page from one round to the next, in a real headless Chromium fed by a real Avatar
Controller: an agent's "0.8 USD" reads "$0.80" in its caption and in the history (the ledger
keeps the agent's text as sent), and the next round's warm-up starts on a clean screen, without
the last buyer's captions, words or history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from avatar.harness import utterance
from humaine_platform import endpoints as ep
from tests.support import loopback
from tests.support.avatar import HTTP_TIMEOUT, SPEECH_TIMEOUT, AvatarRunner, agent, captured
from tests.support.helpers import UI_TIMEOUT_MS
from workers.runtime.messages import RoundState, Speaking

SENT = "How about 2 eggs for 0.8 USD, or 4 for USD 1.5?"
SHOWN = "How about 2 eggs for $0.80, or 4 for $1.50?"


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    yield tab
    context.close()


def _round(round_id: str) -> dict[str, dict[str, Any]]:
    """The EO's round events of round ``round_id``, as the platform sends them."""
    bodies = {key: captured(key) for key in ("/sendRoundMetadata", "/startRound", "/endRound", "/receiveRoundTotals")}
    for body in bodies.values():
        body["roundId"] = round_id
    return bodies


def test_money_reads_as_people_write_it_and_the_next_round_starts_clean(
    start_avatar: AvatarRunner, page: Page, artifacts_dir: Path
) -> None:
    local, observer = start_avatar()
    page.goto(local.url + "/")
    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    first = _round("r1")
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        for key in ("/sendRoundMetadata", "/startRound"):
            assert http.post(key, json=first[key]).status_code == 200
        observer.wait(RoundState, phase="round")
        human = captured("/receiveMessage (from Human)")
        assert http.post(ep.RECEIVE_MESSAGE, json=human).status_code == 200
        reply = agent("Celia", SENT, bid={"type": "SellOffer", "quantity": {"egg": 2}, "price": {"unit": "USD", "value": 0.8}})
        said = {**captured("/receiveLog"), "speaker": "Celia", "addressee": "Human", "text": SENT, "role": "seller"}
        assert http.post(ep.RECEIVE_LOG, json=said).status_code == 200
        assert http.post(ep.RECEIVE_MESSAGE, json=reply).status_code == 200

        expect(page.locator("#caption-Celia")).to_have_text(SHOWN, timeout=UI_TIMEOUT_MS)
        expect(page.locator("#log li .text")).to_have_text([SHOWN])
        expect(page.locator("#last-human")).to_have_text("Celia, I want to buy 2 eggs for $3")  # written so already
        observer.wait(Speaking, 2, timeout=SPEECH_TIMEOUT, where=utterance)
        assert local.controller.ledger.current_book().offers[0].text == SENT  # the record keeps the agent's words
        for key in ("/endRound", "/receiveRoundTotals"):
            assert http.post(key, json=first[key]).status_code == 200
        expect(page.locator("#round-phase")).to_have_attribute("data-phase", "ended", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#caption-Celia")).to_have_text(SHOWN)  # the round's last words stay until the next
        page.screenshot(path=str(artifacts_dir / "display-round-over.png"))

        # the next buyer's round: its warm-up shows none of the last buyer's conversation
        assert http.post(ep.SEND_ROUND_METADATA, json=_round("r2")["/sendRoundMetadata"]).status_code == 200
    expect(page.locator("#round-id")).to_have_text("r2", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#round-phase")).to_have_attribute("data-phase", "warmup")
    for name in ("Celia", "Watson"):
        expect(page.locator(f"#caption-{name}")).to_have_text("")
    expect(page.locator("#log li")).to_have_count(0)
    expect(page.locator("#last-human")).to_have_text("")
    expect(page.locator("#summary")).to_be_hidden()
    page.screenshot(path=str(artifacts_dir / "display-next-warmup.png"))
    # a page opened now gets the same clean picture
    page.reload()
    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#round-id")).to_have_text("r2")
    expect(page.locator("#caption-Celia")).to_have_text("")
    expect(page.locator("#log li")).to_have_count(0)
