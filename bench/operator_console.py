"""Operator console benchmark: prints ONE JSON line.

The Avatar Controller runs as its own process (``humaine-env avatar``, WAV speaker) on a real
mosquitto; one console feed (its WebSocket) is read here.

* Head pose, bus -> console: a ``HeadPose`` published at the camera's 15 Hz until its event
  reaches the console feed, p50/p95 ms. Target p95 <= 100 ms (the plot keeps up with the head).
* A worker killed (``kill -9``; a process holding one bus connection) until the console's feed
  says it is offline (the broker's last will), p50/max ms. Target max <= 2000 ms.
* CPU of the Avatar Controller's process during the 15 Hz stream, with the console open and
  with none, % of one core.
* The snapshot a newly opened console gets once every kept list is full (bounded memory), bytes.

Usage: ``.venv/bin/python bench/operator_console.py [--seconds S] [--kills N]`` (needs mosquitto).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# run as `python bench/operator_console.py`: import the checkout's packages from its root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from websockets.sync.client import connect as ws_connect

from avatar.operator.routes import CONSOLE_FEED_PATH
from bench.stats import percentile
from tests.support.helpers import MosquittoBroker, free_port, wait_for
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import HeadPose, OutgoingMessage, now_ms

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "humaine_env"]
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
"""Processes started here run this checkout's code, whatever copy of the suite is installed."""
RATE_HZ = 15.0
VICTIM = """
import sys, time
from workers.runtime.bus import Bus
from workers.runtime.config import Config
bus = Bus(Config(file_data={{}}, environ={{}}, overrides={{"environment_uuid": "{env}", "broker.url": "{url}"}}), sys.argv[1])
bus.start()
bus.wait_connected(10)
print("up", flush=True)
time.sleep(600)
"""


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Console:
    """One console feed, read on a thread: every event with the time it arrived."""

    def __init__(self, url: str) -> None:
        self.ws = ws_connect(url, max_size=None)
        self.snapshot_bytes = len(self.ws.recv(timeout=10))
        self.events: list[tuple[float, dict[str, Any]]] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while True:
                text = self.ws.recv()
                self.events.append((time.time() * 1000, json.loads(text)))
        except Exception:
            return

    def close(self) -> None:
        self.ws.close()
        self._thread.join(5)


def stream_poses(bus: Bus, seconds: float) -> list[int]:
    """Publish head poses at 15 Hz; returns their ``frame_ts`` (ms, this machine's clock)."""
    sent = []
    next_at = time.monotonic()
    end = next_at + seconds
    i = 0
    while next_at < end:
        ts = now_ms()
        bus.publish(bus.topics.headpose(), HeadPose(source="camera", yaw=float(i % 40 - 20), pitch=0.0, roll=0.0,
                                                    confidence=0.9, frame_ts=ts))
        sent.append(ts)
        i += 1
        next_at += 1 / RATE_HZ
        time.sleep(max(0.0, next_at - time.monotonic()))
    return sent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each 15 Hz head-pose stream")
    parser.add_argument("--kills", type=int, default=5, help="workers killed")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        broker = MosquittoBroker(Path(tmp) / "mosquitto").start()
        env = "benchconsole"
        port = free_port()
        overrides = {"environment_uuid": env, "broker.url": broker.url, "broker.mode": "external"}
        avatar = subprocess.Popen(
            [*CLI, "avatar", "--port", str(port), "--speaker", f"wav-fast:{Path(tmp) / 'wav'}",
             *[arg for k, v in overrides.items() for arg in ("--set", f"{k}={v}")]],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp, env=CHILD_ENV,
        )
        bus = Bus(Config(file_data={}, environ={}, overrides=overrides), "bench-camera", persistent=False)
        bus.start()
        victims: list[subprocess.Popen[str]] = []
        try:
            if not bus.wait_connected(10) or not wait_for(lambda: _answers(port), timeout=60):
                raise RuntimeError("the Avatar Controller did not start")
            feed_url = f"ws://127.0.0.1:{port}{CONSOLE_FEED_PATH}"

            # CPU with no console open, then with one
            before = cpu_s(avatar.pid)
            stream_poses(bus, args.seconds)
            idle_cpu = 100 * (cpu_s(avatar.pid) - before) / args.seconds
            console = Console(feed_url)
            before = cpu_s(avatar.pid)
            sent = stream_poses(bus, args.seconds)
            open_cpu = 100 * (cpu_s(avatar.pid) - before) / args.seconds
            time.sleep(0.5)
            arrived = {e["frame_ts"]: at for at, e in console.events if e.get("type") == "headpose"}
            pose_ms = [arrived[ts] - ts for ts in sent if ts in arrived]

            # workers killed outright
            offline_ms: list[float] = []
            for k in range(args.kills):
                name = f"victim{k}"
                victim = subprocess.Popen([sys.executable, "-c", VICTIM.format(env=env, url=broker.url), name],
                                          stdout=subprocess.PIPE, text=True, cwd=tmp, env=CHILD_ENV)
                victims.append(victim)
                assert victim.stdout is not None and victim.stdout.readline().strip() == "up"
                _await_state(console, name, "online")
                killed = time.time() * 1000
                victim.send_signal(signal.SIGKILL)
                victim.wait(10)
                offline_ms.append(_await_state(console, name, "offline") - killed)
            console.close()

            # fill every kept list, then open a console (the messages are this bus client's own: the
            # console shows only what a client whose status names the publishing process said)
            for i in range(200):
                bus.publish(bus.topics.outgoing_message(), OutgoingMessage(
                    source=bus.worker_id, message={"text": "x" * 200, "utteranceIds": [str(i)]}, outcome="undelivered", reason="no round"))
            time.sleep(1.0)
            full = Console(feed_url)
            snapshot_bytes = full.snapshot_bytes
            full.close()
        finally:
            for victim in victims:
                if victim.poll() is None:
                    victim.kill()
            bus.stop()
            avatar.send_signal(signal.SIGTERM)
            avatar.wait(20)
            broker.stop()

    print(json.dumps({
        "bench": "operator_console",
        "headpose_ms_p50": round(statistics.median(pose_ms), 1),
        "headpose_ms_p95": percentile(pose_ms, 95, 1),
        "headpose_received": f"{len(pose_ms)}/{len(sent)}",
        "offline_ms_p50": round(statistics.median(offline_ms), 1),
        "offline_ms_max": round(max(offline_ms), 1),
        "avatar_cpu_pct_15hz_no_console": round(idle_cpu, 1),
        "avatar_cpu_pct_15hz_console_open": round(open_cpu, 1),
        "snapshot_bytes_full": snapshot_bytes,
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "targets": {"headpose_ms_p95": 100, "offline_ms_max": 2000},
    }))
    return 0


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _await_state(console: Console, worker: str, state: str) -> float:
    """When the console's feed said ``worker`` is in ``state`` (ms since the epoch)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for at, event in list(console.events):
            if event.get("type") == "status" and event.get("worker") == worker and event.get("state") == state:
                return at
        time.sleep(0.01)
    raise RuntimeError(f"the console never showed {worker} {state}")


if __name__ == "__main__":
    sys.exit(main())
