"""A competition day from the operator console: ``humaine-env run`` with the stand-in EO runs a
short round; when it is over, the console's Next round starts another without restarting ``run``,
End round ends a phase; each round has utilities of its own and the console's standings count
both; the console raises no false "not heard of" alert, and the terminal stays quiet while the
console is open. With ``first_round = "auto"`` a round the EO loses is followed by the next by
itself: when the stand-in is killed mid-round (``run`` starts it again), and when ``run`` is
stopped cleanly mid-round and started again."""

from __future__ import annotations

import csv
import io
import os
import signal
import time
from pathlib import Path

import pytest
import tomllib
from playwright.sync_api import Page, expect

from avatar.books.ledger import LEDGER_FILE, read_ledger
from avatar.operator import CONSOLE_PATH
from avatar.operator.day import DAY_DIR
from avatar.operator.routes import DAY_CSV_PATH, DAY_JSON_PATH
from humaine_platform import endpoints as ep
from tests.support import loopback
from tests.support.helpers import (
    AUTO_FIRST_ROUND,
    UI_TIMEOUT_MS,
    free_port,
    kill_worker,
    round_observer,
    start_run,
    suite_config,
    wait_for,
    wait_for_line,
)
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import RoundState
from workers.runtime.worker import HEALTH_INTERVAL_S

FIRST_ROUND = (0.5, 3.0, 1.0)
"""Warm-up, negotiation, post-round (s) of the round ``run`` starts by itself."""
NEXT_ROUND_WITHIN_S = 15.0
AFTER_A_LOSS_WITHIN_S = 60.0
"""A lost round's successor starts by itself this soon (a run restarted loads its voices first)."""
STANDIN = "orchestrator"
MAX_WARNINGS = 3


@pytest.fixture
def page(browser: object) -> Page:
    context = browser.new_context(viewport={"width": 1920, "height": 1080})  # type: ignore[attr-defined]
    return context.new_page()


def _negotiating(rounds: list[RoundState], avatar_url: str, before: set[str], within: float = NEXT_ROUND_WITHIN_S) -> str:
    """The id of a round other than ``before`` once it negotiates and the EO's books had it (a
    round the EO never answered for is not taken for lost)."""
    assert wait_for(lambda: any(str(m.round_id) not in before and m.phase == "round" for m in rounds), within), \
        [(m.round_id, m.phase) for m in rounds]
    round_id = str(next(m.round_id for m in rounds if str(m.round_id) not in before and m.phase == "round"))

    def known() -> bool:
        check = loopback.get(avatar_url + ep.HEALTH, timeout=10).json().get("books_check") or {}
        return check.get("round") == round_id and check.get("found") == "agree"

    assert wait_for(known, 30)
    return round_id


