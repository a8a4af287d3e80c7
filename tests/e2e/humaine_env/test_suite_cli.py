"""The broker choice, the CLI and ``humaine-env run`` as a user starts them."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib
from pathlib import Path

import pytest

from avatar.competition.settings import RoundsSettings
from humaine_env.cli import command_named, commands
from humaine_env.supervisor import (
    RunSettings,
    choose_workers,
    eo_configured,
    first_round_by_itself,
    room_overrides,
    stand_in_overrides,
    stand_ins_line,
    stop_stages,
)
from humaine_platform import endpoints as ep
from standins.eo.settings import StandinSettings
from tests.support import loopback
from tests.support.helpers import CLI, MosquittoBroker, free_port, suite_config, wait_for
from tests.support.paths import ROOT
from workers.runtime.broker import EmbeddedBroker, broker_answers, ensure_broker, parse_broker_url
from workers.runtime.bus import Bus
from workers.runtime.config import BrokerSettings, Config, parse_flag_value
from workers.runtime.messages import VadEvent, now_ms
from workers.runtime.worker import EXIT_UNAVAILABLE


def test_auto_mode_uses_a_running_broker(mosquitto: MosquittoBroker) -> None:
    address, embedded = ensure_broker(BrokerSettings(url=mosquitto.url, mode="auto"))
    assert embedded is None
    assert address.port == mosquitto.port


def test_auto_mode_starts_the_embedded_broker(make_config: Callable[..., Config], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="workers.runtime.broker")
    url = f"mqtt://127.0.0.1:{free_port()}"
    address, embedded = ensure_broker(BrokerSettings(url=url, mode="auto"))
    assert embedded is not None
    try:
        assert broker_answers(address)
        lines = [r.getMessage() for r in caplog.records if "embedded broker" in r.getMessage()]
        assert len(lines) == 1 and url in lines[0]
        config = make_config(address.url)
        bus = Bus(config, "probe")
        got: list[VadEvent] = []
        bus.subscribe(bus.topics.vad(), VadEvent, lambda _t, m: got.append(m))
        bus.start()
        assert bus.wait_connected(10)
        time.sleep(0.2)
        bus.publish(bus.topics.vad(), VadEvent(source="probe", event="speech_end", utterance_id="x", at=now_ms()))
        assert wait_for(lambda: len(got) == 1, timeout=5)
        bus.stop()
    finally:
        embedded.stop()


def test_embedded_broker_reports_its_internal_failures_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    """A failure inside amqtt's own tasks (seen: its connection handler iterating a dict another
    client changes) is one warning line, never asyncio's traceback."""
    broker = EmbeddedBroker(free_port())
    broker.start()
    try:
        loop = broker._loop
        assert loop is not None
        context = {"message": "Unhandled exception in client_connected_cb",
                   "exception": RuntimeError("dictionary changed size during iteration")}
        with caplog.at_level(logging.WARNING, logger="workers.runtime.broker"):
            loop.call_soon_threadsafe(loop.call_exception_handler, context)
            assert wait_for(lambda: any("embedded MQTT broker" in r.message for r in caplog.records), 5)
    finally:
        broker.stop()
    (record,) = [r for r in caplog.records if "embedded MQTT broker" in r.message]
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "client_connected_cb" in record.message and "dictionary changed size" in record.message


def test_external_mode_never_starts_a_broker() -> None:
    url = f"mqtt://127.0.0.1:{free_port()}"
    address, embedded = ensure_broker(BrokerSettings(url=url, mode="external"))
    assert embedded is None and not broker_answers(address)


def test_broker_url_forms() -> None:
    assert parse_broker_url("mqtt://example:1999").port == 1999
    assert parse_broker_url("example").port == 1883
    secure = parse_broker_url("mqtts://example")
    assert secure.tls and secure.port == 8883


@pytest.mark.parametrize("command", ["run", "camera", "microphone", "mic", "transcript", "avatar", "devices", "broker", "headpose",
                                     "label", "tournament"])
