"""Test helpers: free ports, a real mosquitto broker per test session, waiting for conditions."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sessions.generate import SessionSpec
from tests.support.paths import ROOT
from workers.runtime.broker import BrokerAddress, broker_answers
from workers.runtime.bus import Bus
from workers.runtime.config import DEFAULT_AVATARS, Config
from workers.runtime.messages import Envelope, RoundState, Status
from workers.runtime.topics import Topic, Topics

E = TypeVar("E", bound=Envelope)
T = TypeVar("T")

# Session tests: the sessions are espeak-ng negotiation speech, what pocketsphinx's domain model is tuned for
# (it is off by default: on other speech it invents deal terms).
PS_DOMAIN = {"microphone.engine": "pocketsphinx", "microphone.pocketsphinx_domain_lm": True}
QUICK_SESSION = SessionSpec("quick", "astronaut", "en-us", 11, fps=10.0, lines=3)
"""The short generated session the format, paced-replay and recording tests share (cached):
three utterances (gaze to Celia twice, then Watson by name while looking at Celia), about 17 s."""


CHILD_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
"""The environment of a process a test starts: this checkout's code first."""


TEST_PORTS = (20_000, 32_768)
"""Where the tests' servers listen: under Linux's ephemeral range (32768-60999 by default), from
which the kernel takes the ports of every outgoing connection and every ``bind(0)``. A port the
kernel handed out could be taken by any connection between a test choosing it and its child
process binding it; a port from here only by another test."""
_handed_out: set[int] = set()
_handed_lock = threading.Lock()


def _worker_share() -> range:
    """This pytest-xdist worker's own slice of :data:`TEST_PORTS` (all of it without xdist), so
    two workers never choose the same port."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    low, high = TEST_PORTS
    size = (high - low) // max(count, 1)
    return range(low + index * size, low + (index + 1) * size)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now, not handed out before in this process,
    from this worker's share of :data:`TEST_PORTS`."""
    share = _worker_share()
    with _handed_lock:
        for _ in range(len(share)):
            port = random.choice(share)
            if port in _handed_out:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free port left in {share}")


_NEVER_SET = threading.Event()
"""Waited on between two polls of :func:`wait_for` (never set: each wait lasts its interval)."""


