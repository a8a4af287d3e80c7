"""Fault injection, poison payloads: hostile bytes on subscribed topics of a real mosquitto.

Each payload must cost exactly that one message: the network thread lives on, later messages
arrive, a persistent session does not deliver the poison again, and the log gets one line per
kind of problem, never a traceback."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from avatar.harness import LocalAvatar
from humaine_platform import endpoints as ep
from standins.recorder import RecordingServer
from tests.support import loopback
from tests.support.avatar import captured
from tests.support.helpers import MosquittoBroker, wait_for
from tests.support.room import SPOKEN, Collector, Room, transcript_process, typed_final
from transcript.session_log import read_session_log
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import RoundState, Status, Transcript, now_ms
from workers.runtime.worker import EXIT_BUS_DEAD

DEEP = b"[" * 200_000
POISON: dict[str, bytes] = {
    "200 KB of [[[[": DEEP,
    "deep but short": b'{"v": 1, "type": "transcript", "x": ' + b"[" * 60 + b"]" * 60 + b"}",
    "NaN": typed_final(0).model_dump_json().replace('"confidence":1.0', '"confidence":NaN').encode(),
    "Infinity by overflow": typed_final(0).model_dump_json().replace('"confidence":1.0', '"confidence":1e999').encode(),
    "10,000-digit integer": typed_final(0).model_dump_json().replace('"confidence":1.0', '"confidence":' + "9" * 10_000).encode(),
    "invalid UTF-8": b'{"v": 1, "text": "\xff\xfe"}',
    "lone surrogate": typed_final(0).model_dump_json().replace('"I want', '"\\ud800 I want').encode(),
    "raw surrogate bytes": typed_final(0).model_dump_json().encode().replace(b'"I want', b'"\xed\xa0\x80 I want'),
    "JSON array": b"[1, 2, 3]",
}


def _started(config: Config, worker_id: str, got: Collector | None = None,
             handler: Callable[[str, Transcript], None] | None = None) -> Bus:
    bus = Bus(config, worker_id)
    if got is not None or handler is not None:
        bus.subscribe(bus.topics.transcript_final(), Transcript, handler or got)  # type: ignore[arg-type]
    bus.start()
    assert bus.wait_connected(10)
    return bus


def test_poison_payloads_cost_one_message_each(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], caplog: pytest.LogCaptureFixture
) -> None:
    config = make_config(mosquitto.url)
    got = Collector()
    raised = {"RecursionError": 0, "ValueError": 0}

    def handler(topic: str, message: Transcript) -> None:
        if message.text in raised:
            raised[message.text] += 1
            raise RecursionError("maximum recursion depth exceeded") if message.text == "RecursionError" else ValueError("bug")
        got(topic, message)

    caplog.set_level(logging.INFO, logger="workers.runtime.bus")
    publisher = _started(config, "publisher")
    subscriber = _started(config, "subscriber", handler=handler)
    topic = subscriber.topics.transcript_final()
    try:  # both connected with every subscription acknowledged (SUBACK): nothing can pass the subscriber by
        tried = 0
        for rounds in range(3):  # repeats must not add log lines
            for payload in POISON.values():
                publisher.publish_raw(topic, payload)
                tried += 1
            for kind in raised:
                publisher.publish(topic, typed_final(0).model_copy(update={"text": kind, "id": f"{kind}{rounds}"}))
                tried += 1
            publisher.publish(topic, typed_final(rounds + 1))
        assert wait_for(lambda: len(got) == 3, timeout=15), f"valid messages after poison: {len(got)}"
        assert [m.utterance_id for m in got.items] == ["u1", "u2", "u3"]
        assert subscriber.alive and subscriber.connected
        assert raised == {"RecursionError": 3, "ValueError": 3}
        stats = subscriber.stats
        assert stats.dropped_invalid + stats.handler_errors == tried
        records = [r for r in caplog.records if r.name == "workers.runtime.bus" and r.levelno >= logging.WARNING]
        assert not any(r.exc_info for r in caplog.records), "a traceback was logged"
        # one line per kind (not JSON, invalid Transcript, handler failed), however often it repeats
        assert 1 <= len(records) <= 4, [r.getMessage()[:120] for r in records]
        assert all(len(r.getMessage()) < 600 for r in records)
    finally:
        publisher.stop()
        subscriber.stop()


def test_redelivered_poison_cannot_wedge_a_persistent_session(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    """Poison queued for a worker that is away: dropped once on its return (and acknowledged),
    not delivered again on the next return; the valid message behind it arrives."""
    config = make_config(mosquitto.url)
    first = _started(config, "subscriber", got=Collector())
    first.stop()  # the session (and its subscription) stays on the broker
    publisher = _started(config, "publisher")
    topic = publisher.topics.transcript_final()
    try:
        publisher.publish_raw(topic, DEEP)
        publisher.publish(topic, typed_final(1))
        time.sleep(0.3)
        got = Collector()
        second = _started(config, "subscriber", got=got)
        assert wait_for(lambda: len(got) == 1, timeout=10)
        assert second.stats.dropped_invalid == 1 and second.alive
        second.stop()
        again = Collector()
        third = _started(config, "subscriber", got=again)
        publisher.publish(topic, typed_final(2))
        assert wait_for(lambda: len(again) == 1, timeout=10)
        time.sleep(0.3)
        assert third.stats.dropped_invalid == 0, "the poison was delivered again"
        assert [m.utterance_id for m in again.items] == ["u2"]
        third.stop()
    finally:
        publisher.stop()


WORKER_WITH_FATAL_HANDLER = textwrap.dedent("""
    import sys
    from workers.runtime.config import Config
    from workers.runtime.messages import Transcript
    from workers.runtime.worker import Worker, run_worker

    class Fragile(Worker):
        name = "fragile"

        def __init__(self, config):
            super().__init__(config)
            self.bus.subscribe(self.topics.transcript_final(), Transcript, self.on_final)

        def on_final(self, _topic, message):
            print("got", message.utterance_id, flush=True)
            raise SystemExit("a handler that ends its thread")

    config = Config(file_data={}, environ={}, overrides={
        "environment_uuid": sys.argv[1], "broker.url": sys.argv[2], "broker.mode": "external"})
    sys.exit(run_worker(Fragile(config)))
