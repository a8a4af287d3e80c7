"""Fault injection, the broker: ``kill -9`` of the broker ``run`` starts, a broker that keeps
no sessions, and the embedded broker's authentication."""

from __future__ import annotations

import getpass
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from avatar.harness import LocalAvatar
from humaine_platform import endpoints as ep
from standins.recorder import RecordingServer
from tests.support import loopback
from tests.support.avatar import captured
from tests.support.helpers import CLI, free_port, wait_for
from tests.support.paths import ROOT
from tests.support.room import Collector, typed_final
from transcript.session_log import read_session_log
from workers.runtime.broker import EmbeddedBroker, MosquittoServer, ensure_broker
from workers.runtime.bus import Bus
from workers.runtime.config import BrokerSettings, Config, ConfigError
from workers.runtime.messages import RoundState, Status, Transcript
from workers.runtime.worker import EXIT_CONFIG

SENT = 12


def _connected(config: Config, worker_id: str, got: Collector | None = None) -> Bus:
    bus = Bus(config, worker_id)
    if got is not None:
        bus.subscribe(bus.topics.transcript_final(), Transcript, got)
    bus.start()
    assert bus.wait_connected(10)
    return bus


def _publish_through(publisher: Bus, fault: Callable[[], None], tick: Callable[[float], None]) -> None:
    """SENT finals, 150 ms apart, with ``fault`` run after the fourth and ``tick(seconds since
    the fault)`` after each later one (on this thread, as run's supervision loop does)."""
    faulted = 0.0
    for i in range(SENT):
        publisher.publish(publisher.topics.transcript_final(), typed_final(i))
        if i == 3:
            fault()
            faulted = time.monotonic()
        elif faulted:
            tick(time.monotonic() - faulted)
        time.sleep(0.15)


@pytest.mark.skipif(shutil.which("mosquitto") is None and not Path("/usr/sbin/mosquitto").exists(),
                    reason="mosquitto is installed by scripts/setup.sh")
def test_broker_started_by_run_loses_nothing_to_kill_9(tmp_path: Path, make_config: Callable[..., Config]) -> None:
    port = free_port()
    address, started = ensure_broker(BrokerSettings(url=f"mqtt://127.0.0.1:{port}", mode="auto"), tmp_path)
    assert isinstance(started, MosquittoServer)
    config = make_config(address.url)
    got = Collector()
    subscriber = _connected(config, "transcript", got)
    publisher = _connected(config, "microphone")
    try:
        def crash() -> None:
            assert started.process is not None
            started.process.send_signal(signal.SIGKILL)
            started.process.wait(5)

        def supervise(down_for: float) -> None:
            if down_for > 0.6:
                started.check()  # what run's supervision loop does

        _publish_through(publisher, crash, supervise)
        assert wait_for(lambda: len(got) >= SENT, timeout=20), f"{len(got)} of {SENT} arrived"
        time.sleep(1.0)
        ids = [m.utterance_id for m in got.items]
        assert sorted(ids, key=lambda u: int(u[1:])) == [f"u{i}" for i in range(SENT)], ids  # none lost, none twice
        assert started.restarts == 1
        assert subscriber.stats.sessions_lost == 0
    finally:
        publisher.stop()
        subscriber.stop()
        started.stop()


def test_a_broker_without_persistence_is_named_in_one_line(
    tmp_path: Path, make_config: Callable[..., Config], caplog: pytest.LogCaptureFixture
) -> None:
    """mosquitto's defaults keep sessions in memory only: after its ``kill -9`` the subscriber's
    session is gone, and so are the messages queued in it. That cannot be undone from here; it is
    said, once, naming the broker."""
    port = free_port()
    conf = tmp_path / "plain.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nlog_dest none\nuser {getpass.getuser()}\n")
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"

    def start() -> subprocess.Popen[bytes]:
        process = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_for(lambda: _answers(port), 10)
        return process

    broker = start()
    config = make_config(f"mqtt://127.0.0.1:{port}")
    caplog.set_level(logging.INFO, logger="workers.runtime.bus")
    subscriber = _connected(config, "transcript", Collector())
    try:
        broker.kill()
        broker.wait(5)
        broker = start()

        def warnings() -> list[str]:
            return [r.getMessage() for r in caplog.records if "lost this client's session" in r.getMessage()]

        # the reconnect is counted a moment before the line is logged: wait for the line itself
        assert wait_for(lambda: subscriber.stats.connects >= 2 and warnings(), 15)
        time.sleep(0.5)  # no second line follows
        assert len(warnings()) == 1 and f"127.0.0.1:{port}" in warnings()[0], warnings()
        assert subscriber.stats.sessions_lost == 1
    finally:
        subscriber.stop()
        broker.kill()
        broker.wait(5)