def test_every_command_has_help(command: str) -> None:
    """Every command (``mic``: the microphone worker's earlier name, still taken) explains itself."""
    result = subprocess.run([*CLI, command, "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "--config" in result.stdout
    assert commands()[command_named(command) or command].summary.split(":")[0] in result.stdout


@pytest.mark.parametrize(("argv", "said"), [
    (["run", "--withuot", "camera"], "unknown flag '--withuot'; did you mean '--without'?"),
    (["--set", "port=7041", "run"], "unknown top-level key 'port'; did you mean 'avatar.port'"),
    (["run", "--without", "microfone"], "unknown worker 'microfone'; did you mean 'microphone'?"),
])
def test_a_mistyped_flag_or_key_gets_the_closest_known_one_in_one_line(argv: list[str], said: str) -> None:
    result = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stderr
    assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--bind", "127.0.0.1"], "already answers on 127.0.0.1"),
        (["--bind", "192.0.2.1", "--set", 'broker.username="room"', "--set", 'broker.password="pw"'],
         "not an address of this machine"),
    ],
)
def test_broker_that_cannot_serve_says_why_in_one_line(mosquitto: MosquittoBroker, flags: list[str], said: str) -> None:
    """Port taken by a running broker, or an address this machine does not have (a
    documentation-only address: binding it fails here, nothing is sent to it)."""
    argv = [*CLI, "broker", "--port", str(mosquitto.port), *flags]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert result.returncode == EXIT_UNAVAILABLE, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("eo", "expected"),
    [
        ({}, ["orchestrator", "demo-agents", "avatar", "transcript", "record-rounds", "microphone", "camera"]),
        ({"eo.url": "http://eo-host:14010"}, ["avatar", "transcript", "record-rounds", "microphone", "camera"]),
        ({"eo.app_settings": "/etc/humaine/appSettings.json"}, ["avatar", "transcript", "record-rounds", "microphone", "camera"]),
        ({"eo.url": "http://eo-host:14010", "sessions.record_rounds": False}, ["avatar", "transcript", "microphone", "camera"]),
    ],
)
def test_run_starts_stand_ins_only_without_an_eo(eo: dict[str, str], expected: list[str]) -> None:
    """With an EO configured (by URL or appSettings.json) ``run`` starts only the room's
    workers against it; without one, the stand-in EO and the demo sellers come first."""
    config = Config(file_data={}, environ={}, overrides=eo)
    args = argparse.Namespace(only=None, without="")
    with_stand_ins = not eo_configured(config)
    assert choose_workers(args, config.section(RunSettings), with_stand_ins, config) == expected
    assert with_stand_ins == (not eo.get("eo.url") and not eo.get("eo.app_settings"))


ROOM_WITH_STAND_INS = ["orchestrator", "demo-agents", "avatar", "transcript", "record-rounds", "microphone", "camera"]


@pytest.mark.parametrize(
    ("overrides", "names", "by_itself"),
    [
        ({}, ROOM_WITH_STAND_INS, False),
        ({"run.first_round": "auto"}, ROOM_WITH_STAND_INS, True),
        ({"avatar.display": False}, ROOM_WITH_STAND_INS, True),
        ({}, ["orchestrator", "demo-agents", "transcript"], True),
    ],
    ids=["console", "auto", "no-pages", "no-avatar"],
)
def test_the_first_round_waits_for_the_operator_when_the_suite_has_a_console(
    overrides: dict[str, Any], names: list[str], by_itself: bool
) -> None:
    """With the stand-in EO and the operator console the operator starts the day's first round
    (after naming the buyer); ``[run] first_round = "auto"`` or no console: it starts by itself,
    started by the Avatar Controller, or by the stand-in in a suite without one. The start-up line
    says which."""
    config = Config(file_data={}, environ={}, overrides=overrides)
    assert first_round_by_itself(config, names) is by_itself
    extra = {**stand_in_overrides(config), **room_overrides(config, names)}
    wired = config.with_overrides({key: parse_flag_value(value) for key, value in extra.items()})
    no_controller = "avatar" not in names  # nothing but the stand-in itself can start its round then
    assert wired.section(RoundsSettings).auto_start is (by_itself and not no_controller)
    assert wired.section(StandinSettings).auto_round is no_controller  # else the room starts its rounds, the stand-in none
    line = stand_ins_line(wired)
    assert line.startswith("humaine-env: no EO configured: stand-in EO at http://127.0.0.1:")
    assert line.endswith("a round starts automatically" if by_itself
                         else "press Next round on the operator console to start the first round"), line


SIGNAL_TO_ANOTHER_THREAD = """
import signal, threading, time
from workers.runtime.worker import install_stop_signals, wait_for_stop
stop = threading.Event()
install_stop_signals(stop.set)
def poke():
    time.sleep(0.3)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)  # delivered to this thread, not the main one
threading.Thread(target=poke).start()
wait_for_stop(stop)
"""

SIGNAL_WHILE_THE_EVENT_LOCK_IS_HELD = """
import os, signal, sys, threading
from workers.runtime.worker import install_stop_signals
stop = threading.Event()
install_stop_signals(stop.set)
with stop._cond:  # the main thread holds the event's lock, as inside Event.wait or an earlier handler's Event.set
    os.kill(os.getpid(), signal.SIGTERM)
    sum(range(100_000))  # the Python handler runs between these bytecodes
sys.exit(0 if stop.wait(5) else 1)
"""