def wait_for(condition: Callable[[], object], timeout: float = 10.0, interval: float = 0.02) -> bool:
    """Poll ``condition`` until it is truthy or ``timeout`` passes; returns the last verdict.
    Between polls it waits on an event, not ``time.sleep``, which the unit tier refuses."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        _NEVER_SET.wait(interval)
    return bool(condition())


@dataclass
class MosquittoBroker:
    """A real mosquitto on 127.0.0.1 with persistence, so a restart keeps queued sessions."""

    workdir: Path
    port: int = field(default_factory=free_port)
    host: str = "127.0.0.1"
    save_every_change: bool = False
    """Persist after every change, so even ``kill -9`` loses nothing (slow: QoS 1 throughput
    drops tenfold, so only tests that kill the broker ask for it)."""
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    @property
    def address(self) -> BrokerAddress:
        return BrokerAddress(self.host, self.port, False)

    def start(self) -> MosquittoBroker:
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.workdir.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / "mosquitto.conf"
        conf.write_text(
            f"listener {self.port} {self.host}\n"
            "allow_anonymous true\n"
            "persistence true\n"
            f"persistence_location {self.workdir}/\n"
            "autosave_interval 1\n"
            f"autosave_on_changes {'true' if self.save_every_change else 'false'}\n"
            "max_queued_messages 100000\n"
            "log_dest none\n"
            # As root mosquitto would drop to the 'mosquitto' user, which cannot write the
            # persistence file here; stay as the user running the tests.
            f"user {getpass.getuser()}\n"
        )
        self.process = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_for(lambda: broker_answers(self.address, 0.2), timeout=10):
            raise RuntimeError(f"mosquitto did not start on port {self.port}")
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(10)
        self.process = None

    def restart(self, sig: int = signal.SIGTERM, down_for: float = 0.0) -> None:
        self.stop(sig)
        time.sleep(down_for)
        self.start()


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    # a venue's display PC is clicked once to allow sound (speaker = "browser"); the headless one allows it at once
    "--autoplay-policy=no-user-gesture-required",
]
"""The headless Chromium the page tests drive (``browser`` fixture in conftest)."""
UI_TIMEOUT_MS = 15_000


# -- the whole suite as ``humaine-env run`` -------------------------------------------------------
CLI = [sys.executable, "-m", "humaine_env"]
AUTO_FIRST_ROUND = ("--set", 'run.first_round="auto"')
"""``run`` flags for a suite whose first round starts by itself (with the stand-in EO and the
operator console, it otherwise waits for the operator's Next round)."""


def suite_config(tmp_path: Path, broker_port: int, speaker: str = "", avatars: Sequence[str] = DEFAULT_AVATARS) -> Path:
    """A configuration with every port free, so the suite can run beside anything else; the
    avatars speak into fast WAV files under ``tmp_path`` unless ``speaker`` says otherwise."""
    path = tmp_path / "humaine-env.toml"
    speaker = speaker or f"wav-fast:{tmp_path / 'speech'}"
    sellers = ", ".join(f"{name} = {free_port()}" for name in avatars)
    path.write_text(
        f'environment_uuid = "suite{broker_port}"\n'
        f'data_dir = "{tmp_path / "data"}"\n'
        f"avatars = {json.dumps(list(avatars))}\n"
        f'[broker]\nurl = "mqtt://127.0.0.1:{broker_port}"\n'
        f"[standin]\nport = {free_port()}\n"
        f"[rounds]\nwarm_up_s = 0.5\n"
        f"[demo_agents]\nagents = {{ {sellers} }}\n"
        f'[avatar]\nport = {free_port()}\nspeaker = "{speaker}"\n'
    )
    return path


def start_run(config_path: Path, cwd: Path, *flags: str, without: str = "mic,camera") -> tuple[subprocess.Popen[str], list[str]]:
    """``humaine-env run`` without the microphone and the camera, in a session of its own (the
    test stops it with one SIGINT to the group), with ``flags`` (e.g. :data:`AUTO_FIRST_ROUND`);
    its terminal's lines are collected as they come."""
    suite = subprocess.Popen(
        [*CLI, "run", "--config", str(config_path), "--without", without, *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, cwd=cwd,
        start_new_session=True,
    )
    output: list[str] = []
    threading.Thread(target=lambda: output.extend(iter(suite.stdout.readline, "")), daemon=True).start()  # type: ignore[union-attr]
    return suite, output


def typed_microphone(config_path: Path, broker_port: int, cwd: Path) -> subprocess.Popen[str]:
    """A real microphone worker that reads typed lines from its standard input (the test writes
    the buyer's lines there), on the broker of a suite started by :func:`start_run`."""
    return subprocess.Popen(
        [*CLI, "mic", "--typed", "--config", str(config_path), "--set", f'broker.url="mqtt://127.0.0.1:{broker_port}"'],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True, cwd=cwd,
    )


def wait_for_line(output: list[str], text: str, timeout: float = 60.0) -> None:
    """Until a process whose lines are collected in ``output`` (:func:`start_run`) has printed one
    containing ``text``; fails with everything it printed so far."""
    assert wait_for(lambda: any(text in line for line in output), timeout), "".join(output)


def collect(config: Config, topic: Topic, model: type[E], name: str = "observer") -> tuple[Bus, list[E]]:
    """A bus client of the room, connected, that keeps every ``model`` it sees on ``topic``."""
    seen: list[E] = []
    bus = Bus(config, name, persistent=False)
    bus.subscribe(topic, model, lambda _t, m: seen.append(m))
    bus.start()
    assert bus.wait_connected(30)
    return bus, seen


def round_observer(config: Config) -> tuple[Bus, list[RoundState]]:
    """A bus client of the room that collects every round state it sees."""
    return collect(config, Topics(config.core.environment_uuid).round_state(), RoundState, "console-test")


def worker_pid(config: Config, worker: str) -> int:
    """The process of a worker of the room (one ``run`` started), from its retained status."""
    bus, statuses = collect(config, Topics(config.core.environment_uuid).status(worker), Status)
    try:
        assert wait_for(lambda: any(st.state == "online" for st in statuses), 15)
        return next(st.pid for st in reversed(statuses) if st.state == "online")
    finally:
        bus.stop()


def kill_worker(config: Config, worker: str, output: list[str]) -> None:
    """Kill a worker of ``run`` with SIGKILL and wait until ``run`` has it online again
    (``output``: run's terminal, shown if it does not come back)."""
    old_pid = worker_pid(config, worker)
    bus, statuses = collect(config, Topics(config.core.environment_uuid).status(worker), Status)
    try:
        os.kill(old_pid, signal.SIGKILL)
        assert wait_for(lambda: any(st.state == "online" and st.pid != old_pid for st in statuses), 60), "".join(output[-40:])
    finally:
        bus.stop()


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` on a thread of its own: the test process's main thread may hold a
    running event loop already (Playwright's sync API keeps one there once a browser started), and
    ``asyncio.run`` refuses to start another beside it."""
    result: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(asyncio.run(coroutine))
        except BaseException as exc:  # handed to the test's own thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="test-asyncio")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
