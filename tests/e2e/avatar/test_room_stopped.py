"""A room that stopped says so on its pages. The display, the buyer's page and the operator
console are open in a real headless Chromium on a round that runs; the Avatar Controller is
stopped: each page says when the room stopped, and its timer no longer counts down a round nobody
runs; the controller is started again on the same port and data directory: the words go and the
round's timer comes back, from the room's ledger."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from playwright.sync_api import Browser, Page, expect

from avatar.buyer.routes import BUYER_PATH
from avatar.harness import LocalAvatar
from avatar.operator import CONSOLE_PATH
from avatar.pages import ROOM_STOPPED
from tests.support import loopback
from tests.support.avatar import HTTP_TIMEOUT, AvatarRunner, captured
from tests.support.helpers import UI_TIMEOUT_MS, MosquittoBroker, free_port
from workers.runtime.config import Config
from workers.runtime.messages import RoundState

PAGES: Final = {"display": ("/", "#round-timer"), "buyer": (BUYER_PATH, "#timer"), "console": (CONSOLE_PATH, "#round-timer")}
"""Each page's address and its round timer."""
COUNTING: Final = re.compile(r"\d+:\d\d")
STOPPED_TIMER: Final = {"display": "--:--", "buyer": "", "console": "--:--"}


def _stopped_at(text: str) -> str:
    """The time in the words a page shows (``ROOM_STOPPED`` with its ``{time}``)."""
    head, tail = ROOM_STOPPED.split("{time}")
    found = re.fullmatch(re.escape(head) + r"(\d\d:\d\d)" + re.escape(tail), text)
    assert found is not None, text
    return found.group(1)


def test_a_stopped_room_says_so_on_every_page_and_clears_it_when_it_is_back(
    start_avatar: AvatarRunner, browser: Browser, mosquitto: MosquittoBroker, make_config: Callable[..., Config],
    tmp_path: Path, artifacts_dir: Path,
) -> None:
    port = free_port()
    local, observer = start_avatar(**{"avatar.port": port})
    metadata = captured("/sendRoundMetadata")
    metadata["durations"]["round"] = 600
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        for key, body in (("/sendRoundMetadata", metadata), ("/startRound", captured("/startRound"))):
            assert http.post(key, json=body).status_code == 200
    observer.wait(RoundState, phase="round")
    pages: dict[str, Page] = {}
    for name, (path, timer) in PAGES.items():
        pages[name] = page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
        page.goto(local.url + path)
        expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
        expect(page.locator(timer)).to_have_text(COUNTING, timeout=UI_TIMEOUT_MS)
        expect(page.locator("#stopped")).to_be_hidden()

    before = time.strftime("%H:%M")
    local.stop()
    after = time.strftime("%H:%M")
    for name, (_path, timer) in PAGES.items():
        page = pages[name]
        expect(page.locator("#stopped")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.locator("body")).to_have_attribute("data-room", "stopped")
        assert _stopped_at(page.locator("#stopped").inner_text()) in {before, after}
        expect(page.locator(timer)).to_have_text(STOPPED_TIMER[name])
        if name == "console":  # nothing known of the links either
            expect(page.locator("#link-broker")).to_have_attribute("data-ok", "unknown")
        page.screenshot(path=str(artifacts_dir / f"room-stopped-{name}.png"))

    config = make_config(mosquitto.url, **{"avatar.port": port, "avatar.speaker": f"wav:{tmp_path / 'wav2'}"})
    with LocalAvatar(config):
        for name, (_path, timer) in PAGES.items():
            page = pages[name]
            expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
            expect(page.locator("#stopped")).to_be_hidden()
            expect(page.locator("body")).to_have_attribute("data-room", "live")
            expect(page.locator(timer)).to_have_text(COUNTING, timeout=UI_TIMEOUT_MS)  # the round goes on, from the ledger
    for page in pages.values():
        page.context.close()


