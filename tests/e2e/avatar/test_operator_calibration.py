"""Calibration for a new buyer from the operator console: the real camera worker measures each
avatar's direction on the frames it reads (it holds the webcam) and reports each phase, then the
result, on the bus; the console's Calibrate says "no camera" in one line when there is none."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import httpx
import numpy as np
import pytest
import tomllib
from playwright.sync_api import Page, expect

from avatar.operator import CONSOLE_PATH
from avatar.operator.routes import CALIBRATE_PATH
from hardware.video import Frame, SourceStats
from tests.support import loopback
from tests.support.camera_assets import pyfeat_data
from tests.support.helpers import UI_TIMEOUT_MS, MosquittoBroker, free_port, start_run, suite_config, wait_for, wait_for_line
from tests.support.room import Collector
from workers.camera.calibration import AWAY
from workers.camera.settings import CameraSettings
from workers.camera.worker import CameraWorker
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import NOBODY, Attention, Calibration, CameraGeometry, now_ms

FPS = 10.0


class BuyerInTheSeat:
    """A camera on a buyer who does as the console says: each frame shows the still of where
    the last ``measuring`` phase told them to look (mirrored 45° still: at Celia, the 45° still:
    at Watson, the frontal one: away), and ``look_at`` makes them look somewhere by themselves."""

    description = "a buyer following the calibration's instructions"

    def __init__(self, instructions: Collector) -> None:
        data = pyfeat_data()
        turned = cv2.imread(str(data / "45-m7-di-ph.jpg"))
        self.views = {"Celia": cv2.flip(turned, 1), "Watson": turned, AWAY: cv2.imread(str(data / "0-f15-hao-ph.jpg"))}
        self.instructions = instructions
        self.looking: str | None = None
        self.stats = SourceStats()
        self._index = 0
        self._next_ms = now_ms()

    @property
    def fps(self) -> float:
        return FPS

    def read(self) -> Frame | None:
        wait = (self._next_ms - now_ms()) / 1000
        if wait > 0:
            time.sleep(wait)
        self._next_ms += round(1000 / FPS)
        said = [m.phase for m in list(self.instructions.items) if m.state == "measuring"]
        where = self.looking or (said[-1] if said else AWAY)
        self._index += 1
        self.stats.frames += 1
        return Frame(np.ascontiguousarray(self.views[where]), now_ms(), self._index)

    def close(self) -> None:
        pass


def test_the_camera_worker_calibrates_when_the_console_asks(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path
) -> None:
    config_file = tmp_path / "room.toml"
    config_file.write_text('[camera]\ntolerance_deg = 8.0\n[camera.targets.Celia]\nyaw = -60.0\n[camera.targets.Watson]\nyaw = 60.0\n')
    room = make_config(mosquitto.url)  # this test's own environment on the shared broker
    config = Config.load(config_file, environ={}, overrides={
        "environment_uuid": room.core.environment_uuid, "broker.url": mosquitto.url, "broker.mode": "external",
        "data_dir": str(tmp_path / "data"), "camera.fps": FPS, "camera.calibrate_s": 1.0, "camera.calibrate_settle_s": 0.3})
    console = Bus(config, "test-console", persistent=False)
    answers, attention, geometry = Collector(), Collector(), Collector()
    console.subscribe(console.topics.camera_calibration(), Calibration, answers)
    console.subscribe(console.topics.camera_geometry(), CameraGeometry, geometry)
    console.subscribe(console.topics.attention(), Attention, attention)
    console.start()
    assert console.wait_connected(10)
    buyer = BuyerInTheSeat(answers)
    worker = CameraWorker(config, opener=lambda *_a, **_k: buyer)
    worker.start()
    thread = threading.Thread(target=worker.run, args=(worker.stop_event,), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: worker.frames_processed > 0, 60), "the camera worker never read a frame"
        # the directions in use are the configuration's, retained for a console that connects later
        assert wait_for(lambda: geometry.items, 10)
        assert geometry.items[-1].targets == {"Celia": {"yaw": -60.0, "pitch": 0.0}, "Watson": {"yaw": 60.0, "pitch": 0.0}}
        assert geometry.items[-1].tolerance_deg == 8.0
        request = Calibration(source="test-console", state="requested")
        console.publish(console.topics.camera_calibration(), request)
        assert wait_for(lambda: any(m.state in ("done", "failed") for m in answers.items), 30), answers.items
        replies = [m for m in answers.items if m.source == worker.worker_id]
        assert all(m.request_id == request.id for m in replies)
        assert [m.phase for m in replies if m.state == "measuring"] == ["Celia", "Watson", AWAY]
        done = replies[-1]
        assert done.state == "done", done.detail
        assert done.targets["Celia"]["yaw"] == pytest.approx(41.0, abs=4.0)
        assert done.targets["Watson"]["yaw"] == pytest.approx(-41.0, abs=4.0)
        assert str(config_file) in done.detail
        saved = Config.load(config_file, environ={}).section(CameraSettings)  # kept for the next start
        assert saved.targets["Celia"].yaw == done.targets["Celia"]["yaw"] and saved.tolerance_deg == done.tolerance_deg
        assert wait_for(lambda: geometry.items[-1].targets == done.targets, 10)  # the console's plot follows
        assert geometry.items[-1].tolerance_deg == done.tolerance_deg

        buyer.looking = "Celia"  # the new directions are in use at once
        assert wait_for(lambda: any(a.target == "Celia" for a in attention.items), 10), [a.target for a in attention.items]
        buyer.looking = AWAY
        assert wait_for(lambda: attention.items[-1].target == NOBODY, 10)
    finally:
        worker.stop()
        thread.join(15)
        worker.close()
        console.stop()


def test_calibrate_on_the_console_says_no_camera(tmp_path: Path, page: Page, artifacts_dir: Path) -> None:
    port = free_port()
    config_path = suite_config(tmp_path, port)
    avatar_url = f"http://127.0.0.1:{tomllib.loads(config_path.read_text())['avatar']['port']}"
    suite, output = start_run(config_path, tmp_path)  # without the camera (and the microphone)
    try:
        wait_for_line(output, f"mqtt://127.0.0.1:{port}")
        assert wait_for(lambda: _answers(avatar_url + CONSOLE_PATH), timeout=60), "".join(output)
        page.goto(avatar_url + CONSOLE_PATH)
        expect(page.locator("#worker-avatar")).to_have_attribute("data-state", "online", timeout=UI_TIMEOUT_MS)
        page.fill("#buyer-name", "Grace Hopper")
        page.get_by_role("button", name="Calibrate").click()
        expect(page.locator("#calibration")).to_have_attribute("data-state", "no-camera", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#calibration")).to_contain_text("no camera: the camera worker is not running")
        page.locator("header").screenshot(path=str(artifacts_dir / "operator-console-calibrate-no-camera.png"))
        page.screenshot(path=str(artifacts_dir / "operator-console-calibrate.png"))
        answer = loopback.post(avatar_url + CALIBRATE_PATH, timeout=10)
        assert answer.status_code == 409 and answer.json()["reason"].startswith("no camera"), answer.text
    finally:
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGINT)
            suite.wait(20)


def _answers(url: str) -> bool:
    try:
        return loopback.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def page(browser: object) -> Page:
    context = browser.new_context(viewport={"width": 1920, "height": 1080})  # type: ignore[attr-defined]
    return context.new_page()