""")


def test_watchdog_turns_a_dead_bus_thread_into_a_non_zero_exit(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    """Anything that ends paho's network thread (here a handler raising SystemExit, which no
    ``except Exception`` catches) makes the worker exit non-zero, so the supervisor restarts it."""
    config = make_config(mosquitto.url)
    env = config.core.environment_uuid
    process = subprocess.Popen([sys.executable, "-c", WORKER_WITH_FATAL_HANDLER, env, mosquitto.url],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    publisher = _started(config, "publisher")
    try:
        status = Collector()
        watcher = Bus(config, "watcher", persistent=False)
        from workers.runtime.messages import Status
        watcher.subscribe(watcher.topics.status("fragile"), Status, status)
        watcher.start()
        assert wait_for(lambda: any(s.state == "online" for s in status.items), 15), "worker never came online"
        publisher.publish(publisher.topics.transcript_final(), typed_final(1))
        code = process.wait(15)
        out, err = process.communicate()
        assert "got u1" in out
        assert code == EXIT_BUS_DEAD, err
        assert "network thread died" in err
        assert "Traceback" not in err
        watcher.stop()
    finally:
        if process.poll() is None:
            process.kill()
        publisher.stop()


RAW_SURROGATE = b"\xed\xa0\x80"
"""U+D800 written as if it were a character: not UTF-8 (``json.loads`` on bytes let it through)."""


def test_a_final_with_a_lone_surrogate_costs_that_final_only(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    """A final whose text holds a raw (or an escaped) lone surrogate once stopped every later
    outcome of the transcript worker while its status said ``online``. Now each costs itself: a
    record in the session log and one line; the finals after it are delivered."""
    eo = RecordingServer().start()
    config = make_config(mosquitto.url)
    room = Room(config)
    statuses = Collector()
    room.bus.subscribe(room.topics.status("transcript"), Status, statuses)
    room.round("r1", "round")
    worker = transcript_process(config, eo.url, mosquitto.url)
    try:
        assert wait_for(lambda: any(s.pid == worker.pid and s.state == "online" for s in statuses.items), 20)
        topic = room.topics.transcript_final()
        t = now_ms()
        final = Transcript(source="mic", final=True, utterance_id="poison", text="Celia I want eggs", start=t - 900,
                           end=t - 100, engine="test").model_dump_json().encode()
        room.bus.publish_raw(topic, final.replace(b"I want", RAW_SURROGATE + b" I want"))
        room.bus.publish_raw(topic, final.replace(b"I want", b"\\ud800 I want"))
        for i, text in enumerate(SPOKEN):
            t = now_ms()
            room.say(text, t - 900, t - 100 - i, source="typed")
        assert wait_for(lambda: len(room.outgoing) >= len(SPOKEN), 15), [(m.outcome, m.reason) for m in room.outgoing]
        assert [b["text"] for b in eo.bodies(ep.RELAY_MESSAGE)] == list(SPOKEN)
        assert [m.outcome for m in room.outgoing] == ["delivered"] * len(SPOKEN)
        latest = [s for s in statuses.items if s.pid == worker.pid][-1]
        assert latest.state == "online", latest
        records = [r for log in (config.core.data_dir / "sessions").glob("*.jsonl") for r in read_session_log(log)]
        dropped = [r for r in records if r["kind"] == "final_dropped"]
        assert len(dropped) == 2 and "UTF-8" in dropped[0]["reason"] and "surrogate" in dropped[1]["reason"], dropped
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=10)
        assert worker.returncode == 0 and "Traceback" not in err, err
        assert sum("dropped a payload" in line for line in err.splitlines()) == 1, err  # one line for the kind
    finally:
        if worker.poll() is None:
            worker.kill()
        room.close()
        eo.stop()


def test_a_retained_round_state_that_is_garbage_is_replaced_by_its_owner(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path
) -> None:
    """Non-JSON left retained on ``round/state``, then a transcript worker restart: every
    utterance was "undelivered: no round state received" until someone cleared it by hand. The
    Avatar Controller owns the round state and publishes its own over garbage at once."""
    eo = RecordingServer().start()
    config = make_config(mosquitto.url, **{"avatar.port": 0, "avatar.speaker": f"wav:{tmp_path / 'wav'}"})
    avatar = LocalAvatar(config).start()
    room = Room(config)
    statuses = Collector()
    room.bus.subscribe(room.topics.status("transcript"), Status, statuses)
    first = transcript_process(config, eo.url, mosquitto.url)
    second: subprocess.Popen[str] | None = None
    try:
        with loopback.client(base_url=avatar.url, timeout=10) as http:
            for key in ("/sendRoundMetadata", "/startRound"):
                assert http.post(key, json=captured(key)).status_code == 200
        assert wait_for(lambda: any(s.pid == first.pid and s.state == "online" for s in statuses.items), 20)
        room.bus.client.publish(room.topics.round_state().name, b"this is not JSON {", qos=1, retain=True)
        first.kill()  # and the transcript worker restarts into it
        first.wait(10)
        second = transcript_process(config, eo.url, mosquitto.url)
        assert wait_for(lambda: any(s.pid == second.pid and s.state == "online" for s in statuses.items), 20)
        for i, text in enumerate(SPOKEN):
            t = now_ms()
            room.say(text, t - 900, t - 100 - i, source="typed")
        assert wait_for(lambda: len(room.outgoing) >= len(SPOKEN), 15), [(m.outcome, m.reason) for m in room.outgoing]
        assert [m.outcome for m in room.outgoing] == ["delivered"] * len(SPOKEN), [m.reason for m in room.outgoing]
        # what a newcomer finds retained is the round again
        late = Collector()
        reader = Bus(config, "late-reader", persistent=False)
        reader.subscribe(reader.topics.round_state(), RoundState, late)
        reader.start()
        assert wait_for(lambda: len(late) >= 1, 10)
        assert (late.items[-1].round_id, late.items[-1].phase) == (captured("/startRound")["roundId"], "round")
        reader.stop()
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
        room.bus.clear_retained(room.topics.round_state())
        room.close()
        avatar.stop()
        eo.stop()


def test_a_message_that_cannot_be_written_as_json_is_not_published_and_not_raised(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], caplog: pytest.LogCaptureFixture
) -> None:
    """A lone surrogate that got into one of our own messages (typed text under a C locale) made
    ``publish`` raise in the publisher's loop; it now costs that message and one line."""
    config = make_config(mosquitto.url)
    got = Collector()
    caplog.set_level(logging.INFO, logger="workers.runtime.bus")
    publisher = _started(config, "publisher")
    subscriber = _started(config, "subscriber", got=got)
    try:  # both connected with every subscription acknowledged (SUBACK): nothing can pass the subscriber by
        topic = publisher.topics.transcript_final()
        for _ in range(3):
            publisher.publish(topic, typed_final(0).model_copy(update={"text": "\ud800 eggs"}))
        publisher.publish(topic, typed_final(1))
        assert wait_for(lambda: len(got) == 1, 10)
        assert publisher.stats.unpublishable == 3
        lines = [r for r in caplog.records if "could not publish" in r.getMessage()]
        assert len(lines) == 1 and not any(r.exc_info for r in caplog.records)
    finally:
        publisher.stop()
        subscriber.stop()