def _answers(port: int) -> bool:
    from workers.runtime.broker import BrokerAddress, broker_answers

    return broker_answers(BrokerAddress("127.0.0.1", port, False), 0.2)


def test_embedded_broker_beyond_loopback_needs_a_password(make_config: Callable[..., Config]) -> None:
    with pytest.raises(ConfigError, match="username and password"):
        EmbeddedBroker(free_port(), host="0.0.0.0")
    broker = EmbeddedBroker(free_port(), host="0.0.0.0", username="room", password="s3cret")
    broker.start()
    url = f"mqtt://127.0.0.1:{broker.address.port}"
    try:
        good = Bus(make_config(url, **{"broker.username": "room", "broker.password": "s3cret"}), "good")
        good.start()
        assert good.wait_connected(10)
        for who, creds in {"wrong": {"broker.username": "room", "broker.password": "guess"},
                           "anonymous": {}}.items():
            bus = Bus(make_config(url, **creds), who)
            bus.start()
            assert not bus.wait_connected(2), f"{who} was let in"
            bus.stop()
        good.stop()
    finally:
        broker.stop()


def test_broker_command_beyond_loopback_without_a_password_is_one_line() -> None:
    argv = [*CLI, "broker", "--port", str(free_port()), "--bind", "0.0.0.0"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert result.returncode == EXIT_CONFIG, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "username and password" in lines[0], result.stderr


def test_absurd_round_states_are_refused_by_the_model(mosquitto: object, make_config: Callable[..., Config]) -> None:
    """Anyone on the bus can publish a retained round state; one that is absurd never reaches
    the workers that rely on it."""
    config = make_config(mosquitto.url)  # type: ignore[attr-defined]
    got = Collector()
    reader = Bus(config, "reader")
    reader.subscribe(reader.topics.round_state(), RoundState, got)
    reader.start()
    writer = _connected(config, "writer")
    assert reader.wait_connected(10)
    try:
        t = int(time.time() * 1000)
        absurd = [
            {"round_id": 10**30, "phase": "round"},
            {"round_id": "r1", "phase": "round", "durations": {"round": 1e308}},
            {"round_id": "r1", "phase": "round", "phase_started": t, "phase_deadline": t + 10**12},
            {"round_id": "r1" * 200, "phase": "round"},
            {"round_id": True, "phase": "round"},
        ]
        for n, fields in enumerate(absurd):
            envelope = {"v": 1, "type": "round_state", "source": "x", "ts": t, "id": f"absurd{n}", **fields}
            writer.publish_raw(writer.topics.round_state(), json.dumps(envelope).encode())
        writer.publish(writer.topics.round_state(), RoundState(source="x", round_id="r2", phase="round",
                                                               phase_started=t, phase_deadline=t + 300_000))
        assert wait_for(lambda: any(s.round_id == "r2" for s in got.items), 10)
        assert [s.round_id for s in got.items] == ["r2"]
        assert reader.stats.dropped_invalid == len(absurd)
    finally:
        writer.clear_retained(writer.topics.round_state())
        writer.stop()
        reader.stop()


def _plain_mosquitto(tmp_path: Path, port: int) -> Callable[[], subprocess.Popen[bytes]]:
    """A venue's mosquitto as often configured: no persistence (sessions and retained messages
    live in memory, gone with a restart)."""
    conf = tmp_path / f"plain-{port}.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nlog_dest none\nuser {getpass.getuser()}\n")
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"

    def start() -> subprocess.Popen[bytes]:
        process = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_for(lambda: _answers(port), 10)
        return process

    return start


def _command(name: str, config: Config, broker_url: str, eo_url: str, *flags: str) -> subprocess.Popen[str]:
    """One worker as its own process, on this test's environment and broker, quick to reconnect."""
    values = {"environment_uuid": f'"{config.core.environment_uuid}"', "broker.url": f'"{broker_url}"',
              "broker.mode": '"external"', "broker.reconnect_min_s": "0.2", "broker.reconnect_max_s": "1.0",
              "data_dir": f'"{config.core.data_dir}"', "eo.url": f'"{eo_url}"'}
    argv = [*CLI, name, *flags]
    for key, value in values.items():
        argv += ["--set", f"{key}={value}"]
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)


