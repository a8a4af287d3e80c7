"""The MQTT bus against real brokers: mosquitto and the embedded one."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from humaine_env.supervisor import KILL_AFTER_S
from tests.support.helpers import MosquittoBroker, collect, wait_for
from tests.support.room import Collector, typed_final
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import Status, Transcript, VadEvent, now_ms
from workers.runtime.topics import Topics


def _pair(config: Config) -> tuple[Bus, Bus]:
    return Bus(config, "publisher"), Bus(config, "subscriber")


@pytest.mark.parametrize("broker_kind", ["mosquitto", "embedded"])
def test_publish_subscribe_round_trip(broker_kind: str, request: pytest.FixtureRequest, make_config: Callable[..., Config]) -> None:
    broker = request.getfixturevalue("mosquitto" if broker_kind == "mosquitto" else "embedded_broker")
    url = broker.url if broker_kind == "mosquitto" else broker.address.url
    config = make_config(url)
    publisher, subscriber = _pair(config)
    got = Collector()
    subscriber.subscribe(subscriber.topics.transcript_final(), Transcript, got)
    for bus in (publisher, subscriber):
        bus.start()
        assert bus.wait_connected(10)  # connected and every subscription acknowledged (SUBACK)
    try:
        sent = [typed_final(i) for i in range(20)]
        for message in sent:
            publisher.publish(publisher.topics.transcript_final(), message)
        assert wait_for(lambda: len(got) == 20, timeout=10)
        assert [m.text for m in got.items] == [m.text for m in sent]
        # as sent, and stamped with the process that published it, as its status names it
        assert got.items[0].model_dump() == sent[0].model_copy(update={"origin": publisher.origin}).model_dump()
        assert (publisher.origin.pid, publisher.origin.host) == (os.getpid(), socket.gethostname())
    finally:
        publisher.stop()
        subscriber.stop()


@pytest.mark.parametrize("kill_signal", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "killed"])
def test_no_qos1_message_lost_when_broker_restarts(
    kill_signal: int, own_mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    """The broker goes away mid-stream (cleanly, or killed with -9; mosquitto persists its
    sessions on every change) and comes back on the same port: nothing published is lost."""
    config = make_config(own_mosquitto.url)
    publisher, subscriber = _pair(config)
    got = Collector()
    subscriber.subscribe(subscriber.topics.transcript_final(), Transcript, got)
    for bus in (publisher, subscriber):
        bus.start()
        assert bus.wait_connected(10)
    total = 150
    try:
        for i in range(total):
            publisher.publish(publisher.topics.transcript_final(), typed_final(i))
            if i == 50:
                assert wait_for(lambda: len(got) >= 40, timeout=10)
                own_mosquitto.stop(kill_signal)
                assert wait_for(lambda: not publisher.connected and not subscriber.connected, timeout=10)
            if i == 100:
                own_mosquitto.start()
            time.sleep(0.01)  # the stream's pace, not a wait: it goes on through the outage and the reconnect
        assert wait_for(lambda: len(got) >= total, timeout=30)
        # a last message behind them: MQTT keeps one publisher's order on a topic, resent ones
        # included, so once it is here any redelivery of the stream has arrived too
        publisher.publish(publisher.topics.transcript_final(), typed_final(total))
        assert wait_for(lambda: any(m.utterance_id == f"u{total}" for m in got.items), timeout=10)
        received = [m.utterance_id for m in got.items if m.utterance_id != f"u{total}"]
        assert sorted(received, key=lambda u: int(u[1:])) == [f"u{i}" for i in range(total)]
        assert publisher.stats.connects >= 2 and subscriber.stats.connects >= 2
    finally:
        publisher.stop()
        subscriber.stop()


def test_finals_handed_over_while_the_connection_is_down_are_kept_for_their_reader(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    """A final the microphone publishes while paho has no connection (the moment a broker dies,
    before the loss is noticed) is kept by paho and sent once connected. paho's ``is_published``
    raises for such a message; the reader gate asked it, so the publish raised, and inside the
    next reconnect it cost the gate and the status (seen: 5 of 6 lines said during a broker's
    restart lost)."""
    config = make_config(mosquitto.url)
    reader = Bus(config, "transcript")
    got = Collector()
    reader.subscribe(reader.topics.transcript_final(), Transcript, got)
    reader.start()
    assert reader.wait_connected(10)
    mic = Bus(config, "microphone")
    mic.hold_for_reader([mic.topics.transcript_final()], "transcript")
    try:
        for i in range(3):  # not connected yet: paho answers "not currently connected" and keeps them
            mic.publish(mic.topics.transcript_final(), typed_final(i))
        mic.start()
        assert mic.wait_connected(10)
        assert wait_for(lambda: len(got) == 3, timeout=10)
        assert [m.utterance_id for m in got.items] == ["u0", "u1", "u2"]
        mic.publish(mic.topics.transcript_final(), typed_final(3))  # and the gate goes on working
        assert wait_for(lambda: len(got) == 4, timeout=10)
    finally:
        mic.stop()
        reader.stop()


def test_queued_for_a_subscriber_that_was_away(mosquitto: MosquittoBroker, make_config: Callable[..., Config]) -> None:
    """Persistent session: QoS 1 events published while the subscriber is gone reach it later."""
    config = make_config(mosquitto.url)
    publisher = Bus(config, "publisher")
    first = Bus(config, "listener")
    first.subscribe(first.topics.vad(), VadEvent, Collector())
    for bus in (publisher, first):
        bus.start()
        assert bus.wait_connected(10)
    first.client.disconnect()  # away without unsubscribing
    first.client.loop_stop()
    # another listener that stays: once it has them, the broker has queued them for the one away
    observer, seen = collect(config, publisher.topics.vad(), VadEvent)
    for i in range(5):
        publisher.publish(publisher.topics.vad(), VadEvent(source="mic", event="speech_start", utterance_id=f"v{i}", at=now_ms()))
    again = Bus(config, "listener")
    got = Collector()
    try:
        assert wait_for(lambda: len(seen) == 5, timeout=10), "the broker never had them"
        again.subscribe(again.topics.vad(), VadEvent, got)
        again.start()
        assert wait_for(lambda: len(got) == 5, timeout=10)
        assert [m.utterance_id for m in got.items] == [f"v{i}" for i in range(5)]
    finally:
        publisher.stop()
        observer.stop()
        again.stop()


WORKER_SCRIPT = """
import sys
from workers.runtime.config import Config
from workers.runtime.logs import setup_logging
from workers.runtime.worker import Worker, run_worker
setup_logging("INFO")
config = Config(file_data={}, environ={}, overrides={"environment_uuid": sys.argv[1], "broker.url": sys.argv[2], "broker.mode": "external"})
class Idle(Worker):
    name = "idle"
