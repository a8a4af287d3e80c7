"""The operator console: its feed's logic on bus messages, and the page in a real headless
Chromium fed by the real suite (stand-in EO, demo sellers, Avatar Controller, Rich Transcript
worker) and a real typed microphone worker killed with a real signal."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomllib
from playwright.sync_api import Page, expect
from websockets.sync.client import connect as ws_connect

from avatar.operator import CONSOLE_PATH
from avatar.operator.alerts import AlertBook
from avatar.operator.feed import ALERTS_KEPT, MISSED_REFRESHES, UTTERANCES_KEPT, WORKERS_KEPT, OperatorFeed
from avatar.operator.routes import CONSOLE_FEED_PATH, CONSOLE_STATIC_PATH
from avatar.room_ledger import ledger_in_memory
from humaine_platform import endpoints as ep
from tests.support import loopback
from tests.support.avatar import AvatarRunner
from tests.support.helpers import (
    AUTO_FIRST_ROUND,
    UI_TIMEOUT_MS,
    free_port,
    round_observer,
    start_run,
    suite_config,
    typed_microphone,
    wait_for,
    wait_for_line,
)
from workers.camera.settings import CameraSettings
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import (
    Attention,
    CameraGeometry,
    EOVerdict,
    HeadPose,
    Origin,
    OutgoingMessage,
    Speaking,
    Stage,
    Status,
    Transcript,
    now_ms,
)
from workers.runtime.topics import Topics
from workers.runtime.worker import HEALTH_INTERVAL_S

OFFLINE_WITHIN_MS = 2_000
TOKEN = f"console-{os.getpid()}"


# -- the feed, on messages handed to it directly ----------------------------------------------------
class _Subscriptions:
    """Records what the feed subscribes to (the part of the bus it uses)."""

    def __init__(self) -> None:
        self.topics = Topics("room")
        self.names: list[str] = []

    def subscribe(self, topic: Any, _model: Any, _handler: Any) -> None:
        self.names.append(topic.name)


BOOTH = Origin(host="booth", pid=42, started_at=1)
"""The process of every worker of these statuses (and of the messages they publish)."""


def _status(state: str, detail: str = "", worker: str = "microphone", refresh_s: float | None = HEALTH_INTERVAL_S) -> Status:
    return Status(source=worker, state=state, worker=worker, version="1", host=BOOTH.host, pid=BOOTH.pid,
                  started_at=BOOTH.started_at, detail=detail, refresh_s=refresh_s)


def _heard(feed: OperatorFeed, status: Status) -> None:
    """``status`` as the bus delivers it: on its worker's own status topic."""
    feed.on_status(feed.topics.status(status.worker).name, status)


def _outgoing(text: str, outcome: str, stages: dict[str, int], reason: str = "", ids: tuple[str, ...] = ("u1",),
              origin: Origin | None = BOOTH) -> OutgoingMessage:
    body = {"speaker": "Human", "addressee": "Celia", "text": text, "addresseeSource": "gaze", "sttConfidence": 0.91,
            "source": "mic", "utteranceIds": list(ids)}
    return OutgoingMessage(source="transcript", message=body, outcome=outcome, reason=reason, stages=stages,  # type: ignore[arg-type]
                           origin=origin)


def test_alerts_are_facts_of_the_day_resolved_when_no_longer_true_and_kept_through_a_restart() -> None:
    """A worker's offline and error alerts are resolved (kept, with why) once it is online again;
    the day's alerts are in the ledger, so a restarted controller's console has them as they were;
    a documented fallback (no webcam on a laptop) is a notice, not an error."""
    ledger = ledger_in_memory()
    feed = OperatorFeed(_Subscriptions(), AlertBook(ledger))
    _heard(feed, _status("online", worker="orchestrator"))
    _heard(feed, _status("offline", "connection lost", worker="orchestrator"))
    _heard(feed, _status("error", "no camera at index 0", worker="camera").model_copy(update={"fallback": True}))
    assert [(a.kind, a.level, a.resolved) for a in feed.alerts()] == [("worker_offline", "error", None),
                                                                      ("worker_error", "notice", None)]
    _heard(feed, _status("online", worker="orchestrator"))  # run restarted it
    offline = feed.alerts()[0]
    assert offline.resolved is not None and offline.resolution == "orchestrator is online again"
    again = OperatorFeed(_Subscriptions(), AlertBook(ledger))  # the controller restarted
    assert [(a.id, a.resolved is not None) for a in again.alerts()] == [(offline.id, True), (feed.alerts()[1].id, False)]
    assert [a["kind"] for a in again.view()["alerts"]] == ["worker_offline", "worker_error"]

    # the restarted controller hears the retained statuses anew: a worker still in error is not
    # alerted twice; one that came back while the controller was away resolves its alert
    _heard(again, _status("error", "no camera at index 0", worker="camera").model_copy(update={"fallback": True}))
    assert len(again.alerts()) == 2
    _heard(again, _status("online", worker="camera"))
    assert again.alerts()[1].resolved is not None and again.alerts()[1].resolution == "camera is online again"


