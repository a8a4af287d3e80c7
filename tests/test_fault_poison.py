"""Fault injection, poison payloads: hostile bytes on subscribed topics of a real mosquitto.

Each payload must cost exactly that one message: the network thread lives on, later messages
arrive, a persistent session does not deliver the poison again, and the log gets one line per
kind of problem, never a traceback."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable

import pytest

from tests.helpers import MosquittoBroker, wait_for
from tests.test_bus import Collector, _transcript
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import Transcript
from workers.runtime.worker import EXIT_BUS_DEAD

DEEP = b"[" * 200_000
POISON: dict[str, bytes] = {
    "200 KB of [[[[": DEEP,
    "deep but short": b'{"v": 1, "type": "transcript", "x": ' + b"[" * 60 + b"]" * 60 + b"}",
    "NaN": _transcript(0).model_dump_json().replace('"confidence":1.0', '"confidence":NaN').encode(),
    "Infinity by overflow": _transcript(0).model_dump_json().replace('"confidence":1.0', '"confidence":1e999').encode(),
    "10,000-digit integer": _transcript(0).model_dump_json().replace('"confidence":1.0', '"confidence":' + "9" * 10_000).encode(),
    "invalid UTF-8": b'{"v": 1, "text": "\xff\xfe"}',
    "lone surrogate": _transcript(0).model_dump_json().replace('"I want', '"\\ud800 I want').encode(),
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
    try:
        time.sleep(0.2)
        tried = 0
        for rounds in range(3):  # repeats must not add log lines
            for payload in POISON.values():
                publisher.publish_raw(topic, payload)
                tried += 1
            for kind in raised:
                publisher.publish(topic, _transcript(0).model_copy(update={"text": kind, "id": f"{kind}{rounds}"}))
                tried += 1
            publisher.publish(topic, _transcript(rounds + 1))
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
        publisher.publish(topic, _transcript(1))
        time.sleep(0.3)
        got = Collector()
        second = _started(config, "subscriber", got=got)
        assert wait_for(lambda: len(got) == 1, timeout=10)
        assert second.stats.dropped_invalid == 1 and second.alive
        second.stop()
        again = Collector()
        third = _started(config, "subscriber", got=again)
        publisher.publish(topic, _transcript(2))
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
        publisher.publish(publisher.topics.transcript_final(), _transcript(1))
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