sys.exit(run_worker(Idle(config)))
"""


def _start_worker_process(env_id: str, url: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WORKER_SCRIPT, env_id, url], stderr=subprocess.PIPE)


def _watch_status(config: Config) -> tuple[Bus, list[Status]]:
    return collect(config, Topics(config.core.environment_uuid).all_status(), Status)


def test_killed_worker_is_seen_offline(mosquitto: MosquittoBroker, make_config: Callable[..., Config]) -> None:
    config = make_config(mosquitto.url)
    observer, seen = _watch_status(config)
    process = _start_worker_process(config.core.environment_uuid, mosquitto.url)
    try:
        assert wait_for(lambda: any(s.worker == "idle" and s.state == "online" for s in seen), timeout=15)
        online = next(s for s in seen if s.worker == "idle" and s.state == "online")
        assert online.pid == process.pid and online.version and online.host and online.started_at > 0
        process.kill()
        process.wait(5)
        assert wait_for(lambda: [s.state for s in seen if s.worker == "idle"][-1] == "offline", timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
        observer.stop()


def test_a_refresh_made_before_an_error_is_never_published_after_it(mosquitto: MosquittoBroker,
                                                                   make_config: Callable[..., Config]) -> None:
    """The watchdog refreshes the status while the worker's thread reports an error (a source
    unplugged): whatever the threads' timing, the retained status ends as the error, never as the
    refresh's stale ``online`` published a moment after it."""
    config = make_config(mosquitto.url)
    errored = threading.Event()
    reporter: list[threading.Thread] = []

    def health() -> dict[str, object]:
        if reporter and not reporter[0].is_alive() and not errored.is_set():  # inside the refresh: the error comes now
            reporter[0].start()
            errored.wait(0.5)  # (the status lock held, the error waits for this refresh instead)
        return {}

    bus = Bus(config, "microphone", health=health)
    observer, seen = _watch_status(config)
    bus.start()
    try:
        assert bus.wait_connected(10)

        def report() -> None:
            bus.set_status("error", "sound server source room_mic disappeared")
            errored.set()

        reporter.append(threading.Thread(target=report))
        bus.refresh_status()
        reporter[0].join(5)
        assert wait_for(lambda: [s.state for s in seen if s.worker == "microphone"][-2:] == ["online", "error"], 10), \
            [(s.state, s.detail) for s in seen if s.worker == "microphone"]
    finally:
        bus.stop()
        observer.stop()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_worker_stops_on_signal_within_deadline(sig: int, mosquitto: MosquittoBroker, make_config: Callable[..., Config]) -> None:
    config = make_config(mosquitto.url)
    observer, seen = _watch_status(config)
    process = _start_worker_process(config.core.environment_uuid, mosquitto.url)
    try:
        assert wait_for(lambda: any(s.worker == "idle" and s.state == "online" for s in seen), timeout=15)
        os.kill(process.pid, sig)
        assert process.wait(KILL_AFTER_S) == 0  # before run would kill it
        def last_idle() -> Status:
            return [s for s in seen if s.worker == "idle"][-1]

        assert wait_for(lambda: last_idle().state == "offline" and last_idle().detail == "stopped", timeout=5)
        stderr = process.stderr.read().decode() if process.stderr else ""
        assert "Traceback" not in stderr
    finally:
        if process.poll() is None:
            process.kill()
        observer.stop()


