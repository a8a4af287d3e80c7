"""One round of a real day, held to the EO's books: the platform's real EO and utility generator,
our Avatar Controller as its own process (restarted mid-round by SIGTERM and by kill -9) and Rich
Transcript worker, and the buyer's page and the display in a real Chromium.

The round: confirmations answered on the page at about 1 s and 9 s, one left to the timeout, two
Accepts arriving together (one answered on the page, the next by voice: a "no"), a SIGTERM while a
confirmation waits (the controller gives it the configured answer before it exits; the EO books
it and forwards it to nobody; the restarted controller finds it in the EO's totals), a kill -9
with nothing waiting, then Save in the post-round and the EO's totals. After every step the
budget left on ``/buyer``, the display's deals and the day book's row equal the EO's
``/viewTotals``, and the EO is alive at the end.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from avatar.buyer.routes import BUYER_PATH
from avatar.harness import Observer
from humaine_platform import endpoints as ep
from standins.eo import default_round
from tests.support import loopback
from tests.support.books_room import AvatarProcess, Platform, Views, money, sum_goods
from tests.support.helpers import UI_TIMEOUT_MS, free_port, wait_for
from tests.support.real_eo import RealEO
from tests.support.real_utility_generator import RealUtilityGenerator
from transcript.worker import TranscriptWorker
from workers.runtime.config import Config
from workers.runtime.messages import ConfirmPending, OutgoingMessage, RoundState, Transcript, now_ms

ROUND_ID = "books-1"
DURATIONS = (1.0, 90.0, 12.0)
"""Warm-up, negotiation, post-round (s): the negotiation holds every step on a loaded machine
(measured alone: the steps end about 55 s into it)."""
CONFIRM_TIMEOUT_S = 12.0
"""Longer than the 9 s answer (the stand-in used to give up after 5 s)."""
BUDGET = 50.0
CAKE = {"egg": 2, "flour": 2, "milk": 1, "sugar": 1}
PANCAKE = {"egg": 1, "flour": 2, "milk": 2}


@pytest.fixture
def generator(tmp_path: Path) -> Iterator[RealUtilityGenerator]:
    process = RealUtilityGenerator(tmp_path / "utility-generator").start()
    yield process
    process.stop()


@pytest.fixture
def room(mosquitto: Any, make_config: Any, tmp_path: Path, generator: RealUtilityGenerator) -> Iterator[dict[str, Any]]:
    port = free_port()
    eo = RealEO(tmp_path / "eo", human_port=port, utility_generator_port=generator.port)
    overrides = {"avatar.port": port, "avatar.speaker": f"wav-fast:{tmp_path / 'wav'}", "avatar.confirm_accept": "buyer",
                 "avatar.confirm_timeout_s": CONFIRM_TIMEOUT_S, "avatar.confirm_timeout_answer": "acknowledged",
                 "avatar.eo_books_check_s": 1.0, "eo.url": eo.url, "eo.utility_generator_url": generator.url,
                 "transcript.session_dir": str(tmp_path / "sessions")}
    config: Config = make_config(mosquitto.url, overrides=overrides)
    eo.environment_uuid = config.core.environment_uuid
    config_path = tmp_path / "avatar.toml"
    config_path.write_text(
        f'environment_uuid = "{config.core.environment_uuid}"\ndata_dir = "{config.core.data_dir}"\n'
        f'[broker]\nurl = "{mosquitto.url}"\nmode = "external"\n'
        f'[avatar]\nport = {port}\nspeaker = "wav-fast:{tmp_path / "wav"}"\nconfirm_accept = "buyer"\n'
        f'confirm_timeout_s = {CONFIRM_TIMEOUT_S}\nconfirm_timeout_answer = "acknowledged"\neo_books_check_s = 1.0\n'
        f'[eo]\nurl = "{eo.url}"\nutility_generator_url = "{generator.url}"\n'
    )
    observer = Observer(config).start()
    avatar = AvatarProcess(config_path, port, tmp_path / "avatar.log").start()
    eo.start()
    transcript = TranscriptWorker(config)
    transcript.start()
    thread = threading.Thread(target=transcript.run, args=(transcript.stop_event,), daemon=True)
    thread.start()
    with loopback.client(timeout=60) as http:
        try:
            yield {"eo": eo, "config": config, "observer": observer, "avatar": avatar, "http": http, "generator": generator}
        finally:
            transcript.stop()
            thread.join(5)
            transcript.close()
            if avatar.process is not None:
                avatar.stop()
            observer.stop()
            alive = eo.alive()
            eo.stop()
            assert alive, f"the real EO exited:\n{eo.log_tail()}"


def _open(browser: Any, url: str, width: int, height: int) -> Page:
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.goto(url)
    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    return page


def test_a_round_of_slow_early_simultaneous_answers_and_restarts_agrees_with_the_eos_books(
    room: dict[str, Any], browser: Any, artifacts_dir: Path
) -> None:
    eo, http, observer, generator, avatar = room["eo"], room["http"], room["observer"], room["generator"], room["avatar"]
    platform = Platform(eo.url, room["config"].core.environment_uuid, http, ROUND_ID)
    buyer = _open(browser, avatar.url + BUYER_PATH, 1280, 800)
    phone = _open(browser, avatar.url + BUYER_PATH, 390, 844)  # a second page, in the buyer's hand: both in step
    display = _open(browser, avatar.url + "/", 1280, 720)
    views = Views(avatar.url, buyer, display, ROUND_ID, BUDGET)

    body = default_round({"Celia": free_port(), "Watson": free_port()}, eo.human_port, DURATIONS,
                         round_id=ROUND_ID, name_human_service=False).body()
    body["human"]["utilityFunction"] = generator.generate_utility("buyer")
    assert http.post(eo.url + ep.INITIALIZE_ROUND, json=body).status_code == 200
    assert http.post(eo.url + ep.START_ROUND, json={"roundId": ROUND_ID}).status_code == 200
    expect(buyer.locator("#left")).to_have_text(money(BUDGET), timeout=UI_TIMEOUT_MS)
    observer.wait(RoundState, phase="round", timeout=15)

    # 1. answered on the page after about 1 s: booked, and only then the buyer's
    platform.say("Celia, the ingredients of a cake for a dollar?", "Celia")
    reply = platform.accept("Celia", CAKE, 1.0)
    expect(buyer.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(buyer.locator("#confirm-budget")).to_have_text("Budget after: $49.00")
    expect(phone.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(display.locator("#confirms .confirm")).to_contain_text("Buyer: deal? Say “yes” or “no”.", timeout=UI_TIMEOUT_MS)
    expect(display.locator("#confirms button")).to_have_count(0)  # the buyer answers, not the room's screen
    buyer.screenshot(path=str(artifacts_dir / "books-buyer-page-1280x800-confirm.png"))
    time.sleep(1.0)  # the buyer reads it: the answer about 1 s after the question
    buyer.get_by_role("button", name="Accept").click()
    assert reply.result(timeout=30).status_code == 200
    expect(phone.locator("#confirm")).to_be_hidden(timeout=UI_TIMEOUT_MS)
    views.agree(platform, "answered at 1 s")
    expect(phone.locator("#left")).to_have_text(buyer.locator("#left").text_content() or "", timeout=UI_TIMEOUT_MS)

    # 2. answered after 9 s (the stand-in gave up after 5 s; the EO waits): booked
    platform.say("Watson, a pancake's worth for two dollars?", "Watson")
    reply = platform.accept("Watson", PANCAKE, 2.0)
    expect(buyer.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    asked = time.monotonic()
    time.sleep(9.0)
    assert not reply.done()  # the EO still waits for the answer
    buyer.get_by_role("button", name="Accept").click()
    assert reply.result(timeout=30).status_code == 200 and time.monotonic() - asked >= 9.0
    views.agree(platform, "answered at 9 s")

    # 3. nobody answers: the configured answer (accepted) after the timeout, booked by the EO
    platform.say("Celia, a cup of sugar for fifty cents?", "Celia")
    reply = platform.accept("Celia", {"sugar": 1}, 0.5)
    expect(buyer.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    assert reply.result(timeout=CONFIRM_TIMEOUT_S + 30).status_code == 200
    expect(buyer.locator("#notice")).to_contain_text("Time ran out", timeout=UI_TIMEOUT_MS)
    views.agree(platform, "left to the timeout")

    # 4. two Accepts at once: asked one after the other, the first on the page, the second by voice ("no")
    platform.say("Any of you: a cup of milk, or an egg?", "")
    first = platform.accept("Celia", {"milk": 1}, 0.25)
    second = platform.accept("Watson", {"egg": 1}, 0.5)
    expect(buyer.locator("#confirm-queue")).to_have_text("1 more deal waiting after this one.", timeout=UI_TIMEOUT_MS)
    expect(display.locator("#confirms .confirm")).to_have_count(1)
    expect(display.locator("#confirms .confirm")).to_contain_text("(1 more waiting)")
    shown = buyer.locator("#confirm").get_attribute("data-id")
    pending = observer.wait(ConfirmPending, timeout=10, where=lambda m: m.confirm_id is not None)[-1]
    assert wait_for(lambda: observer.of(ConfirmPending)[-1].confirm_id == shown, 10)  # the bus asks what the page shows
    first_seller = buyer.locator("#confirm-title").text_content() or ""
    phone.get_by_role("button", name="Accept").click()  # answered on the other page: the first answer wins
    expect(buyer.locator("#confirm")).not_to_have_attribute("data-id", shown or "", timeout=UI_TIMEOUT_MS)
    expect(buyer.locator("#confirm-queue")).to_have_text("")
    next_id = buyer.locator("#confirm").get_attribute("data-id")
    assert wait_for(lambda: observer.of(ConfirmPending)[-1].confirm_id == next_id, 10), observer.of(ConfirmPending)[-1]
    paid_before, _ = platform.human()
    second_price = 0.5 if first_seller.startswith("Celia") else 0.25
    expect(buyer.locator("#confirm-budget")).to_have_text(f"Budget after: {money(BUDGET - paid_before - second_price)}")
    spoken = now_ms()
    observer.bus.publish(observer.topics.transcript_final(), Transcript(
        source="typed", final=True, utterance_id="no-1", text="No.", confidence=0.9, start=spoken - 600, end=spoken, engine="test"))
    for reply in (first, second):
        assert reply.result(timeout=30).status_code == 200
    answered = observer.wait(OutgoingMessage, timeout=10, where=lambda m: m.outcome == "answered")
    assert answered[-1].message["text"] == "No."  # the answer, not a message to the EO
    expect(buyer.locator("#notice")).to_contain_text("declined by voice", timeout=UI_TIMEOUT_MS)
    assert pending.confirm_id == shown
    views.agree(platform, "two at once")

    # 5. SIGTERM while a confirmation waits: it gets the configured answer before the process
    #    exits; the EO books it, the restarted controller finds it in the EO's totals
    platform.say("Watson, two cups of flour for sixty cents?", "Watson")
    reply = platform.accept("Watson", {"flour": 2}, 0.6)
    expect(buyer.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    assert avatar.stop(signal.SIGTERM) == 0
    assert reply.result(timeout=30).status_code == 200
    assert wait_for(lambda: platform.human()[1].get("flour") == 6, 10), platform.totals()
    avatar.start()
    expect(buyer.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    views.agree(platform, "restarted after SIGTERM with a confirmation waiting")
    print("\nafter SIGTERM, the flour deal reached the room as:", [d["source"] for d in views.day_row()[1]["deals"]][-1])

    # 6. kill -9 with nothing waiting: the restarted controller takes the round up from the ledger
    avatar.stop(signal.SIGKILL)
    avatar.start()
    expect(display.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    expect(buyer.locator("#round-id")).to_have_text(f"round {ROUND_ID}", timeout=UI_TIMEOUT_MS)
    views.agree(platform, "restarted after kill -9")

    # 7. the post-round: Save puts the proposed allocation into the EO's totals; then the EO's scores
    observer.wait(RoundState, phase="post", timeout=DURATIONS[1] + 30)
    expect(buyer.locator("#allocation-panel")).to_be_visible(timeout=UI_TIMEOUT_MS)
    buyer.get_by_role("button", name="Save").click()
    expect(buyer.locator("#allocation-status")).to_have_attribute("data-ok", "true", timeout=UI_TIMEOUT_MS)
    allocation = (platform.totals().get("Human") or {}).get("allocation") or {}
    assert sum(block.get("quantity", 0) for block in allocation.values()) >= 1, allocation
    views.agree(platform, "saved")
    buyer.screenshot(path=str(artifacts_dir / "books-buyer-page-post-round.png"))
    phone.screenshot(path=str(artifacts_dir / "books-buyer-page-390x844-allocation.png"))
    display.screenshot(path=str(artifacts_dir / "books-display-post-round.png"))

    final_paid, final_goods = platform.human()
    observer.wait(RoundState, phase="ended", timeout=DURATIONS[2] + 30)
    expect(buyer.locator("#summary")).to_contain_text("Your allocation is worth $", timeout=UI_TIMEOUT_MS)
    row, detail = views.day_row()
    assert (row["paid"], sum_goods(detail["deals"])) == (final_paid, final_goods)
    assert row["buyer_utility"] is not None and row["buyer_utility"] > 0 and row["allocation_saved"]
    assert re.search(r"\$\d+\.\d\d", buyer.locator("#summary").text_content() or "")
    assert eo.alive()
    (artifacts_dir / "books-avatar.log").write_text(avatar.log_path.read_text(errors="replace"))
