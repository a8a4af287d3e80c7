"""Fault injection, a duplicate suite: a second instance of a worker for the same environment
on the same broker (``run`` started twice, two laptops configured alike)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from humaine_platform import endpoints as ep
from standins.recorder import RecordingServer
from tests.support.helpers import CHILD_ENV, CLI, MosquittoBroker, wait_for
from tests.support.room import Collector, Room
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import Status, now_ms
from workers.runtime.worker import EXIT_UNAVAILABLE


@pytest.fixture
def eo() -> Iterator[RecordingServer]:
    server = RecordingServer().start()
    yield server
    server.stop()


def _config_file(tmp_path: Path, broker: MosquittoBroker, eo_url: str) -> tuple[Path, Config]:
    env = f"dup{os.getpid()}x{time.monotonic_ns() % 100000}"
    path = tmp_path / "humaine-env.toml"
    path.write_text(
        f'environment_uuid = "{env}"\ndata_dir = "{tmp_path / "data"}"\n'
        f'[broker]\nurl = "{broker.url}"\nmode = "external"\nreconnect_min_s = 0.2\nreconnect_max_s = 1.0\n'
        f'[eo]\nurl = "{eo_url}"\n'
    )
    config = Config(file_data={}, environ={}, overrides={"environment_uuid": env, "broker.url": broker.url,
                                                          "broker.mode": "external"})
    return path, config


def transcript(path: Path, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, "transcript", "--config", str(path), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=CHILD_ENV,
                            stdin=subprocess.DEVNULL)


def _online(statuses: Collector, pid: int) -> bool:
    return any(s.pid == pid and s.state == "online" for s in statuses.items)


def test_second_instance_refuses_and_takeover_leaves_one(
    mosquitto: MosquittoBroker, eo: RecordingServer, tmp_path: Path
) -> None:
    path, config = _config_file(tmp_path, mosquitto, eo.url)
    statuses = Collector()
    watcher = Bus(config, "watcher", persistent=False)
    watcher.subscribe(watcher.topics.status("transcript"), Status, statuses)
    watcher.start()
    room = Room(config)
    room.round("r1", "round")
    processes: list[subprocess.Popen[str]] = []
    try:
        first = transcript(path)
        processes.append(first)
        assert wait_for(lambda: _online(statuses, first.pid), 20), "the first instance never came online"

        second = transcript(path)
        processes.append(second)
        assert second.wait(20) == EXIT_UNAVAILABLE
        err = second.stderr.read() if second.stderr else ""
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and "another transcript is running" in lines[0] and f"pid {first.pid}" in lines[0], err
        assert first.poll() is None
        assert not any(s.pid == first.pid and s.state == "offline" for s in statuses.items), "the first was knocked off"

        t = now_ms()
        room.say("Celia one egg", t - 900, t - 100, source="typed")
        assert wait_for(lambda: len(eo.bodies(ep.RELAY_MESSAGE)) == 1, 10)

        third = transcript(path, "--set", "broker.takeover=true")
        processes.append(third)
        assert wait_for(lambda: _online(statuses, third.pid), 20), "the taking-over instance never came online"
        assert first.wait(15) == EXIT_UNAVAILABLE
        first_err = first.stderr.read() if first.stderr else ""
        assert "took over this client id" in first_err and "Traceback" not in first_err, first_err
        assert "lost the MQTT broker" not in first_err, "a takeover was reported as a broker loss"

        # settled: the retained status is the new instance's, and stays so (no knocking about)
        time.sleep(2.0)
        settled = len(statuses.items)
        time.sleep(3.0)
        assert len(statuses.items) - settled <= 1, [(s.pid, s.state) for s in statuses.items[settled:]]
        latest = Collector()
        late = Bus(config, "late-watcher", persistent=False)
        late.subscribe(late.topics.status("transcript"), Status, latest)
        late.start()
        assert wait_for(lambda: len(latest) >= 1, 10)
        assert (latest.items[-1].pid, latest.items[-1].state) == (third.pid, "online")
        late.stop()

        t = now_ms()
        room.say("Watson two eggs", t - 900, t - 100, source="typed")
        assert wait_for(lambda: len(eo.bodies(ep.RELAY_MESSAGE)) == 2, 10)
        time.sleep(1.0)
        texts = [b["text"] for b in eo.bodies(ep.RELAY_MESSAGE)]
        assert texts == ["Celia one egg", "Watson two eggs"], texts  # none lost, none twice

        third.send_signal(signal.SIGTERM)
        assert third.wait(10) == 0
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        room.close()
        watcher.stop()
