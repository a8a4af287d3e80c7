"""Fault injection, ``humaine-env run``: killed with SIGKILL, started on ports someone holds,
and fed well-formed but hostile replies to print."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from humaine_env.cli import commands
from humaine_env.supervisor import ShownReply, describe_reply
from tests.support.helpers import CLI, MosquittoBroker, free_port, suite_config, wait_for
from tests.support.paths import ROOT
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.data_dir import fallback_dir
from workers.runtime.messages import AgentMessageSeen
from workers.runtime.worker import EXIT_UNAVAILABLE

ONLY = "orchestrator,avatar,transcript"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
"""This checkout's code, whatever the working directory of the command."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead: it only waits for its (new) parent to read its status
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _start_run(config: Path, cwd: Path) -> tuple[subprocess.Popen[str], dict[str, tuple[int, str]]]:
    """``run`` started as from a script (no TTY); returns it and its table: name -> (pid, state)."""
    process = subprocess.Popen(
        [*CLI, "run", "--config", str(config), "--only", ONLY],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, cwd=cwd, env=ENV,
    )
    assert process.stdout is not None
    table: dict[str, tuple[int, str]] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(table) < 3:
        line = process.stdout.readline()
        if not line:
            break
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0] in commands() and parts[1].isdigit():
            table[parts[0]] = (int(parts[1]), parts[2].strip())
    return process, table


def test_children_end_when_run_is_killed_with_sigkill(tmp_path: Path) -> None:
    """``kill -9`` of ``run`` leaves no orphan holding a port or a client id: a new ``run`` on
    the same configuration starts cleanly, and its table shows only its own children."""
    config = suite_config(tmp_path, free_port())
    first, table = _start_run(config, tmp_path)
    pids = [pid for pid, _ in table.values()]
    try:
        assert set(table) == set(ONLY.split(",")), table
        assert all(state.startswith("online") for _, state in table.values()), table
        first.kill()  # SIGKILL: no handler runs in run
        first.wait(5)
        assert wait_for(lambda: not any(_alive(p) for p in pids), timeout=10), \
            f"orphans: {[p for p in pids if _alive(p)]}"
        second, table2 = _start_run(config, tmp_path)
        try:
            assert all(state.startswith("online") for _, state in table2.values()), table2
            assert not set(pid for pid, _ in table2.values()) & set(pids)
        finally:
            second.send_signal(signal.SIGINT)
            out, _ = second.communicate(timeout=20)
            assert second.returncode == 0, out
            assert "Traceback" not in out
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if first.poll() is None:
            first.kill()


def test_run_refuses_a_port_it_must_own(tmp_path: Path) -> None:
    config = suite_config(tmp_path, free_port())
    avatar_port = int(next(ln.split("=")[1] for ln in config.read_text().splitlines() if ln.startswith("port") and
                           config.read_text().index(ln) > config.read_text().index("[avatar]")))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", avatar_port))
        holder.listen()
        result = subprocess.run([*CLI, "run", "--config", str(config), "--only", ONLY], capture_output=True,
                                text=True, timeout=30, cwd=tmp_path, stdin=subprocess.DEVNULL, env=ENV)
    assert result.returncode == EXIT_UNAVAILABLE
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"port {avatar_port}" in lines[0] and "avatar" in lines[0], result.stderr
    assert "Traceback" not in result.stdout + result.stderr


HOSTILE_REPLIES: list[dict[str, object]] = [
    {"speaker": "Celia", "text": "hi", "bid": {"type": "SellOffer", "quantity": "lots"}},
    {"speaker": "Celia", "text": "hi", "bid": {"type": "SellOffer", "quantity": {"eggs": "many"}}},
    {"speaker": "Celia", "text": "hi", "bid": {"type": "SellOffer", "price": {"value": "cheap"}}},
    {"speaker": ["Celia"], "text": {"a": 1}},
    {"speaker": "Celia", "text": "hi", "gesture": {"nod": True}},
    {"speaker": "Celia", "text": "x" * 100_000},
]