def test_what_is_said_while_a_broker_without_persistence_restarts_is_delivered(
    tmp_path: Path, make_config: Callable[..., Config]
) -> None:
    """The microphone is back before the transcript worker has subscribed again to a broker that
    forgot every subscription: its finals went to nobody (9 of 12 typed during the outage lost,
    without a record). Now it holds them until the transcript worker's status says it is back.
    Twice in a row: each restart is said in a warning line, by both."""
    port = free_port()
    start_broker = _plain_mosquitto(tmp_path, port)
    broker = start_broker()
    url = f"mqtt://127.0.0.1:{port}"
    eo = RecordingServer().start()
    config = make_config(url)
    watcher = Bus(config, "watcher", persistent=False)
    statuses = Collector()
    watcher.subscribe(watcher.topics.all_status(), Status, statuses)
    watcher.start()
    assert watcher.wait_connected(10)
    watcher.publish(watcher.topics.round_state(), RoundState(source="avatar", round_id="r1", phase="round"))
    transcript = _command("transcript", config, url, eo.url)
    mic = _command("mic", config, url, eo.url, "--typed")
    said: list[str] = []

    def say(text: str) -> None:
        assert mic.stdin is not None
        mic.stdin.write(text + "\n")
        mic.stdin.flush()
        said.append(text)

    try:
        for process in (transcript, mic):
            assert wait_for(lambda p=process: any(s.pid == p.pid and s.state == "online" for s in statuses.items), 30)
        say("Celia, one egg before")
        assert wait_for(lambda: len(eo.bodies(ep.RELAY_MESSAGE)) == 1, 10)
        for outage in range(2):
            broker.kill()
            broker.wait(5)
            for i in range(6):  # the buyer goes on talking while the broker is away
                say(f"Watson, {i + 2} eggs in outage {outage + 1}")
                time.sleep(0.1)
            broker = start_broker()
            assert wait_for(lambda: len(eo.bodies(ep.RELAY_MESSAGE)) >= len(said), 15), \
                f"outage {outage + 1}: {len(eo.bodies(ep.RELAY_MESSAGE))} of {len(said)} relayed"
        time.sleep(1.0)
        assert [b["text"] for b in eo.bodies(ep.RELAY_MESSAGE)] == said  # none lost, none twice, in order
        logs = list((config.core.data_dir / "sessions").glob("*.jsonl"))
        outcomes = [r["outcome"] for log in logs for r in read_session_log(log) if r["kind"] == "outcome"]
        assert outcomes == ["delivered"] * len(said), outcomes
        errors = {}
        for name, process in (("transcript", transcript), ("mic", mic)):
            process.send_signal(signal.SIGTERM)
            _, errors[name] = process.communicate(timeout=10)
            assert process.returncode == 0 and "Traceback" not in errors[name], errors[name]
            assert errors[name].count("lost this client's session") == 2, errors[name]  # a warning each time
    finally:
        for process in (transcript, mic):
            if process.poll() is None:
                process.kill()
        watcher.stop()
        broker.kill()
        broker.wait(5)
        eo.stop()


def test_the_round_state_is_retained_again_after_a_broker_without_persistence_restarts(
    tmp_path: Path, make_config: Callable[..., Config]
) -> None:
    """The retained round state goes with such a broker; its owner, the Avatar Controller,
    publishes it again when it finds the broker's state lost, so a worker (re)starting after the
    restart knows the round."""
    port = free_port()
    start_broker = _plain_mosquitto(tmp_path, port)
    broker = start_broker()
    config = make_config(f"mqtt://127.0.0.1:{port}", **{"avatar.port": 0, "avatar.speaker": f"wav:{tmp_path / 'wav'}"})
    avatar = LocalAvatar(config).start()
    try:
        with loopback.client(base_url=avatar.url, timeout=10) as http:
            for key in ("/sendRoundMetadata", "/startRound"):
                assert http.post(key, json=captured(key)).status_code == 200
        time.sleep(0.5)  # the broker has acknowledged it (else the publisher would simply send it again)
        broker.kill()
        broker.wait(5)
        broker = start_broker()
        got = Collector()
        reader = Bus(config, "restarted-worker", persistent=False)
        reader.subscribe(reader.topics.round_state(), RoundState, got)
        reader.start()
        try:
            assert wait_for(lambda: any(s.round_id == captured("/startRound")["roundId"] and s.phase == "round"
                                        for s in got.items), 10), got.items
        finally:
            reader.stop()
    finally:
        avatar.stop()
        broker.kill()
        broker.wait(5)