def test_a_silent_alert_raised_as_its_worker_is_heard_again_is_resolved() -> None:
    """The silence check (event loop) and a status (the bus's thread) may cross: a worker heard
    between the check's look and its alert leaves no open alert behind."""
    feed = OperatorFeed(_Subscriptions(), AlertBook(ledger_in_memory()))
    _heard(feed, _status("online"))
    later = now_ms() + 10 * HEALTH_INTERVAL_S * 1000
    raise_alert = feed._alert

    def crossed(*args: Any, **kwargs: Any) -> None:  # the status arrives just before the alert is kept
        _heard(feed, _status("online"))
        raise_alert(*args, **kwargs)

    feed._alert = crossed  # type: ignore[method-assign]
    feed.check_silent(later)
    assert [(a.kind, a.resolved is not None) for a in feed.alerts()] == [("worker_silent", True)]


def test_feed_keeps_statuses_utterances_with_replies_and_alerts_bounded() -> None:
    bus = _Subscriptions()
    feed = OperatorFeed(bus)
    topics = bus.topics
    for topic in (topics.all_status(), topics.headpose(), topics.attention(), topics.outgoing_message(),
                  topics.all_speaking(), topics.eo_verdict(), topics.round_state(), topics.transcript_final(),
                  topics.camera_geometry()):
        assert topic.name in bus.names

    # the plot's targets are the camera worker's: none until it says, then its own
    assert feed.view()["camera"]["targets"] == {}
    feed.on_geometry("", CameraGeometry(source="camera", targets={"Celia": {"yaw": 25.0, "pitch": 0.0}},
                                        tolerance_deg=15.0, hysteresis_deg=5.0))
    assert feed.view()["camera"]["targets"] == {"Celia": {"yaw": 25.0, "pitch": 0.0}}
    assert feed.view()["camera"]["tolerance_deg"] == 15.0

    # a worker's status: online, then error (alert), the same error again (no new alert), offline (alert);
    # one published on another worker's topic speaks for nobody
    for worker in ("transcript", "avatar"):  # (not refreshed: the silence checks below are the camera's)
        _heard(feed, _status("online", worker=worker, refresh_s=None))
    feed.on_status(feed.topics.status("intruder").name, _status("offline", worker="transcript"))
    assert feed.view()["workers"]["transcript"]["state"] == "online" and "intruder" not in feed.view()["workers"]
    for state, detail in (("online", ""), ("error", "camera lost"), ("error", "camera lost"), ("offline", "connection lost")):
        _heard(feed, _status(state, detail))
    assert [(a.kind, a.level) for a in feed.alerts()] == [("worker_error", "error"), ("worker_offline", "error")]
    assert "camera lost" in feed.alerts()[0].text and "booth" in feed.alerts()[1].text
    assert feed.view()["workers"]["microphone"]["state"] == "offline"

    # an utterance: the engine comes from its final transcript; replies attach by time
    t = now_ms()
    feed.on_final("", Transcript(source="mic", final=True, utterance_id="u1", text="x", start=t - 900, end=t - 500, engine="whisper"))
    stages = {Stage.SPEECH_END: t - 500, Stage.FINAL: t, Stage.RELAY_SENT: t + 10, Stage.EO_ANSWER: t + 40}
    feed.on_outgoing("", _outgoing("two eggs", "delivered", stages))
    # the transcript worker's name from another process, or from none known, is not its word
    feed.on_outgoing("", _outgoing("forged", "delivered", stages, origin=BOOTH.model_copy(update={"pid": 4242})))
    feed.on_outgoing("", _outgoing("forged", "delivered", stages, origin=None))
    reply = {Stage.RECEIVED: t + 900, Stage.FIRST_AUDIO: t + 1000}
    feed.on_speaking("", Speaking(source="avatar", avatar="Celia", state="begin", message_id="m1", text="Sure", stages=reply,
                                  origin=BOOTH))
    feed.on_speaking("", Speaking(source="avatar", avatar="Celia", state="end", message_id="m1", text="Sure",
                                  stages={**reply, Stage.SPEAKING_END: t + 2500}, origin=BOOTH))
    # an agent speaking a minute and more later answers nobody's utterance
    feed.on_speaking("", Speaking(source="avatar", avatar="Watson", state="begin", message_id="m2",
                                  stages={Stage.RECEIVED: t + 90_000}, origin=BOOTH))
    (utterance,) = feed.utterances()
    assert (utterance.engine, utterance.confidence, utterance.addressee_source, utterance.outcome) == ("whisper", 0.91, "gaze", "delivered")
    replies = [(r.avatar, r.stages[Stage.FIRST_AUDIO], r.stages[Stage.SPEAKING_END]) for r in utterance.replies]
    assert replies == [("Celia", t + 1000, t + 2500)]
    assert feed.view()["speaking"] == {"Celia": False, "Watson": True}

    # blocked (the buyer's: from its outcome; an agent's: from the EO's verdict), undelivered, failed
    feed.on_outgoing("", _outgoing("again", "blocked", stages, reason="R0: wait for a reply"))
    for permitted, speaker in ((False, "Watson"), (False, "Human"), (True, "Celia")):
        feed.on_verdict("", EOVerdict(source="avatar", via="log", permitted=permitted, rationale="R4: too long",
                                      message={"speaker": speaker, "text": "words"}, origin=BOOTH))
    feed.on_outgoing("", _outgoing("late", "undelivered", stages, reason="no round"))
    feed.on_outgoing("", _outgoing("lost", "failed", stages, reason="connection refused"))
    feed.on_outgoing("", _outgoing("maybe", "maybe_delivered", stages, reason="timed out"))
    kinds = [(a.kind, a.level) for a in feed.alerts()][2:]
    assert kinds == [("blocked", "warning"), ("blocked", "warning"), ("undelivered", "error"), ("undelivered", "error"),
                     ("maybe_delivered", "warning")]
    assert "R0: wait for a reply" in feed.alerts()[2].text and "Watson" in feed.alerts()[3].text

    # a worker that stops refreshing its status is reported silent, once, until it is heard again;
    # a client that never refreshes (the supervisor, a tool) never is
    _heard(feed, _status("online", worker="camera"))
    _heard(feed, _status("online", worker="supervisor-4242", refresh_s=None))
    later = now_ms() + int(MISSED_REFRESHES * HEALTH_INTERVAL_S * 1000) + 1000
    feed.check_silent(later)
    feed.check_silent(later + 1000)
    assert [a.kind for a in feed.alerts()][-1:] == ["worker_silent"] and len(feed.alerts()) == 8
    assert feed.view()["workers"]["camera"]["silent"] is True and feed.view()["workers"]["microphone"]["silent"] is False
    assert feed.view()["workers"]["supervisor-4242"]["silent"] is False
    _heard(feed, _status("online", worker="camera"))
    assert feed.view()["workers"]["camera"]["silent"] is False
    silent = feed.alerts()[-1]
    assert silent.resolved is not None and silent.resolution == "camera is online again"  # kept, no longer true

    # bounded, and the snapshot is strict JSON
    for i in range(2 * WORKERS_KEPT):
        _heard(feed, _status("online", worker=f"w{i}"))
    assert len(feed.view()["workers"]) == WORKERS_KEPT and f"w{2 * WORKERS_KEPT - 1}" in feed.view()["workers"]
    _heard(feed, _status("online", worker="transcript", refresh_s=None))  # the flood pushed the transcript worker's out
    for i in range(3 * UTTERANCES_KEPT):
        feed.on_outgoing("", _outgoing(f"n{i}", "undelivered", stages, reason="no round"))
        feed.on_headpose("", HeadPose(source="camera", yaw=i, pitch=0, roll=0, confidence=1, frame_ts=t))
    view = feed.view()
    assert len(view["utterances"]) == UTTERANCES_KEPT and view["utterances"][-1]["text"] == f"n{3 * UTTERANCES_KEPT - 1}"
    assert len(view["alerts"]) == ALERTS_KEPT and len(view["poses"]) < 3 * UTTERANCES_KEPT
    assert json.loads(feed.hub.snapshot_text())["type"] == "snapshot"


