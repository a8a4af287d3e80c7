"""Every round recorded as a session: ``run`` with the stand-in EO and a typed buyer writes
``data_dir/sessions/<date>/<round>-<buyer>/`` that ``label`` accepts and ``eval`` refuses in one
line; a disk that cannot be written is one line and an ``error`` status, and the round's session
is completed once the disk takes it again."""

from __future__ import annotations

import datetime
import json
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import tomllib

from avatar.books.ledger import LEDGER_FILE
from avatar.operator.routes import BUYER_PATH, END_ROUND_PATH, NEXT_ROUND_PATH
from avatar.room_ledger import open_ledger
from formats.session_files import SESSIONS_DIR
from sessions.format import EVENTS_FILE, SESSION_FILE, Session
from sessions.rounds import RoundRecorder, name_part, round_folder
from tests.support import loopback
from tests.support.bids import accept
from tests.support.helpers import (
    AUTO_FIRST_ROUND,
    CLI,
    MosquittoBroker,
    free_port,
    round_observer,
    start_run,
    suite_config,
    typed_microphone,
    wait_for,
    wait_for_line,
)
from tests.support.room import Collector, Room
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import RoundState, Status, now_ms

BUYER = "Zoë Lovelace"
LINE = "@Celia I want 2 eggs for 10 cents"


def test_folder_names_are_safe_dated_and_never_reused(tmp_path: Path) -> None:
    started = now_ms()
    day = datetime.datetime.fromtimestamp(started / 1000).date().isoformat()
    first = round_folder(tmp_path, started, "r2", BUYER)
    assert first == tmp_path / day / "r2-Zoe-Lovelace"
    first.mkdir(parents=True)
    assert round_folder(tmp_path, started, "r2", BUYER).name == "r2-Zoe-Lovelace-2"  # a second run the same day
    assert round_folder(tmp_path, started, 7, "").name == "7-unnamed"
    assert name_part("../../etc/passwd") == "etc-passwd"
    assert len(name_part("x" * 80)) <= 48


