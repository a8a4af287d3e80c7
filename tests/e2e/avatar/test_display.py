"""The display page in a real headless Chromium: DOM after real EO messages and MQTT events."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from avatar.harness import utterance
from humaine_platform import endpoints as ep
from tests.support import loopback
from tests.support.avatar import HTTP_TIMEOUT, AvatarRunner, captured
from tests.support.helpers import UI_TIMEOUT_MS
from workers.runtime.messages import Attention, RoundState, Speaking, now_ms


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    yield tab
    context.close()


def test_display_shows_round_speech_gestures_and_the_buyer(
    start_avatar: AvatarRunner, page: Page, artifacts_dir: Path
) -> None:
    local, observer = start_avatar(**{"avatar.confirm_accept": "operator", "avatar.confirm_timeout_s": 10.0})
    page.goto(local.url + "/")
    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#avatar-Celia")).to_have_attribute("data-look", "female")
    expect(page.locator("#avatar-Watson")).to_have_attribute("data-look", "male")

    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        for key in ("/sendRoundMetadata", "/setUtility", "/startRound"):
            assert http.post(key, json=captured(key)).status_code == 200
        observer.wait(RoundState, phase="round")
        expect(page.locator("#round-phase")).to_have_attribute("data-phase", "round")
        expect(page.locator("#round-id")).to_have_text("r1")
        # a 60 s round counting down (the page may render a few seconds after the event on a busy machine)
        expect(page.locator("#round-timer")).to_have_text(re.compile(r"^(01:00|00:[45]\d)$"), timeout=UI_TIMEOUT_MS)

        # the buyer looks at Watson (camera worker's retained attention on MQTT)
        observer.bus.publish(observer.topics.attention(), Attention(source="camera", target="Watson", since=now_ms()))
        expect(page.locator("#attention")).to_have_attribute("data-target", "Watson", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#avatar-Watson")).to_have_class(re.compile(r"\battended\b"))

        human = captured("/receiveMessage (from Human)")
        assert http.post(ep.RECEIVE_LOG, json=captured("/receiveLog")).status_code == 200
        assert http.post(ep.RECEIVE_MESSAGE, json=human).status_code == 200
        expect(page.locator("#last-human")).to_have_text(human["text"])

        reply = captured("/receiveMessage (from agent)")
        reply["text"] = 'Two eggs for <emphasis>three</emphasis> fifty.<mark name="gesture:nod"/> Deal?'
        reply["gesture"] = "wave"
        assert http.post(ep.RECEIVE_MESSAGE, json=reply).status_code == 200
        celia = page.locator("#avatar-Celia")
        expect(celia).to_have_attribute("data-speaking", "true", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#caption-Celia")).to_have_text("Two eggs for three fifty. Deal?")
        expect(celia).to_have_attribute("data-gestures", "wave nod", timeout=UI_TIMEOUT_MS)
        page.screenshot(path=str(artifacts_dir / "avatar-display-speaking.png"))
        observer.wait(Speaking, 2, timeout=30, where=utterance)
        expect(celia).to_have_attribute("data-speaking", "false", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#caption-Celia")).to_have_text("Two eggs for three fifty. Deal?")  # last words stay
        expect(page.locator("#log li")).to_have_count(1)

        # the operator confirms Celia's accept on the page; the EO gets its exact yes
        out: dict[str, Any] = {}
        thread = threading.Thread(
            target=lambda: out.update(r=http.post(ep.CONFIRM_ACCEPT, json=captured("/confirmAccept")))
        )
        thread.start()
        button = page.locator("#confirms .confirm-accept")
        expect(button).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(page.locator("#confirms")).to_contain_text("2 eggs for $3.50")
        page.screenshot(path=str(artifacts_dir / "avatar-display-confirm.png"))
        button.click()
        thread.join(HTTP_TIMEOUT)
        assert out["r"].json() == {"status": "acknowledged"}
        expect(page.locator("#confirms .confirm")).to_have_count(0)

        assert http.post(ep.END_ROUND, json=captured("/endRound")).status_code == 200
        expect(page.locator("#round-phase")).to_have_attribute("data-phase", "post")
        expect(page.locator("#round-timer")).to_have_text(re.compile(r"^00:0[1-5]$"), timeout=UI_TIMEOUT_MS)  # 5 s post phase

    # a page opened now gets the current picture from the snapshot
    page.reload()
    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#round-phase")).to_have_attribute("data-phase", "post")
    expect(page.locator("#attention")).to_have_attribute("data-target", "Watson")
    expect(page.locator("#last-human")).to_have_text(human["text"])
    expect(page.locator("#caption-Celia")).to_have_text("Two eggs for three fifty. Deal?")
    page.screenshot(path=str(artifacts_dir / "avatar-display.png"), full_page=True)
    assert (artifacts_dir / "avatar-display.png").stat().st_size > 10_000
    assert json.loads(loopback.get(local.url + "/health", timeout=HTTP_TIMEOUT).text)["display_clients"] >= 1


def test_a_display_left_open_across_a_restart_shows_the_new_controller_state(
    start_avatar: AvatarRunner, page: Page, mosquitto: Any, make_config: Any, tmp_path: Path
) -> None:
    """The page reconnects to the restarted controller and takes its snapshot whole: the last
    buyer's captions and words do not stay on the screen. Its icon is served too."""
    from avatar.harness import LocalAvatar
    from tests.support.helpers import free_port

    port = free_port()
    local, observer = start_avatar(**{"avatar.port": port})
    page.goto(local.url + "/")
    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        assert http.get("/favicon.ico").headers["content-type"].startswith("image/svg+xml")
        assert http.post(ep.RECEIVE_MESSAGE, json=captured("/receiveMessage (from Human)")).status_code == 200
        assert http.post(ep.RECEIVE_MESSAGE, json=captured("/receiveMessage (from agent)")).status_code == 200
    expect(page.locator("#caption-Celia")).not_to_have_text("", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#last-human")).not_to_have_text("")
    observer.wait(Speaking, 2, timeout=30, where=utterance)
    local.stop()
    expect(page.locator("#connection")).to_have_attribute("data-state", "closed", timeout=UI_TIMEOUT_MS)
    config = make_config(mosquitto.url, **{"avatar.port": port, "avatar.speaker": f"wav:{tmp_path / 'wav2'}"})
    with LocalAvatar(config):
        expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#caption-Celia")).to_have_text("", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#last-human")).to_have_text("")