def test_hostile_replies_are_dropped_in_rate_limited_lines(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], caplog: pytest.LogCaptureFixture
) -> None:
    """Schema-valid envelopes with hostile bodies: the supervisor's printer never sees one it
    cannot print; 1,000 of them give a handful of log lines and no traceback."""
    config = make_config(mosquitto.url)
    shown: list[str] = []
    publisher = Bus(config, "avatar")
    printer = Bus(config, "printer", persistent=False)
    printer.subscribe(printer.topics.agent_message(), ShownReply, lambda _t, m: shown.append(describe_reply(m) or ""))
    caplog.set_level(logging.INFO)
    for bus in (publisher, printer):
        bus.start()
        assert bus.wait_connected(10)
    try:
        time.sleep(0.2)
        sent = 0
        for _ in range(1000 // len(HOSTILE_REPLIES) + 1):
            for body in HOSTILE_REPLIES:
                publisher.publish(publisher.topics.agent_message(), AgentMessageSeen(source="avatar", message=body))
                sent += 1
        publisher.publish(publisher.topics.agent_message(), AgentMessageSeen(source="avatar", message={
            "speaker": "Watson", "text": "12 eggs?", "bid": {"type": "SellOffer", "quantity": {"eggs": 12},
                                                             "price": {"value": 9.5, "unit": "USD"}}}))
        assert wait_for(lambda: any("Watson" in line for line in shown), timeout=20)
        assert printer.alive
        long_lines = [line for line in shown if len(line) > 1000]
        assert not long_lines
        assert 'Watson → buyer: "12 eggs?"  [SellOffer: 12 eggs for $9.50]' in shown
        problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert not any(r.exc_info for r in caplog.records)
        assert len(problems) <= 3, [r.getMessage()[:100] for r in problems]
        assert printer.stats.dropped_invalid >= sent - sent // len(HOSTILE_REPLIES) - 5
    finally:
        publisher.stop()
        printer.stop()


def _run(config: Path, cwd: Path, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, "run", "--config", str(config), *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, cwd=cwd, env=ENV)


def test_a_read_only_data_dir_without_a_broker_is_one_line_and_the_room_runs(tmp_path: Path) -> None:
    """No broker answers, and ``data_dir`` is a read-only disk, so neither the broker ``run``
    starts nor the room can keep anything there: one line names the temporary folder the room
    uses instead, the broker starts with its store there, and the room stops cleanly (it used
    to be status 3: a room that cannot start)."""
    data = tmp_path / "data"
    data.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(data)], capture_output=True)
    if mounted.returncode != 0:  # not root: a file where the folder should be fails alike (ENOTDIR)
        data.rmdir()
        data.write_text("not a directory")
    try:
        port = free_port()
        config = suite_config(tmp_path, port)
        suite = subprocess.Popen([*CLI, "run", "--config", str(config), "--only", "transcript", "--set",
                                  'eo.url="http://127.0.0.1:9"'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 cwd=tmp_path, stdin=subprocess.DEVNULL, env=ENV, start_new_session=True)
        output: list[str] = []
        threading.Thread(target=lambda: output.extend(iter(suite.stdout.readline, "")), daemon=True).start()  # type: ignore[union-attr]
        try:
            assert wait_for(lambda: any("transcript" in ln and "online" in ln for ln in output), 60), "".join(output)
            os.killpg(suite.pid, signal.SIGINT)
            assert suite.wait(30) == 0, "".join(output)
        finally:
            if suite.poll() is None:
                os.killpg(suite.pid, signal.SIGKILL)
                suite.wait(10)
    finally:
        if mounted.returncode == 0:
            subprocess.run(["umount", "-l", str(data)], capture_output=True)
        shutil.rmtree(fallback_dir(f"suite{port}"), ignore_errors=True)
    said = [ln for ln in output if "cannot be written" in ln]
    assert len(said) == 1 and str(fallback_dir(f"suite{port}")) in said[0], "".join(output)
    assert f"mqtt://127.0.0.1:{port}" in "".join(output)  # the broker run started, its store in that folder
    assert "Traceback" not in "".join(output)


def test_a_log_file_on_a_full_disk_is_said_once(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    """``[run] log_file`` on a full disk printed a "--- Logging error ---" traceback for every
    line (47 in 20 s); now one line says it, and the suite runs on."""
    config = suite_config(tmp_path, mosquitto.port)
    process = _run(config, tmp_path, "--only", "transcript", "--verbose", "--set", 'eo.url="http://127.0.0.1:9"',
                   "--set", 'run.log_file="/dev/full"')
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the table: every worker has said how it is
            line = process.stdout.readline()
            if not line or line.startswith("transcript "):
                break
        time.sleep(3.0)  # a few seconds of INFO lines, each one lost
        assert process.poll() is None
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "Logging error" not in err and "Traceback" not in err, err
    said = [ln for ln in err.splitlines() if "log file /dev/full" in ln]
    assert len(said) == 1 and "No space left on device" in said[0], err


def test_a_second_run_of_the_same_environment_exits_with_one_line(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    """Every worker of a second ``run`` refused as a duplicate, and ``run`` stayed up with none;
    now it says so in one line and exits with status 3."""
    config = suite_config(tmp_path, mosquitto.port)
    flags = ("--only", "transcript", "--set", 'eo.url="http://127.0.0.1:9"')
    first, table = _start_run_only(config, tmp_path, *flags)
    try:
        assert table.get("transcript", (0, ""))[1].startswith("online"), table
        second = _run(config, tmp_path, *flags)
        try:
            _, err = second.communicate(timeout=30)
        finally:
            if second.poll() is None:
                second.kill()
        assert second.returncode == EXIT_UNAVAILABLE, err
        summary = [ln for ln in err.splitlines() if "no worker is left running" in ln]
        assert len(summary) == 1 and "transcript: unavailable here" in summary[0], err
        assert "another transcript is running" in err and "Traceback" not in err
        assert first.poll() is None, "the first run was disturbed"
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=20)


def _start_run_only(config: Path, cwd: Path, *flags: str) -> tuple[subprocess.Popen[str], dict[str, tuple[int, str]]]:
    """``run`` with ``flags``; returns it and its table once printed: name -> (pid, state)."""
    process = subprocess.Popen([*CLI, "run", "--config", str(config), *flags], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True, cwd=cwd, env=ENV)
    assert process.stdout is not None
    table: dict[str, tuple[int, str]] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "transcript" not in table:
        line = process.stdout.readline()
        if not line:
            break
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0] in commands() and parts[1].isdigit():
            table[parts[0]] = (int(parts[1]), parts[2].strip())
    return process, table
