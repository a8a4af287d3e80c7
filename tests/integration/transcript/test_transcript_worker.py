"""The Rich Transcript worker end to end: real mosquitto, real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from humaine_platform import endpoints as ep
from standins.recorder import Behavior, RecordingServer, free_port
from tests.support.helpers import CLI, wait_for
from tests.support.paths import ROOT
from tests.support.room import Room, running, session_records
from transcript.session_log import read_session_log
from workers.runtime.config import Config
from workers.runtime.messages import EOVerdict, Stage, now_ms

PLATFORM_KEYS = {"speaker", "addressee", "text", "role", "environmentUUID", "timestamp", "roundId"}


Setup = Callable[..., tuple[Config, Room]]


@pytest.fixture
def setup(mosquitto: Any, make_config: Callable[..., Config], tmp_path: Path) -> Iterator[Setup]:
    rooms: list[Room] = []

    def make(**overrides: Any) -> tuple[Config, Room]:
        values = {"transcript.session_dir": str(tmp_path / "sessions"), **overrides}
        config = make_config(mosquitto.url, overrides=values)
        room = Room(config)
        rooms.append(room)
        return config, room

    yield make
    for room in rooms:
        room.close()


def test_gaze_and_name_delivered_in_platform_format(setup: Setup, tmp_path: Path) -> None:
    with RecordingServer() as eo:
        config, room = setup(**{"eo.url": eo.url})
        room.round("r1", "round")
        with running(config, room):
            t = now_ms()
            room.look("Celia", t - 10_000)
            room.say("I want to buy 2 eggs for $3", t - 4000, t - 2500)  # merge window already over
            room.say("Watson, how about you", t - 1500, t - 100)  # start 1 s after: a new turn
            assert eo.wait_for(2, ep.RELAY_MESSAGE)
            outcomes = room.outcomes(2)
        first, second = eo.bodies(ep.RELAY_MESSAGE)
        assert PLATFORM_KEYS <= set(first)
        assert {k: first[k] for k in PLATFORM_KEYS - {"timestamp"}} == {
            "speaker": "Human", "addressee": "Celia", "text": "I want to buy 2 eggs for $3", "role": "buyer",
            "environmentUUID": config.core.environment_uuid, "roundId": "r1",
        }
        assert isinstance(first["timestamp"], int) and abs(first["timestamp"] - now_ms()) < 10_000
        assert first["addresseeSource"] == "gaze" and first["gazeShare"] == {"Celia": 1.0}
        assert first["sttConfidence"] == 0.9 and first["source"] == "mic"
        assert (second["addressee"], second["addresseeSource"]) == ("Watson", "name")
        assert [o.outcome for o in outcomes] == ["delivered", "delivered"]
        assert outcomes[0].message == first
    kinds = [r["kind"] for r in session_records(tmp_path)]
    assert kinds[0] == "session_start" and kinds[-1] == "session_end"
    for kind, count in (("final", 2), ("message", 2), ("outcome", 2), ("attention", 1), ("round_state", 1)):
        assert kinds.count(kind) == count, kinds


def test_int_round_id_and_looking_away(setup: Setup) -> None:
    with RecordingServer() as eo:
        config, room = setup(**{"eo.url": eo.url})
        room.round(4, "round")
        with running(config, room):
            t = now_ms()
            room.look("Watson", t - 10_000)
            room.look("", t - 3000)
            room.say("how much is the milk", t - 2600, t - 1300)
            assert eo.wait_for(1, ep.RELAY_MESSAGE)
        (body,) = eo.bodies(ep.RELAY_MESSAGE)
        assert body["roundId"] == 4 and body["addressee"] == "" and body["addresseeSource"] == "none"


def test_no_relay_outside_a_round(setup: Setup, tmp_path: Path) -> None:
    with RecordingServer() as eo:
        config, room = setup(**{"eo.url": eo.url})
        room.round("r1", "warmup")
        with running(config, room):
            t = now_ms()
            room.say("Celia, hello", t - 3000, t - 2000)
            (outcome,) = room.outcomes(1)
            room.round("r1", "ended")
            room.say("Celia, bye", t - 1500, t - 100)
            outcomes = room.outcomes(2)
        # the worker has stopped (its delivery loop finished): anything it would send has been sent
        assert eo.bodies() == []
        assert outcome.outcome == "undelivered" and "warmup" in outcome.reason
        assert outcomes[1].outcome == "undelivered" and "ended" in outcomes[1].reason
        assert outcome.message["text"] == "Celia, hello" and outcome.message["roundId"] is None
    records = session_records(tmp_path)
    assert [r["outcome"] for r in records if r["kind"] == "outcome"] == ["undelivered", "undelivered"]


def test_finals_closer_than_the_gap_become_one_message(setup: Setup) -> None:
    with RecordingServer() as eo:
        config, room = setup(**{"eo.url": eo.url, "transcript.merge_gap_s": 0.6})
        room.round("r1", "round")
        with running(config, room):
            t = now_ms()
            room.say("Celia I would like", t, t + 300)
            room.say("five eggs", t + 500, t + 900)  # 0.2 s after: same turn
            room.say("and some milk", t + 1600, t + 1900)  # 0.7 s after: a new message
            assert eo.wait_for(2, ep.RELAY_MESSAGE, timeout=10)
            outcomes = room.outcomes(2)
        # stopped: the merger is drained and every message it held delivered, so a third would show
        # the second message came < 5 s after the first: the EO's documented R0 would block it
        assert "rule_note" not in (outcomes[0].model_extra or {})
        assert "R0" in (outcomes[1].model_extra or {}).get("rule_note", "")
        texts = [b["text"] for b in eo.bodies(ep.RELAY_MESSAGE)]
        assert texts == ["Celia I would like five eggs", "and some milk"]
        # each stage of the message has its time: speech from the audio clock, the rest in order
        stages = outcomes[0].stages
        assert (stages[Stage.SPEECH_START], stages[Stage.SPEECH_END]) == (t, t + 900)
        wall = [Stage.FINAL, Stage.RELEASED, Stage.RELAY_SENT, Stage.EO_ANSWER]
        assert [stages[name] for name in wall] == sorted(stages[name] for name in wall)
        human_side = [Stage.SPEECH_START, Stage.SPEECH_END, Stage.FINAL, Stage.RELEASED]
        assert eo.bodies(ep.RELAY_MESSAGE)[0]["stageTimes"] == {k: stages[k] for k in human_side}
        assert eo.bodies(ep.RELAY_MESSAGE)[0]["utteranceIds"] == [f"u{t}", f"u{t + 500}"]


def test_echo_is_dropped_and_typed_is_sent_at_once(setup: Setup) -> None:
    with RecordingServer() as eo:
        config, room = setup(**{"eo.url": eo.url, "transcript.merge_gap_s": 30})
        room.round("r1", "round")
        with running(config, room):
            t = now_ms()
            room.say("how about 3 dollars", t - 500, t - 100, echo=True)
            room.say("@Watson 2 cups of flour", t, t, source="typed")
            assert eo.wait_for(1, ep.RELAY_MESSAGE, timeout=5)  # not held for the 30 s gap
        # stopped: the merger drained and the delivery done, an echo that got through would show
        assert worker_counts(eo) == 1
        body = eo.bodies(ep.RELAY_MESSAGE)[0]
        assert (body["addressee"], body["source"]) == ("Watson", "typed")


def worker_counts(server: RecordingServer) -> int:
    return len(server.bodies(ep.RELAY_MESSAGE))


def test_eo_down_then_up_delivered_once_within_ttl(setup: Setup, caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    eo = RecordingServer(port=port)
    config, room = setup(**{"eo.url": eo.url, "transcript.ttl_s": 5.0})
    room.round("r1", "round")
    caplog.set_level(logging.DEBUG, logger="humaine_platform.client")

    def refused() -> bool:  # an attempt found the EO down and the client retries
        return any("cannot connect" in r.getMessage() and "retrying" in r.getMessage() for r in caplog.records)

    try:
        with running(config, room):
            t = now_ms()
            room.say("Celia two eggs", t - 2500, t - 1300)
            assert wait_for(refused, 5), "the worker never tried the EO while it was down"
            eo.start()
            (outcome,) = room.outcomes(1)
        # the worker has stopped: no attempt of its can still be on its way
        assert outcome.outcome == "delivered" and outcome.model_extra and outcome.model_extra["attempts"] > 1
        assert len(eo.bodies(ep.RELAY_MESSAGE)) == 1
    finally:
        eo.stop()


def test_expired_message_is_recorded_not_sent(setup: Setup) -> None:
    eo = RecordingServer()
    config, room = setup(**{"eo.url": eo.url, "transcript.ttl_s": 0.8})
    room.round("r1", "round")
    try:
        with running(config, room):
            t = now_ms()
            room.say("Celia two eggs", t - 2500, t - 1300)
            (outcome,) = room.outcomes(1, timeout=5)
            eo.start()
        # stopped with the EO up: an expired message still queued or retried would have gone out
        assert outcome.outcome == "undelivered" and "expired" in outcome.reason
        assert eo.bodies() == []
    finally:
        eo.stop()


def test_slow_eo_times_out_without_duplicate(setup: Setup) -> None:
    with RecordingServer(behaviors={ep.RELAY_MESSAGE: Behavior(delay_s=1.2)}) as eo:
        config, room = setup(**{"eo.url": eo.url, "transcript.request_timeout_s": 0.3})
        room.round("r1", "round")
        with running(config, room):
            t = now_ms()
            room.say("Celia two eggs", t - 2500, t - 1300)
            (outcome,) = room.outcomes(1, timeout=5)
        # the EO records a body as it arrives (before its 1.2 s delay): a retry after the timeout
        # would come before the outcome, and the stopped worker sends nothing more
        assert outcome.outcome == "maybe_delivered" and "may have been delivered" in outcome.reason
        assert len(eo.bodies(ep.RELAY_MESSAGE)) == 1


def test_eo_error_and_malformed_reply_may_have_been_delivered(setup: Setup) -> None:
    with RecordingServer(behaviors={ep.RELAY_MESSAGE: Behavior(status=500)}) as eo:
        config, room = setup(**{"eo.url": eo.url})
        room.round("r1", "round")
        with running(config, room):
            t = now_ms()
            room.say("Celia two eggs", t - 3000, t - 2000)
            (outcome,) = room.outcomes(1)
            eo.behaviors[ep.RELAY_MESSAGE] = Behavior(raw=b"not json")
            room.say("Celia three eggs", t - 1500, t - 100)
            outcomes = room.outcomes(2)
        assert outcome.outcome == "maybe_delivered" and "HTTP 500" in outcome.reason
        assert outcomes[1].outcome == "maybe_delivered" and "not JSON" in outcomes[1].reason
        assert len(eo.bodies(ep.RELAY_MESSAGE)) == 2


def test_direct_fan_out_to_agents(setup: Setup, tmp_path: Path) -> None:
    with RecordingServer() as celia, RecordingServer() as watson:
        app_settings = tmp_path / "appSettings.json"
        app_settings.write_text(json.dumps({"serviceMap": {
            "celia": {"protocol": "http", "host": "127.0.0.1", "port": celia.port},
            "watson": {"protocol": "http", "host": "127.0.0.1", "port": watson.port},
        }}))
        config, room = setup(**{"transcript.delivery": "agents", "eo.app_settings": str(app_settings)})
        room.round("r1", "round")
        with running(config, room):
            t = now_ms()
            room.say("Watson, five eggs", t - 3000, t - 2000)
            (outcome,) = room.outcomes(1)
        assert outcome.outcome == "delivered"
        assert celia.bodies(ep.RECEIVE_MESSAGE) == watson.bodies(ep.RECEIVE_MESSAGE) == [outcome.message]


def test_session_log_complete_after_kill_9(mosquitto: Any, make_config: Callable[..., Config], tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    with RecordingServer() as eo:
        config = make_config(mosquitto.url)
        room = Room(config)
        try:
            room.round("r1", "round")
            env_id = config.core.environment_uuid
            command = [
                *CLI, "transcript",
                "--set", f"environment_uuid={env_id}", "--set", f"broker.url={mosquitto.url}",
                "--set", "broker.mode=external", "--eo-url", eo.url, "--session-dir", str(sessions),
                "--set", f'data_dir="{tmp_path / "data"}"',  # not the checkout's own
            ]
            process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                assert wait_for(lambda: any(sessions.glob("*.jsonl")) and "round_state" in _kinds(sessions), 20), (
                    process.stderr.read().decode() if process.poll() is not None and process.stderr else "no log"
                )
                t = now_ms()
                for i in range(5):
                    room.look("Celia" if i % 2 else "Watson", t - 20_000 + i * 2000)
                    room.say(f"utterance number {i}", t - 20_000 + i * 2000, t - 19_000 + i * 2000)
                outcomes = room.outcomes(5)
                room.say("one more", t - 1000, t - 500)  # may or may not be processed at the kill
                os.kill(process.pid, signal.SIGKILL)
                process.wait(10)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait(10)
        finally:
            room.close()
    records = list(read_session_log(next(sessions.glob("*.jsonl"))))
    delivered_ids = {o.id for o in outcomes}
    logged = {r["message_id"] for r in records if r["kind"] == "outcome"}
    assert delivered_ids <= logged
    finals = [r["transcript"]["text"] for r in records if r["kind"] == "final"]
    assert finals[:5] == [f"utterance number {i}" for i in range(5)]
    assert sum(1 for r in records if r["kind"] == "attention") >= 5
    assert [r["kind"] for r in records].count("session_end") == 0  # it really died
    assert len(eo.bodies(ep.RELAY_MESSAGE)) >= 5


def test_cli_misconfiguration_is_one_readable_line() -> None:
    result = subprocess.run(
        [*CLI, "transcript", "--delivery", "agents"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "humaine-env transcript: delivery 'agents' needs [transcript] agent_urls or an [eo] app_settings "
        "serviceMap with the agents"
    ]


def _kinds(sessions: Path) -> set[str]:
    kinds: set[str] = set()
    for path in sessions.glob("*.jsonl"):
        kinds |= {r["kind"] for r in read_session_log(path)}
    return kinds


def test_blocked_by_the_current_eo_takes_the_rationale_it_told_the_avatar(setup: Setup) -> None:
    """The current EO answers a blocked message like a permitted one, minus ``allResponses``;
    its reason reaches the Avatar Controller, which publishes it (``EOVerdict``)."""
    blocked_answer = Behavior(answer={"status": "Acknowledged"})
    with RecordingServer(behaviors={ep.RELAY_MESSAGE: blocked_answer}) as eo:
        config, room = setup(**{"eo.url": eo.url})
        room.round("r1", "round")

        def tell_rejection() -> None:
            assert eo.wait_for(1, ep.RELAY_MESSAGE)
            (sent,) = eo.bodies(ep.RELAY_MESSAGE)
            room.bus.publish(room.topics.eo_verdict(), EOVerdict(
                source="avatar", via="rejection", permitted=False, rationale="Excessive message length", message=sent))

        with running(config, room):
            t = now_ms()
            teller = threading.Thread(target=tell_rejection)
            teller.start()
            room.say("Celia two eggs", t - 2500, t - 1300)
            (told,) = room.outcomes(1)
            teller.join(5)
            room.say("Celia three eggs", t - 1000, t - 500)  # nobody tells why this time
            untold = room.outcomes(2, timeout=15)[1]
    assert told.outcome == "blocked" and told.reason == "Excessive message length"
    assert untold.outcome == "blocked" and "rationale did not reach" in untold.reason


def test_a_round_the_eo_does_not_know_is_never_relayed(setup: Setup) -> None:
    """After an EO restart the retained round state still names a round the EO forgot: it
    answers the round check with 500 and the message is recorded undelivered, never sent."""
    with RecordingServer(behaviors={f"{ep.VIEW_QUEUE}/r1": Behavior(status=500, raw=b"TypeError")}) as eo:
        config, room = setup(**{"eo.url": eo.url})
        room.round("r1", "round")
        with running(config, room):
            t = now_ms()
            room.say("Celia two eggs", t - 2500, t - 1300)
            (outcome,) = room.outcomes(1)
        assert outcome.outcome == "undelivered" and "unknown to the EO" in outcome.reason
        assert eo.bodies(ep.RELAY_MESSAGE) == []


def test_the_documented_r0_note_only_when_no_agent_answered(setup: Setup) -> None:
    """A message sent soon after the buyer's last one gets the "documented R0 would block it"
    note only when no agent answered in between: that is when it explains a silence."""
    with RecordingServer() as eo:
        config, room = setup(**{"eo.url": eo.url})
        room.round("r1", "round")
        with running(config, room) as worker:
            t = now_ms()
            room.say("Celia one egg please", t, t + 300, source="typed")
            room.outcomes(1)
            room.bus.publish(room.topics.eo_verdict(), EOVerdict(
                source="avatar", via="log", permitted=True, rationale=None,
                message={"speaker": "Celia", "addressee": "Human", "text": "Sure, 1 egg for 1 USD.", "role": "seller"}))
            # the worker has heard the agent answer since its last message (nothing public says it)
            assert wait_for(worker.rule_notes.agent_answered, 10), "the agent's answer never arrived"
            t = now_ms()
            room.say("Celia two eggs then", t, t + 300, source="typed")
            outcomes = room.outcomes(2)
            t = now_ms()
            room.say("Celia three eggs", t, t + 300, source="typed")  # nobody answered the last one
            outcomes = room.outcomes(3)
        assert "rule_note" not in (outcomes[1].model_extra or {})
        assert "R0" in (outcomes[2].model_extra or {}).get("rule_note", "")
