"""The operator console's layout at a laptop's 1280×800 and a monitor's 1920×1080, with the real
suite (``run`` with the stand-in EO, the demo sellers, the Avatar Controller, the Rich Transcript
worker and the recorder) and the bus clients a venue adds (the camera's and the microphone's
names, connected here as plain bus clients): every worker's row is in view without scrolling,
and no pill or badge breaks over two lines, in each phase of a round the operator drives."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
import tomllib
from playwright.sync_api import Page, expect

from avatar.operator import CONSOLE_PATH
from tests.support import loopback
from tests.support.helpers import UI_TIMEOUT_MS, free_port, start_run, suite_config, wait_for, wait_for_line
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import PHASE_NAMES
from workers.runtime.worker_ids import CAMERA, MICROPHONE

SIZES: Final = ((1280, 800), (1920, 1080))
MIN_UTTERANCES_SHARE: Final = 0.19
"""The utterances' panel never has less of the window's height (its grid row: at least a fifth)."""
VENUE_CLIENTS: Final = (CAMERA, MICROPHONE)
"""Bus clients under the names of the venue's camera and microphone workers (a laptop run has neither)."""
ROOM_WORKERS: Final = ("avatar", "demo-agents", "orchestrator", "recorder", "transcript")
PILLS: Final = "#round-phase, .link, #connection, .count, .outcome, #round-timer, h1"
"""What must stay on one line: the phase pill, the broker's and the EO's badges, the connection's
state, the counts, the utterances' outcomes, the timer and the title."""
LINES_OF: Final = """(node) => {
  const range = document.createRange();
  range.selectNodeContents(node);
  return new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
}"""
"""How many lines ``node``'s text is laid out on (each line box has its own top)."""
IN_VIEW: Final = """(row) => {
  const panel = row.closest("section");
  const box = row.getBoundingClientRect(), area = panel.getBoundingClientRect();
  return {top: box.top, bottom: box.bottom, panelTop: area.top, panelBottom: area.bottom,
          scrolls: panel.scrollHeight > panel.clientHeight, height: innerHeight};
}"""
"""A worker row's box against its panel's and the window's (and whether the panel needs scrolling)."""


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    tab = context.new_page()
    yield tab
    context.close()


def _answers(url: str) -> bool:
    try:
        return loopback.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _check_layout(page: Page, workers: int, shot: Path) -> None:
    """Every worker row inside its panel and the window, the panel unscrolled; every pill on one line."""
    rows = page.locator("#workers tbody tr")
    expect(rows).to_have_count(workers)
    for i in range(workers):
        box = rows.nth(i).evaluate(IN_VIEW)
        name = rows.nth(i).get_attribute("id")
        assert not box["scrolls"], f"the workers panel scrolls at {page.viewport_size}: {box}"
        assert box["panelTop"] <= box["top"] and box["bottom"] <= box["panelBottom"] <= box["height"], (name, box)
    # the utterances keep their place whatever the day holds (a long day scrolls in its own panel)
    utterances = page.locator("#utterances-panel").evaluate("(panel) => panel.getBoundingClientRect().height / innerHeight")
    assert utterances >= MIN_UTTERANCES_SHARE, f"the utterances have {utterances:.0%} of the window at {page.viewport_size}"
    pills = page.locator(PILLS)
    for i in range(pills.count()):
        pill = pills.nth(i)
        if pill.is_visible():
            text = pill.inner_text()
            assert pill.evaluate(LINES_OF) == 1, f"{text!r} wraps at {page.viewport_size}"
    page.screenshot(path=str(shot))


def test_every_worker_shows_and_no_pill_wraps_at_laptop_and_monitor_sizes(tmp_path: Path, page: Page, artifacts_dir: Path) -> None:
    port = free_port()
    config_path = suite_config(tmp_path, port)
    avatar_url = f"http://127.0.0.1:{tomllib.loads(config_path.read_text())['avatar']['port']}"
    suite, output = start_run(config_path, tmp_path)
    clients: list[Bus] = []
    try:
        wait_for_line(output, "press Next round")
        config = Config.load(config_path, environ={})
        for name in VENUE_CLIENTS:
            bus = Bus(config, name, persistent=False)
            bus.start()
            clients.append(bus)
            assert bus.wait_connected(30)
        assert wait_for(lambda: _answers(avatar_url + CONSOLE_PATH), 60), "".join(output)
        page.goto(avatar_url + CONSOLE_PATH)
        expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
        for name in (*ROOM_WORKERS, *VENUE_CLIENTS):
            expect(page.locator(f"#worker-{name}")).to_have_attribute("data-state", "online", timeout=60_000)
        expect(page.locator("#workers tr[id^='worker-supervisor-']")).to_have_count(1, timeout=UI_TIMEOUT_MS)
        expect(page.locator("#link-eo")).to_have_attribute("data-ok", "yes", timeout=UI_TIMEOUT_MS)
        workers = len(ROOM_WORKERS) + len(VENUE_CLIENTS) + 1  # and run's own client

        page.fill("#d-warmup", "3")
        page.fill("#d-round", "120")
        page.fill("#d-post", "120")
        page.get_by_role("button", name="Next round").click()
        for phase, then in (("warmup", None), ("round", "End round"), ("post", "End round"), ("ended", None)):
            expect(page.locator("#round-phase")).to_have_attribute("data-phase", phase, timeout=30_000)
            expect(page.locator("#round-phase")).to_have_text(PHASE_NAMES[phase])
            for width, height in SIZES:
                page.set_viewport_size({"width": width, "height": height})
                _check_layout(page, workers, artifacts_dir / f"operator-console-{width}x{height}-{phase}.png")
            if then:
                page.get_by_role("button", name=then).click()
    finally:
        for bus in clients:
            bus.stop()
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGINT)
            suite.wait(20)