def test_bad_payloads_are_logged_and_dropped(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], caplog: pytest.LogCaptureFixture
) -> None:
    config = make_config(mosquitto.url, **{"broker.max_payload_bytes": 2048})
    publisher, subscriber = _pair(config)
    got = Collector()
    topic = subscriber.topics.transcript_final()
    subscriber.subscribe(topic, Transcript, got)
    for bus in (publisher, subscriber):
        bus.start()
        assert bus.wait_connected(10)
    caplog.set_level(logging.WARNING, logger="workers.runtime.bus")
    try:
        publisher.publish_raw(topic, b"{not json")
        publisher.publish_raw(topic, b'{"v": 1, "type": "transcript", "source": "x"}')
        publisher.publish_raw(topic, b'{"v": 2, "type": "transcript"}')
        oversized = typed_final(0).model_copy(update={"text": "egg " * 1000})
        publisher.publish(topic, oversized)
        publisher.publish(topic, typed_final(7))  # last: MQTT keeps one publisher's order on a topic
        assert wait_for(lambda: len(got) == 1, timeout=10)  # so every payload before it was handled
        assert [m.utterance_id for m in got.items] == ["u7"]
        assert subscriber.stats.dropped_invalid == 3 and subscriber.stats.dropped_oversized == 1
        drops = [r.getMessage() for r in caplog.records if "dropped a payload" in r.getMessage()]
        assert any("not JSON" in d for d in drops)
        assert any("invalid Transcript" in d and "utterance_id" in d for d in drops)
        assert any("oversized" in d for d in drops)
        assert all(topic.name in d for d in drops)
        assert not any(r.exc_info for r in caplog.records)
    finally:
        publisher.stop()
        subscriber.stop()


def test_handler_error_does_not_kill_the_subscriber(mosquitto: MosquittoBroker, make_config: Callable[..., Config]) -> None:
    config = make_config(mosquitto.url)
    publisher, subscriber = _pair(config)
    got = Collector()

    def flaky(topic: str, message: Transcript) -> None:
        if message.utterance_id == "u1":
            raise RuntimeError("handler bug")
        got(topic, message)

    subscriber.subscribe(subscriber.topics.transcript_final(), Transcript, flaky)
    for bus in (publisher, subscriber):
        bus.start()
        assert bus.wait_connected(10)
    try:
        for i in range(3):
            publisher.publish(publisher.topics.transcript_final(), typed_final(i))
        assert wait_for(lambda: len(got) == 2, timeout=10)
        assert subscriber.stats.handler_errors == 1
    finally:
        publisher.stop()
        subscriber.stop()