# -- the page, fed by the real suite ------------------------------------------------------------------
@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture
def avatar_with_token(mosquitto: Any, make_config: Any, tmp_path: Path) -> Iterator[AvatarRunner]:
    runner = AvatarRunner(mosquitto.url, make_config, tmp_path / "wav")
    yield runner
    runner.close()


def test_console_takes_the_display_token_rules(avatar_with_token: AvatarRunner, page: Page) -> None:
    local, _ = avatar_with_token(**{"avatar.token": TOKEN})
    with loopback.client(base_url=local.url, timeout=10) as http:
        for path in (CONSOLE_PATH, f"{CONSOLE_STATIC_PATH}/console.js", f"{CONSOLE_STATIC_PATH}/console.css"):
            assert http.get(path).status_code == 401, path
            assert http.get(path, params={"token": "wrong"}).status_code == 401, path
        assert http.get(CONSOLE_PATH, headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    feed_url = local.url.replace("http://", "ws://") + CONSOLE_FEED_PATH
    with pytest.raises(Exception, match=r"401|403|4401|rejected"), ws_connect(feed_url) as ws:
        ws.recv(timeout=10)
    with ws_connect(f"{feed_url}?token={TOKEN}") as ws:
        snapshot = json.loads(ws.recv(timeout=10))
    assert snapshot["type"] == "snapshot" and snapshot["camera"]["targets"] == {}  # no camera worker here
    # a browser opening the page with ?token= loads its files and its feed with the cookie it gets
    page.goto(f"{local.url}{CONSOLE_PATH}?token={TOKEN}")
    expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#worker-avatar")).to_have_attribute("data-state", "online", timeout=UI_TIMEOUT_MS)




def test_console_shows_workers_utterance_timeline_head_pose_and_alerts(tmp_path: Path, page: Page, artifacts_dir: Path) -> None:
    port = free_port()
    config_path = suite_config(tmp_path, port)
    avatar_url = f"http://127.0.0.1:{tomllib.loads(config_path.read_text())['avatar']['port']}"
    suite, output = start_run(config_path, tmp_path, *AUTO_FIRST_ROUND)
    mic: subprocess.Popen[str] | None = None
    bus: Bus | None = None
    try:
        config = Config.load(config_path, environ={})
        wait_for_line(output, f"mqtt://127.0.0.1:{port}")
        bus, rounds = round_observer(config)
        assert wait_for(lambda: any(m.phase == "round" for m in rounds), timeout=90), "".join(output)

        page.goto(avatar_url + CONSOLE_PATH)
        expect(page.locator("#connection")).to_have_attribute("data-state", "connected", timeout=UI_TIMEOUT_MS)
        for worker in ("avatar", "transcript"):
            expect(page.locator(f"#worker-{worker}")).to_have_attribute("data-state", "online", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#worker-avatar .pid")).to_have_text(re.compile(r"^\d+$"))
        expect(page.locator("#link-broker")).to_have_attribute("data-ok", "yes", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#link-eo")).to_have_attribute("data-ok", "yes", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#round-phase")).to_have_attribute("data-phase", "round")

        # a real microphone worker (typed input) comes online; one utterance goes all the way
        mic = typed_microphone(config_path, port, tmp_path)
        expect(page.locator("#worker-microphone")).to_have_attribute("data-state", "online", timeout=60_000)
        assert mic.stdin is not None
        mic.stdin.write("@Celia I would like to buy 2 eggs for 10 cents\n")
        mic.stdin.flush()
        utterance = page.locator("#utterances .utterance").first
        expect(utterance).to_have_attribute("data-outcome", "delivered", timeout=UI_TIMEOUT_MS)
        expect(utterance.locator(".text")).to_have_text("Celia, I would like to buy 2 eggs for 10 cents")
        expect(utterance.locator(".addressee")).to_have_text("→ Celia (name)")
        expect(utterance.locator(".engine")).to_contain_text("typed")
        # speech end → final → relay → EO answer → Celia's reply → Celia speaking, each after the one before
        expect(utterance.locator(".stage[data-stage=first_audio]")).to_have_count(1, timeout=UI_TIMEOUT_MS)
        stages = utterance.locator(".timeline").first.locator(".stage")
        names = [stages.nth(i).get_attribute("data-stage") for i in range(stages.count())]
        assert names == [Stage.SPEECH_END, Stage.FINAL, Stage.RELAY_SENT, Stage.EO_ANSWER, Stage.RECEIVED, Stage.FIRST_AUDIO]
        offsets = [int(stages.nth(i).get_attribute("data-ms") or "-1") for i in range(stages.count())]
        assert offsets[0] == 0 and offsets == sorted(offsets) and offsets[-1] < 15_000, offsets
        expect(utterance.locator(".stage[data-stage=received]")).to_contain_text("(Celia)")

        # the camera worker's directions are drawn; the buyer's head, as it publishes it, moves on the plot;
        # attention follows
        geometry = CameraGeometry(source="camera", targets={n: t.model_dump() for n, t in CameraSettings().targets.items()},
                                  tolerance_deg=CameraSettings().tolerance_deg, hysteresis_deg=CameraSettings().hysteresis_deg)
        bus.publish(bus.topics.camera_geometry(), geometry)
        expect(page.locator("#pose-targets .target")).to_have_count(len(geometry.targets), timeout=UI_TIMEOUT_MS)
        dot = page.locator("#pose-dot")
        for i in range(8):
            pose = HeadPose(source="camera", yaw=4.0 + 3 * i, pitch=2.0, roll=0.0, confidence=0.9, frame_ts=now_ms())
            bus.publish(bus.topics.headpose(), pose)
            time.sleep(1 / 15)
        expect(dot).to_have_attribute("data-yaw", "25.0", timeout=UI_TIMEOUT_MS)
        assert float(dot.get_attribute("cx") or 0) == -25.0  # the buyer's left is drawn on the left
        bus.publish(bus.topics.attention(), Attention(source="camera", target="Celia", previous="", since=now_ms()))
        expect(page.locator("#attention")).to_have_attribute("data-target", "Celia", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#target-Celia")).to_have_class(re.compile(r"\battended\b"))
        assert page.locator("#pose-targets .target").count() == 2

        # the EO tells its human-side service it blocked Celia's message: an alert
        blocked = {"speaker": "Celia", "addressee": "Human", "text": "Eggs for free", "role": "seller", "roundId": rounds[-1].round_id,
                   "timestamp": now_ms(), "permitted": False, "rationale": "R4: too many words"}
        answer = loopback.post(avatar_url + ep.RECEIVE_LOG, json=blocked, timeout=10)
        assert answer.status_code == 200
        expect(page.locator("#alerts .alert[data-kind=blocked]")).to_contain_text("R4: too many words", timeout=UI_TIMEOUT_MS)

        # the microphone worker is killed: its last will marks it offline on the page within 2 s
        killed = time.monotonic()
        mic.send_signal(signal.SIGKILL)
        expect(page.locator("#worker-microphone")).to_have_attribute("data-state", "offline", timeout=OFFLINE_WITHIN_MS)
        shown_ms = 1000 * (time.monotonic() - killed)
        expect(page.locator("#alerts .alert[data-kind=worker_offline]")).to_contain_text("microphone")
        print(f"\nmicrophone killed -> offline on the console: {shown_ms:.0f} ms")
        mic.wait(10)

        shot = artifacts_dir / "operator-console-1080p.png"
        page.screenshot(path=str(shot))
        assert shot.stat().st_size > 20_000
        page.set_viewport_size({"width": 1280, "height": 720})
        expect(page.locator("#pose-plot")).to_be_visible()
        page.screenshot(path=str(artifacts_dir / "operator-console-720p.png"))
        # a console opened now gets the same picture from the snapshot
        page.reload()
        expect(page.locator("#worker-microphone")).to_have_attribute("data-state", "offline", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#utterances .utterance")).to_have_count(1)
        expect(page.locator("#alerts .alert")).to_have_count(2)
        expect(dot).to_have_attribute("data-yaw", "25.0")
    finally:
        if mic is not None and mic.poll() is None:
            mic.kill()
            mic.wait(10)
        if bus is not None:
            bus.stop()
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGINT)
            suite.wait(20)