@pytest.mark.parametrize("script", [SIGNAL_TO_ANOTHER_THREAD, SIGNAL_WHILE_THE_EVENT_LOCK_IS_HELD], ids=["other-thread", "lock-held"])
def test_a_stop_signal_always_stops_a_worker(script: str) -> None:
    """Seen in ``run``: a worker that ignored Ctrl-C until killed (the signal went to one of its
    threads while the main thread waited without a timeout), and one that deadlocked in its
    own handler (SIGINT and SIGTERM together, the second handler waiting for the lock the first held)."""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20, cwd=ROOT)
    assert result.returncode == 0, result.stderr




def children_command_lines(pid: int) -> list[str]:
    """The command lines of ``pid``'s children, as ``ps`` shows them to any user."""
    lines = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return lines


def test_run_starts_the_suite_and_stops_on_one_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    config = suite_config(tmp_path, port)
    log_file = tmp_path / "logs" / "run.log"
    config.write_text(config.read_text() + f'[run]\nlog_file = "{log_file}"\n')
    avatar_url = f"http://127.0.0.1:{tomllib.loads(config.read_text())['avatar']['port']}"
    secret = f"tok-{os.getpid()}-secret"
    process = subprocess.Popen(
        [*CLI, "run", "--config", str(config), "--set", f'avatar.token="{secret}"'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, cwd=tmp_path,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("camera "):  # the last row of the start-up table
                break
        output = "".join(lines)
        assert f"MQTT broker mqtt://127.0.0.1:{port} (started here: mosquitto, persistent)" in output, output
        assert "stand-in EO at http://127.0.0.1:" in output
        assert "press Next round on the operator console to start the first round" in output, output
        assert "display page http://127.0.0.1:" in output
        table = {ln.split()[0]: ln.split(None, 2)[2].strip() for ln in lines if ln.split() and ln.split()[0] in commands()}
        assert set(table) == {"orchestrator", "demo-agents", "avatar", "transcript", "record-rounds", "microphone", "camera"}, output
        for worker in ("orchestrator", "demo-agents", "avatar", "transcript", "record-rounds"):
            assert table[worker].startswith("online"), output
        # no microphone here and no console to type at: said why, not restarted
        # (the table may catch it between its error status and its exit)
        assert table["microphone"] == "exited (3)" or table["microphone"].startswith(("online", "offline", "error: cannot run")), output
        assert table["camera"] in ("online", "exited (3)"), output  # no webcam here: said why, not restarted
        # the token given with --set reached the avatar, by environment, not on a command line
        children = children_command_lines(process.pid)
        assert any(" avatar" in line for line in children), children
        assert not [line for line in children if secret in line], children
        assert loopback.get(avatar_url + "/openapi.json", timeout=10).status_code == 401
        assert loopback.get(avatar_url + "/openapi.json", headers={"authorization": f"Bearer {secret}"}, timeout=10).status_code == 200
        # every service answers and the console is up: the day waits for the operator's Next round
        standin = loopback.get(f"http://127.0.0.1:{tomllib.loads(config.read_text())['standin']['port']}{ep.HEALTH}", timeout=10).json()
        assert standin["rounds"] == {}, standin
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        rest, _ = process.communicate(timeout=15)
        output += rest
        assert process.returncode == 0, output
        assert "humaine-env: stopped" in output
        assert "Traceback" not in output, output
        assert "killing it" not in output, output
        # a quiet console: no INFO lines (those are in the log file)
        assert not [ln for ln in output.splitlines() if " INFO " in ln[:20]], output
        logged = log_file.read_text(encoding="utf-8")
        for child in ("avatar", "transcript", "orchestrator", "demo-agents"):
            assert f"connected to MQTT broker mqtt://127.0.0.1:{port} as {child}" in logged, logged[-3000:]
        assert "workers.runtime.worker: received SIG" in logged  # the children's INFO lines reached the file
        # the children leave the terminal's Ctrl-C to run (its own is the one SIGINT line) and
        # stop when run says, in its order: each service after those that call it
        assert logged.count("received SIGINT") == 1, logged[-3000:]
        stopped = [line.split("stopping ", 1)[1].split(", ") for line in logged.splitlines() if "humaine_env.supervisor: stopping " in line]
        assert stopped == stop_stages(list(table)), logged[-3000:]
        assert stopped.index(["orchestrator"]) < stopped.index(["demo-agents"]) < stopped.index(["avatar"]), stopped
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