def test_next_round_from_the_console_without_restarting_run(tmp_path: Path, page: Page, artifacts_dir: Path) -> None:
    port = free_port()
    config_path = suite_config(tmp_path, port)
    warm_up, negotiation, post = FIRST_ROUND
    text = config_path.read_text().replace("warm_up_s = 0.5\n", f"warm_up_s = {warm_up}\nround_s = {negotiation}\npost_s = {post}\n")
    config_path.write_text(text)
    avatar_url = f"http://127.0.0.1:{tomllib.loads(text)['avatar']['port']}"
    suite, output = start_run(config_path, tmp_path, *AUTO_FIRST_ROUND)
    bus: Bus | None = None
    try:
        config = Config.load(config_path, environ={})
        wait_for_line(output, f"mqtt://127.0.0.1:{port}")
        bus, rounds = round_observer(config)
        assert wait_for(lambda: any(m.phase == "ended" for m in rounds), timeout=90), "".join(output)

        page.goto(avatar_url + CONSOLE_PATH)
        opened_at = len(output)
        expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#round-controls")).to_have_attribute("data-driver", "standin", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#round-phase")).to_have_attribute("data-phase", "ended")

        # Next round, with the durations typed on the console: another round starts within 15 s
        page.fill("#buyer-name", "Ada Lovelace")
        page.fill("#d-warmup", "1")
        page.fill("#d-round", "60")
        page.fill("#d-post", "2")
        clicked = time.monotonic()
        page.get_by_role("button", name="Next round").click()
        assert wait_for(lambda: any(m.round_id != "r1" and m.phase == "round" for m in rounds), timeout=NEXT_ROUND_WITHIN_S), \
            [(m.round_id, m.phase) for m in rounds]
        started_s = time.monotonic() - clicked
        second = next(m for m in rounds if m.round_id != "r1" and m.phase == "round")
        assert second.durations.get("round") == 60.0
        expect(page.locator("#round-phase")).to_have_attribute("data-phase", "round", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#round-id")).to_have_text(str(second.round_id))
        page.screenshot(path=str(artifacts_dir / "operator-console-next-round.png"))

        # a second Next round while one runs is refused on the console, with the reason
        page.get_by_role("button", name="Next round").click()
        expect(page.locator("#round-control-status")).to_contain_text("End round first", timeout=UI_TIMEOUT_MS)

        # End round: the negotiation ends now (the post-round follows), then the post-round
        page.get_by_role("button", name="End round").click()
        assert wait_for(lambda: any(m.round_id == second.round_id and m.phase == "post" for m in rounds), timeout=10)
        assert wait_for(lambda: any(m.round_id == second.round_id and m.phase == "ended" for m in rounds), timeout=15)
        print(f"\nNext round -> negotiation of {second.round_id}: {started_s:.1f} s")

        # the day: both rounds on the console and in the day's files, the second under its buyer
        expect(page.locator(f"#day tr[data-round='{second.round_id}'] td").nth(1)).to_have_text("Ada Lovelace", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#day tr[data-round='r1']")).to_have_count(1)
        csv_text = loopback.get(avatar_url + DAY_CSV_PATH, timeout=10).text
        rows = list(csv.DictReader(io.StringIO(csv_text)))
        assert [(r["round"], r["buyer"]) for r in rows] == [("r1", ""), (str(second.round_id), "Ada Lovelace")], csv_text
        day_files = list((tmp_path / "data" / DAY_DIR).glob("*.csv"))
        assert len(day_files) == 1
        # the export is written after the change, on its own thread: the file follows within moments
        assert wait_for(lambda: list(csv.DictReader(io.StringIO(day_files[0].read_text()))) == rows, 10), day_files[0].read_text()

        # a laptop's rounds have utilities of their own (drawn from the platform generator's
        # distributions), and after two rounds the console's standings count both
        ledger = read_ledger(tmp_path / "data" / LEDGER_FILE)
        assert ledger is not None
        try:
            first_utility, second_utility = (ledger.round_for(r).utility for r in ("r1", second.round_id))  # type: ignore[union-attr]
        finally:
            ledger.close()
        assert first_utility and second_utility and first_utility != second_utility
        for avatar in ("Celia", "Watson"):
            expect(page.locator(f"#standings-agents tr[data-name='{avatar}'] td").nth(1)).to_have_text("2", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#round-driver")).to_have_text("rounds on the stand-in EO")

        # the console stays open past the silence limit: no false "not heard of" alert
        time.sleep(3 * HEALTH_INTERVAL_S + 2 - min(3 * HEALTH_INTERVAL_S, time.monotonic() - clicked))
        expect(page.locator("#alerts .alert[data-kind=worker_silent]")).to_have_count(0)
        warnings = [line for line in output[opened_at:] if " WARNING " in line]
        assert len(warnings) <= MAX_WARNINGS, warnings

        # the stand-in killed mid-round: run starts it again, the round it forgot is lost, and
        # (first_round = "auto") the next starts by itself
        page.get_by_role("button", name="Next round").click()
        third = _negotiating(rounds, avatar_url, {"r1", str(second.round_id)})
        kill_worker(config, STANDIN, output)
        fourth = _negotiating(rounds, avatar_url, {"r1", str(second.round_id), third}, AFTER_A_LOSS_WITHIN_S)

        # run stopped cleanly mid-round and started again: the round is lost, the next by itself
        os.killpg(suite.pid, signal.SIGINT)
        assert suite.wait(30) == 0
        bus.stop()
        suite, output = start_run(config_path, tmp_path, *AUTO_FIRST_ROUND)
        bus, rounds = round_observer(config)
        _negotiating(rounds, avatar_url, {"r1", str(second.round_id), third, fourth}, AFTER_A_LOSS_WITHIN_S)
        day = loopback.get(avatar_url + DAY_JSON_PATH, timeout=10).json()
        assert [r["state"] for r in day["rounds"]][2:4] == ["lost", "lost"], day["rounds"]
    finally:
        if bus is not None:
            bus.stop()
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGINT)
            suite.wait(20)