def test_run_records_each_round_as_a_session_for_label_and_eval(tmp_path: Path) -> None:
    port = free_port()
    config_path = suite_config(tmp_path, port)
    text = config_path.read_text().replace("warm_up_s = 0.5\n", "warm_up_s = 0.5\nround_s = 2.0\npost_s = 0.5\n")
    text += "[sessions]\nclose_after_s = 0.5\n"
    config_path.write_text(text)
    avatar_url = f"http://127.0.0.1:{tomllib.loads(text)['avatar']['port']}"
    suite, output = start_run(config_path, tmp_path, *AUTO_FIRST_ROUND)
    mic: subprocess.Popen[str] | None = None
    bus: Bus | None = None
    try:
        config = Config.load(config_path, environ={})
        wait_for_line(output, f"mqtt://127.0.0.1:{port}")
        bus, rounds = round_observer(config)
        assert wait_for(lambda: any(m.phase == "ended" for m in rounds), timeout=90), "".join(output)
        mic = typed_microphone(config_path, port, tmp_path)
        assert loopback.post(avatar_url + BUYER_PATH, json={"buyer": BUYER}, timeout=10).json()["ok"]
        answer = loopback.post(avatar_url + NEXT_ROUND_PATH, json={"durations": {"warmUp": 0.5, "round": 60, "post": 0.5}}, timeout=15)
        assert answer.status_code == 200, answer.text
        assert wait_for(lambda: any(m.round_id != "r1" and m.phase == "round" for m in rounds), timeout=20)
        second = next(m for m in rounds if m.round_id != "r1" and m.phase == "round")
        assert second.buyer == BUYER  # the round state carries the buyer named on the console

        assert mic.stdin is not None
        mic.stdin.write(LINE + "\n")
        mic.stdin.flush()
        assert wait_for(lambda: any("buyer → Celia" in line for line in output), timeout=30), "".join(output)
        assert loopback.post(avatar_url + END_ROUND_PATH, timeout=15).json()["ok"]

        day = datetime.date.today().isoformat()
        folder = tmp_path / "data" / SESSIONS_DIR / day / f"{second.round_id}-Zoe-Lovelace"
        assert wait_for(lambda: (folder / SESSION_FILE).is_file(), timeout=20), sorted(p.name for p in folder.parent.iterdir())
        session = Session(folder)
        assert session.info.notes["buyer"] == BUYER and session.info.notes["round_id"] == second.round_id
        assert session.info.audio is False and session.info.camera is None  # typed input, no camera
        assert session.info.duration_ms > 0
        kinds = [event["payload"]["type"] for event in session.events()]
        assert kinds[0] in ("round_state", "attention")
        for kind in ("round_state", "transcript", "humaine_message", "eo_verdict"):
            assert kind in kinds, kinds
        assert all(event["kind"] == "mqtt" and event["topic"].startswith(f"humaine/{config.core.environment_uuid}/")
                   for event in session.events())

        # label drafts the truth from the typed line; eval refuses the session in one line
        label = subprocess.run([*CLI, "label", "--accept", str(folder)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                               stdin=subprocess.DEVNULL)
        assert label.returncode == 0, label.stderr
        truth = session.truth()
        assert truth is not None and [(u.text, u.addressee) for u in truth.utterances] == [("Celia, I want 2 eggs for 10 cents", "Celia")]
        evaluation = subprocess.run([*CLI, "eval", str(folder)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                                    stdin=subprocess.DEVNULL)
        assert evaluation.returncode == 1
        assert evaluation.stderr.count("\n") == 1 and "nothing to replay" in evaluation.stderr, evaluation.stderr
    finally:
        if mic is not None:
            mic.kill()
            mic.wait(10)
        if bus is not None:
            bus.stop()
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGINT)
            suite.wait(20)


def test_a_disk_that_cannot_be_written_is_one_line_and_the_session_is_completed_later(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the sessions' folder should be: nothing can be created below it")
    config = make_config(mosquitto.url, **{"sessions.folder": str(blocker / SESSIONS_DIR), "sessions.close_after_s": 0.2})
    room = Room(config)
    statuses = Collector()
    room.bus.subscribe(room.topics.status("recorder"), Status, statuses)
    caplog.set_level(logging.INFO)
    recorder = RoundRecorder(config)
    recorder.start()
    thread = threading.Thread(target=recorder.run, args=(recorder.stop_event,), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: any(s.state == "online" for s in statuses.items), 10)
        room.bus.publish(room.topics.round_state(), RoundState(source="avatar", round_id="r5", phase="round", buyer="Ada"))
        start = now_ms()
        for i in range(3):
            room.say(f"Celia I offer {i} dollars", start + i * 1000, start + i * 1000 + 500)
        assert wait_for(lambda: any(s.state == "error" for s in statuses.items), 10)
        assert wait_for(lambda: recorder.current is not None and recorder.current.events >= 4, 10)
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and "Not a directory" in errors[0].getMessage(), [r.getMessage() for r in errors]

        room.round("r5", "post")  # the round ends while the disk is still bad: nothing is lost, nothing dies
        assert wait_for(lambda: recorder.current is None and len(recorder._unfinished) == 1, 10)
        assert thread.is_alive()
        blocker.unlink()
        blocker.mkdir()  # the operator freed the disk
        folder = blocker / SESSIONS_DIR
        assert wait_for(lambda: len(recorder.recorded) == 1, 15)
        session = Session(recorder.recorded[0])
        assert session.path.is_relative_to(folder) and session.path.name == "r5-Ada"
        texts = [e["payload"].get("text") for e in session.events() if e["payload"]["type"] == "transcript"]
        assert texts == [f"Celia I offer {i} dollars" for i in range(3)]
        assert wait_for(lambda: statuses.items[-1].state == "online", 10)
        assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
        assert (session.path / EVENTS_FILE).is_file() and json.loads((session.path / SESSION_FILE).read_text())["notes"]["buyer"] == "Ada"
    finally:
        recorder.stop()
        thread.join(10)
        recorder.close()
        room.close()
    assert not thread.is_alive()


def test_a_buyer_named_during_the_round_gets_its_session_and_the_ledger_its_summary(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path
) -> None:
    config = make_config(mosquitto.url, **{"sessions.close_after_s": 0.1})
    ledger = open_ledger(config.core.data_dir / LEDGER_FILE)  # what the Avatar Controller writes
    key = ledger.begin_round("r7", {"warmUp": 0, "round": 60, "post": 30}, 50.0, "USD", "round", now_ms(), None).key
    ledger.book_deal(key, "Celia", accept({"egg": 2}, 1.25), "Deal.", "m1", now_ms())
    publisher = Bus(config, "test-publisher", persistent=False)
    publisher.start()
    assert publisher.wait_connected(10)
    recorder = RoundRecorder(config)
    recorder.start()
    thread = threading.Thread(target=recorder.run, args=(recorder.stop_event,), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: recorder.bus.connected, 10)
        state = RoundState(source="avatar", round_id="r7", phase="round")
        publisher.publish(publisher.topics.round_state(), state)
        assert wait_for(lambda: recorder.current is not None, 10)
        assert recorder.current is not None and recorder.current.folder.name == "r7-unnamed"
        publisher.publish(publisher.topics.round_state(), state.model_copy(update={"buyer": "Ada", "id": "named"}))
        publisher.publish(publisher.topics.round_state(), state.model_copy(update={"buyer": "Ada", "phase": "post", "id": "post"}))
        assert wait_for(lambda: len(recorder.recorded) == 1, 10)
        session = Session(recorder.recorded[0])
        assert session.path.name == "r7-Ada" and not (session.path.parent / "r7-unnamed").exists()
        books = session.info.notes["books"]
        assert books["paid"] == 1.25 and books["deals"][0]["goods"] == {"egg": 2} and books["totals"] is None

        totals = {"Human": {"cost": 1.25, "utility": {"value": 0}}}
        ledger.set_totals(key, totals, now_ms())
        publisher.publish(publisher.topics.round_state(), state.model_copy(update={"buyer": "Ada", "phase": "ended", "id": "end"}))
        assert wait_for(lambda: Session(session.path).info.notes["books"]["totals"] == totals, 10)
    finally:
        recorder.stop()
        thread.join(10)
        recorder.close()
        publisher.stop()
        ledger.close()


def _recording(config: Config) -> tuple[RoundRecorder, threading.Thread]:
    recorder = RoundRecorder(config)
    recorder.start()
    thread = threading.Thread(target=recorder.run, args=(recorder.stop_event,), daemon=True)
    thread.start()
    assert wait_for(lambda: recorder.bus.connected, 10)
    return recorder, thread


def _stopped(recorder: RoundRecorder, thread: threading.Thread) -> None:
    recorder.stop()
    thread.join(10)
    recorder.close()


def test_a_round_is_recorded_in_one_folder_whatever_restarts(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path
) -> None:
    """The recorder stopped (cleanly: it completes the session; then killed while it wrote a line)
    and started again while r3 goes on: it goes on in r3's folder, which holds the events of both
    runs and reads whole (the line cut short is dropped); a second run of the day numbering its
    rounds from r1 again (another start) gets a folder of its own."""
    config = make_config(mosquitto.url, **{"sessions.close_after_s": 0.1})
    room = Room(config)
    # noon today: the later run's r3, an hour on, is of the same day (run after 23:00, it fell on
    # the next day, whose folder of its own rightly had no r3-Ada yet)
    started = int(datetime.datetime.combine(datetime.date.today(), datetime.time(12)).timestamp() * 1000)
    state = RoundState(source="avatar", round_id="r3", phase="round", buyer="Ada", phase_started=started)
    try:
        recorder, thread = _recording(config)
        room.bus.publish(room.topics.round_state(), state)
        assert wait_for(lambda: recorder.current is not None, 10)
        room.say("Celia two eggs please", now_ms(), now_ms() + 500)
        assert wait_for(lambda: recorder.current is not None and recorder.current.kinds.get("transcript"), 10)
        _stopped(recorder, thread)
        first = recorder.recorded[0]
        with (first / EVENTS_FILE).open("a") as events:  # and then it was killed writing a line
            events.write('{"t_ms": 1, "kind": "mqtt", "topic": "x", "payl')

        recorder, thread = _recording(config)  # the retained round state: r3 still runs
        assert wait_for(lambda: recorder.current is not None, 10)
        assert recorder.current is not None and recorder.current.folder == first
        room.say("Watson a cup of milk", now_ms(), now_ms() + 500)
        assert wait_for(lambda: recorder.current is not None and recorder.current.kinds.get("transcript", 0) >= 2, 10)
        room.bus.publish(room.topics.round_state(), state.model_copy(update={"phase": "post", "id": "post"}))
        assert wait_for(lambda: recorder.current is None and len(recorder.recorded) == 1, 10)
        session = Session(first)
        texts = [e["payload"].get("text") for e in session.events() if e["payload"]["type"] == "transcript"]
        assert texts == ["Celia two eggs please", "Watson a cup of milk"]
        assert session.info.notes["events"]["transcript"] == 2
        assert [p.name for p in first.parent.iterdir()] == ["r3-Ada"]

        again = state.model_copy(update={"phase_started": started + 3_600_000, "id": "again"})  # a later run's r3
        room.bus.publish(room.topics.round_state(), again)
        assert wait_for(lambda: recorder.current is not None, 10)
        assert recorder.current is not None and recorder.current.folder.name == "r3-Ada-2"
    finally:
        _stopped(recorder, thread)
        room.close()
