"""The operator's day with ``run`` and the stand-in EO, held to the stand-in's books, with the
faults a day meets: the Avatar Controller killed while a deal waits, ``run`` restarted in the
middle of a round, the stand-in killed in the middle of another.

``run`` waits for the operator: no round starts until Next round on the console, whose duration
fields show what the room will use. The buyer named there gets the round. On the buyer's page
in Chromium a seller's Accept answered after 8 s is booked (the stand-in waits as the platform EO
does), one left to the timeout gets the configured answer and is booked; after every step the
page, the display and the day book equal the stand-in's ``/viewTotals``. A third Accept waits
when the controller is killed (SIGKILL): ``run`` starts it again, the buyer's page says the deal
was not booked and why, the console's buyer field and the display's history are as they were,
the controller's offline alert is resolved, and the round's note about the kill leaves its row
with its totals. The allocation is saved, the round is scored and recorded under the buyer's name.

``r2`` (Bob) books a deal; ``run`` is stopped and started again on the same data directory in the
middle of it: the stand-in no longer knows ``r2``, which is lost, with an alert, within 10 s of
the room being back. Naming Carol for the next round leaves ``r2`` Bob's, in his session folder.
``r3`` (Carol) starts; the stand-in's process is killed: ``run`` starts it again, no round begins by
itself, and ``r3`` is lost with an alert within 10 s. The day's buyers paid what its sellers earned.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from avatar.buyer.routes import BUYER_PATH
from avatar.operator import CONSOLE_PATH
from avatar.operator.routes import DAY_JSON_PATH, NEXT_ROUND_PATH
from avatar.reconcile import FORGOTTEN
from formats.session_files import SESSIONS_DIR
from humaine_platform import endpoints as ep
from sessions.format import SESSION_FILE, Session
from standins.recorder import RecordingServer
from tests.support import loopback
from tests.support.books_room import Platform, Views, money
from tests.support.helpers import UI_TIMEOUT_MS, free_port, kill_worker, round_observer, start_run, wait_for
from workers.runtime.config import Config
from workers.runtime.worker_ids import AVATAR

DURATIONS = {"warmUp": 1.0, "round": 180.0, "post": 30.0}
"""The room's ``[rounds]`` durations: the console shows them and Next round uses them (the
operator ends the negotiation long before it would end by itself)."""
CONFIRM_TIMEOUT_S = 10.0
BUDGET = 50.0
BUYER = "Ada"
WITHOUT = "mic,camera,demo-agents"
"""The test plays the sellers (two recording servers on the sellers' ports) and the buyer's words."""
STANDIN = "orchestrator"
"""The stand-in EO's worker id (its retained status names its process)."""
NOT_BEFORE_S = 3.0
"""How long the test watches that no round starts before the operator's Next round."""
LOST_WITHIN_S = 10.0
"""A round the EO no longer knows is lost, with an alert, this soon after the room can tell."""


@pytest.fixture
def sellers() -> Iterator[tuple[RecordingServer, RecordingServer]]:
    with RecordingServer() as celia, RecordingServer() as watson:
        yield celia, watson


def _config(tmp_path: Path, broker_port: int, celia: int, watson: int) -> tuple[Path, int, int]:
    standin, avatar = free_port(), free_port()
    path = tmp_path / "humaine-env.toml"
    path.write_text(
        f'environment_uuid = "books{broker_port}"\ndata_dir = "{tmp_path / "data"}"\n'
        f'[broker]\nurl = "mqtt://127.0.0.1:{broker_port}"\n'
        f"[standin]\nport = {standin}\nhuman_budget = {BUDGET}\n"
        f"[rounds]\nwarm_up_s = {DURATIONS['warmUp']}\nround_s = {DURATIONS['round']}\npost_s = {DURATIONS['post']}\n"
        f"[demo_agents]\nagents = {{ Celia = {celia}, Watson = {watson} }}\n"
        f'[avatar]\nport = {avatar}\nspeaker = "wav-fast:{tmp_path / "speech"}"\nconfirm_timeout_s = {CONFIRM_TIMEOUT_S}\n'
        f'confirm_timeout_answer = "acknowledged"\neo_books_check_s = 1.0\n'
        f"[sessions]\nclose_after_s = 0.5\n"
    )
    return path, standin, avatar


def _answers(url: str) -> bool:
    try:
        return loopback.get(url + ep.HEALTH, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _health(url: str) -> dict[str, Any]:
    return loopback.get(url + ep.HEALTH, timeout=5).json()


def _stop(suite: subprocess.Popen[str]) -> int:
    os.killpg(suite.pid, signal.SIGINT)
    return suite.wait(30)


def _lost_alert(console: Page, round_id: str) -> Any:
    """The console's alert, still true, that the round was lost."""
    return console.locator("#alerts li[data-kind='round_lost']:not([data-resolved])").filter(has_text=f"round {round_id} ")


def _page(browser: Any, url: str, width: int = 1280, height: int = 800) -> Page:
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.goto(url)
    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    return page


def test_a_day_with_the_standin_agrees_with_its_books_and_tells_the_truth_through_its_faults(
    tmp_path: Path, browser: Any, sellers: tuple[RecordingServer, RecordingServer], artifacts_dir: Path
) -> None:
    broker_port = free_port()
    config_path, standin_port, avatar_port = _config(tmp_path, broker_port, sellers[0].port, sellers[1].port)
    eo_url, avatar_url = f"http://127.0.0.1:{standin_port}", f"http://127.0.0.1:{avatar_port}"
    suite, output = start_run(config_path, tmp_path, without=WITHOUT)
    bus = None
    try:
        assert wait_for(lambda: any("press Next round" in line for line in output), 60), "".join(output)
        config = Config.load(config_path, environ={})
        bus, rounds = round_observer(config)
        assert wait_for(lambda: _answers(avatar_url), 60), "".join(output)
        console = _page(browser, avatar_url + CONSOLE_PATH, 1280, 800)
        # the console shows the durations the next round takes, and no round starts by itself
        expect(console.locator("#d-round")).to_have_value(f"{DURATIONS['round']:g}", timeout=UI_TIMEOUT_MS)
        expect(console.locator("#d-post")).to_have_value(f"{DURATIONS['post']:g}")
        time.sleep(NOT_BEFORE_S)
        assert loopback.get(eo_url + ep.HEALTH, timeout=10).json()["rounds"] == {}
        assert not any(m.phase == "warmup" for m in rounds)

        buyer = _page(browser, avatar_url + BUYER_PATH)
        display = _page(browser, avatar_url + "/", 1280, 720)
        console.fill("#buyer-name", BUYER)
        console.get_by_role("button", name="Next round").click()
        assert wait_for(lambda: any(m.phase == "round" for m in rounds), 30), [(m.round_id, m.phase) for m in rounds]
        first = next(m for m in rounds if m.phase == "round")
        assert (first.round_id, first.buyer, first.durations["round"]) == ("r1", BUYER, DURATIONS["round"])
        platform = Platform(eo_url, config.core.environment_uuid, loopback.client(timeout=60), "r1")
        views = Views(avatar_url, buyer, display, "r1", BUDGET)
        expect(buyer.locator("#left")).to_have_text(money(BUDGET), timeout=UI_TIMEOUT_MS)

        # a seller's Accept answered after 8 s: the stand-in waits, as the platform EO does, and books it
        platform.say("Celia, an egg and two cups of flour for a dollar?", "Celia")
        reply = platform.accept("Celia", {"egg": 1, "flour": 2}, 1.0)
        expect(buyer.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
        time.sleep(8.0)
        buyer.get_by_role("button", name="Accept").click()
        answer = reply.result(timeout=30)
        assert answer.status_code == 200, answer.text
        views.agree(platform, "answered after 8 s")

        # nobody answers: the configured answer after the timeout, booked
        platform.say("Watson, two cups of milk for a dollar fifty?", "Watson")
        reply = platform.accept("Watson", {"milk": 2}, 1.5)
        expect(buyer.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
        assert reply.result(timeout=CONFIRM_TIMEOUT_S + 30).status_code == 200
        views.agree(platform, "left to the timeout")
        booked_paid, booked_goods = platform.human()
        assert (booked_paid, booked_goods) == (2.5, {"egg": 1, "flour": 2, "milk": 2})  # a pancake's
        history = display.locator("#log li").count()
        assert history > 0

        # the controller is killed while a third deal waits for the buyer: run starts it again; the
        # buyer's page says what became of the deal, the other pages are as they were
        platform.say("Celia, a cup of sugar for fifty cents?", "Celia")
        reply = platform.accept("Celia", {"sugar": 1}, 0.5)
        expect(buyer.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
        kill_worker(config, AVATAR, output)
        reply.result(timeout=60)  # the stand-in answered its seller, the prompt's connection cut
        assert wait_for(lambda: _answers(avatar_url), 60), "".join(output[-40:])
        cut = buyer.locator("#cut-deals li[data-fate='not_booked']")
        expect(cut).to_have_text("Celia's deal, 1 sugar for $0.50: not booked — the room stopped before your answer reached the "
                                 "EO, which did not book it.", timeout=30_000)
        expect(buyer.locator("#confirm")).to_be_hidden()
        views.agree(platform, "after the controller was killed")
        assert platform.human() == (booked_paid, booked_goods)
        expect(console.locator("#buyer-name")).to_have_value(BUYER, timeout=UI_TIMEOUT_MS)
        assert wait_for(lambda: display.locator("#log li").count() >= history, 15)  # the display's history, kept
        offline = console.locator("#alerts li[data-kind='worker_offline']").filter(has_text=AVATAR)
        expect(offline.and_(console.locator("[data-resolved]"))).not_to_have_count(0, timeout=UI_TIMEOUT_MS)
        expect(offline.and_(console.locator(":not([data-resolved])"))).to_have_count(0)
        assert views.day_row()[0]["note"]  # the kill, said on the round's row while the round runs

        # the operator ends the negotiation; the buyer saves; the operator ends the post-round: scored
        console.get_by_role("button", name="End round").click()
        assert wait_for(lambda: any(m.phase == "post" for m in rounds), 15)
        expect(buyer.locator("#allocation-panel")).to_be_visible(timeout=UI_TIMEOUT_MS)
        buyer.get_by_role("button", name="Save").click()
        expect(buyer.locator("#allocation-status")).to_have_attribute("data-ok", "true", timeout=UI_TIMEOUT_MS)
        views.agree(platform, "saved")
        console.get_by_role("button", name="End round").click()
        assert wait_for(lambda: any(m.phase == "ended" for m in rounds), 15)
        expect(buyer.locator("#summary")).to_contain_text("Your allocation is worth", timeout=UI_TIMEOUT_MS)
        row, detail = views.day_row()
        assert (row["buyer"], row["deals"], row["paid"], row["allocation_saved"]) == (BUYER, 2, 2.5, True)
        assert wait_for(lambda: views.day_row()[0]["note"] in ("", None), 10), views.day_row()[0]  # it ended with its totals
        scored = detail["totals"]["Human"]["utility"]["value"]  # the stand-in's score of the pancake saved
        assert scored > 0 and row["buyer_utility"] == scored
        expect(buyer.locator("#summary")).to_contain_text(money(scored))
        console.screenshot(path=str(artifacts_dir / "books-standin-console.png"))
        day_dir = tmp_path / "data" / SESSIONS_DIR
        assert wait_for(lambda: any(day_dir.glob(f"*/r1-{BUYER}/{SESSION_FILE}")), 15), list(day_dir.rglob("*"))
        session = Session(next(day_dir.glob(f"*/r1-{BUYER}")))
        assert session.info.notes["books"]["paid"] == 2.5

        # r2 for Bob, a deal booked; run stopped and started again in the middle of it: the stand-in
        # forgot r2, which is lost with an alert soon after the room is back
        console.fill("#buyer-name", "Bob")
        console.get_by_role("button", name="Next round").click()
        assert wait_for(lambda: any(m.round_id == "r2" and m.phase == "round" for m in rounds), 30)
        platform = Platform(eo_url, config.core.environment_uuid, loopback.client(timeout=60), "r2")
        platform.say("Watson, an egg for a dollar?", "Watson")
        reply = platform.accept("Watson", {"egg": 1}, 1.0)
        expect(buyer.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
        buyer.get_by_role("button", name="Accept").click()
        assert reply.result(timeout=30).status_code == 200
        assert wait_for(lambda: Views(avatar_url, buyer, display, "r2", BUDGET).day_row()[0]["paid"] == 1.0, 15)
        assert _stop(suite) == 0
        bus.stop()
        suite, output = start_run(config_path, tmp_path, without=WITHOUT)
        bus, rounds = round_observer(config)
        assert wait_for(lambda: _answers(avatar_url), 60), "".join(output)
        back = time.monotonic()
        expect(_lost_alert(console, "r2")).to_have_count(1, timeout=30_000)
        assert time.monotonic() - back <= LOST_WITHIN_S, "".join(output[-40:])
        expect(console.locator("#day tr[data-round='r2'] td.state")).to_have_text("lost", timeout=UI_TIMEOUT_MS)
        expect(console.locator("#day tr.why[data-why-of='r2']")).to_have_text(FORGOTTEN.format(round_id="r2"))  # why, in words
        expect(buyer.locator("body")).to_have_attribute("data-phase", "ended", timeout=UI_TIMEOUT_MS)

        # Carol named for the next round: r2 stays Bob's, in his session folder
        console.fill("#buyer-name", "Carol")
        console.get_by_role("button", name="Set buyer").click()
        expect(console.locator("#round-control-status")).not_to_be_empty(timeout=UI_TIMEOUT_MS)
        r2 = Views(avatar_url, buyer, display, "r2", BUDGET).day_row()[0]
        assert (r2["buyer"], r2["state"], r2["paid"]) == ("Bob", "lost", 1.0), r2
        assert wait_for(lambda: any(day_dir.glob(f"*/r2-Bob/{SESSION_FILE}")), 15), list(day_dir.rglob("*"))
        assert not list(day_dir.glob("*/r2-Carol*")) and len(list(day_dir.glob("*/r2-*"))) == 1, list(day_dir.rglob("r2-*"))

        # r3 for Carol; the stand-in's process dies mid-round: run starts it again; it starts no
        # round of its own over the room's, and the round it forgot is lost with an alert
        started = loopback.post(avatar_url + NEXT_ROUND_PATH, json={"durations": {"warmUp": 0.5, "round": 60, "post": 1}}, timeout=15)
        assert started.status_code == 200 and started.json()["roundId"] == "r3", started.text
        assert wait_for(lambda: any(m.round_id == "r3" and m.phase == "round" for m in rounds), 30)
        knew = {"round": "r3", "found": "agree"}  # the room's books held against the stand-in's, which has r3
        assert wait_for(lambda: knew.items() <= (_health(avatar_url).get("books_check") or {}).items(), 15)
        killed = time.monotonic()
        kill_worker(config, STANDIN, output)
        expect(_lost_alert(console, "r3")).to_have_count(1, timeout=30_000)
        assert time.monotonic() - killed <= LOST_WITHIN_S, "".join(output[-40:])
        assert wait_for(lambda: any(m.round_id == "r3" and m.phase == "ended" for m in rounds), 15), "".join(output)
        assert [m.round_id for m in rounds if m.phase == "warmup"] == ["r3"]  # no round began by itself
        assert loopback.get(eo_url + ep.HEALTH, timeout=10).json()["rounds"] == {}
        expect(console.locator("#day tr[data-round='r3'] td.state")).to_have_text("lost", timeout=UI_TIMEOUT_MS)
        expect(console.locator("#day tr.why[data-why-of='r3']")).to_have_text(FORGOTTEN.format(round_id="r3"))  # why, in words
        again = Views(avatar_url, buyer, display, "r1", BUDGET).day_row()[0]
        assert {k: again[k] for k in ("round", "buyer", "deals", "paid", "buyer_utility")} == \
            {k: row[k] for k in ("round", "buyer", "deals", "paid", "buyer_utility")}
        day = loopback.get(avatar_url + DAY_JSON_PATH, timeout=10).json()
        assert [(str(r["round"]), r["state"], r["buyer"]) for r in day["rounds"]] == \
            [("r1", "ended", BUYER), ("r2", "lost", "Bob"), ("r3", "lost", "Carol")]
        paid = round(sum(b["paid"] for b in day["buyers"].values()), 2)
        assert paid == round(sum(s["revenue"] for s in day["sellers"].values()), 2) == 3.5, day
        console.screenshot(path=str(artifacts_dir / "books-standin-day-faults.png"))
    finally:
        if bus is not None:
            bus.stop()
        if suite.poll() is None:
            _stop(suite)
