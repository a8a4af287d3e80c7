"""Benchmark: final transcript published on MQTT -> ``/relayMessage`` body received by the EO.

The Rich Transcript worker runs as its own process (``humaine-env transcript``) against a
private mosquitto (or ``--broker-url``); this process publishes final transcripts at a steady
rate and runs a recording HTTP server on 127.0.0.1 standing in for the EO. Latency is the
time from just before ``publish`` to the arrival of the whole POST body (same machine clock).

Each transcript is published as a live microphone would: it ends just before it is published,
so the merge hold is part of the figure. Its text is a complete sentence ("Celia, I want 3
eggs for $2"), which the merger releases with its final (``[transcript] merge_hold =
"unfinished"``): the figure is how long a complete utterance spends in the transcript worker
and on its way to the EO (target p95 <= 50 ms for the worker's part). ``--unfinished`` sends
sentences that end in "and" instead: those wait for the merge gap, and the figure shows it.

Prints ONE JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/transcript.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from bench.stats import percentile  # noqa: E402
from humaine_platform import endpoints as ep  # noqa: E402
from standins.recorder import RecordingServer, free_port  # noqa: E402
from workers.runtime.broker import BrokerAddress, broker_answers  # noqa: E402
from workers.runtime.bus import Bus  # noqa: E402
from workers.runtime.config import Config  # noqa: E402
from workers.runtime.messages import OutgoingMessage, RoundState, Transcript, now_ms  # noqa: E402

MERGE_GAP_S = 1.2
DRAIN_S = 6.0
"""How long to wait for the last bodies after publishing stops (> the TTL)."""


def _start_mosquitto(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not Path(binary).exists():
        raise SystemExit("bench/transcript.py: mosquitto not found; install it (apt) or pass --broker-url")
    port = free_port()
    conf = workdir / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nlog_dest none\n")
    process = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not broker_answers(BrokerAddress("127.0.0.1", port, False), 0.2):
        if time.monotonic() > deadline:
            process.kill()
            raise SystemExit("bench/transcript.py: mosquitto did not start")
        time.sleep(0.05)
    return process, f"mqtt://127.0.0.1:{port}"


def run(seconds: float, rate: float, broker_url: str | None, unfinished: bool = False) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-transcript-"))
    broker_process = None
    worker = None
    if broker_url is None:
        broker_process, broker_url = _start_mosquitto(workdir)
    env_id = f"bench{os.getpid()}"
    config = Config(
        file_data={}, environ={},
        overrides={"environment_uuid": env_id, "broker.url": broker_url, "broker.mode": "external"},
    )
    eo = RecordingServer().start()
    room = Bus(config, "bench-room", persistent=False)
    outcomes: dict[str, int] = {}
    room.subscribe(
        room.topics.outgoing_message(),
        OutgoingMessage,
        lambda _t, m: outcomes.__setitem__(m.outcome, outcomes.get(m.outcome, 0) + 1),
    )
    try:
        room.start()
        if not room.wait_connected(10):
            raise SystemExit(f"bench/transcript.py: no MQTT broker at {broker_url}")
        room.publish(room.topics.round_state(), RoundState(source="bench", round_id="bench", phase="round"))
        worker = subprocess.Popen(
            [
                sys.executable, "-m", "humaine_env", "transcript", "--log-level", "WARNING",
                "--set", f"environment_uuid={env_id}", "--set", f"broker.url={broker_url}",
                "--set", "broker.mode=external", "--eo-url", eo.url,
                "--merge-gap", str(MERGE_GAP_S), "--session-dir", str(workdir / "sessions"),
            ],
            cwd=ROOT,
        )
        # ready when the worker's status says online and one probe utterance went through
        probe_deadline = time.monotonic() + 20
        while not eo.bodies(ep.RELAY_MESSAGE):
            if worker.poll() is not None:
                raise SystemExit("bench/transcript.py: the transcript worker exited at start")
            if time.monotonic() > probe_deadline:
                raise SystemExit("bench/transcript.py: the transcript worker never relayed the probe")
            t = now_ms()
            room.publish(room.topics.transcript_final(), _final("probe", t, seq=-1))
            time.sleep(0.5)
        time.sleep(0.5)
        eo.received.clear()
        outcomes.clear()

        sent_ns: dict[str, int] = {}
        interval = 1.0 / rate
        count = max(1, int(seconds * rate))
        start = time.monotonic()
        for seq in range(count):
            target = start + seq * interval
            pause = target - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            message = _final(_sentence(seq, unfinished), now_ms(), seq)
            sent_ns[message.utterance_id] = time.time_ns()
            room.publish(room.topics.transcript_final(), message)
        publish_s = time.monotonic() - start
        eo.wait_for(count, ep.RELAY_MESSAGE, timeout=DRAIN_S)
        time.sleep(0.3)

        latencies: list[float] = []
        seen: dict[str, int] = {}
        for record in list(eo.received):
            if record.path != ep.RELAY_MESSAGE or not isinstance(record.body, dict):
                continue
            for uid in record.body.get("utteranceIds", []):
                if uid in sent_ns:
                    seen[uid] = seen.get(uid, 0) + 1
                    if seen[uid] == 1:
                        latencies.append((record.wall_ns - sent_ns[uid]) / 1e6)
        received = len(seen)
        return {
            "bench": "transcript",
            "what": "final transcript published on MQTT -> /relayMessage body received (loopback)",
            "seconds": round(publish_s, 2),
            "rate_per_s": rate,
            "published": count,
            "received": received,
            "lost": count - received,
            "duplicates": sum(n - 1 for n in seen.values()),
            "p50_ms": round(statistics.median(latencies), 2) if latencies else None,
            "p95_ms": percentile(latencies, 95, 2),
            "p99_ms": percentile(latencies, 99, 2),
            "max_ms": round(max(latencies), 2) if latencies else None,
            "outcomes": outcomes,
            "merge_gap_s": MERGE_GAP_S,
            "texts": "unfinished (end in 'and')" if unfinished else "complete sentences",
            "merge_hold_included": True,
            "broker": broker_url,
        }
    finally:
        if worker is not None and worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(10)
            except subprocess.TimeoutExpired:
                worker.kill()
        room.stop()
        eo.stop()
        if broker_process is not None:
            broker_process.terminate()
            broker_process.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


def _sentence(seq: int, unfinished: bool) -> str:
    avatar = ("Celia", "Watson")[seq % 2]
    return f"{avatar}, I want {seq % 9 + 1} eggs" + (" and" if unfinished else f" for ${seq % 5 + 1}")


def _final(text: str, t: int, seq: int) -> Transcript:
    # as a live microphone publishes it: the speech ended a moment ago
    end = t - 20
    return Transcript(
        source="mic", final=True, utterance_id=f"bench-{seq}", text=text, confidence=0.9,
        start=end - 800, end=end, engine="bench",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to publish (default 60)")
    parser.add_argument("--rate", type=float, default=5.0, help="utterances per second (default 5)")
    parser.add_argument("--broker-url", default=None, help="use this broker instead of a private mosquitto")
    parser.add_argument("--unfinished", action="store_true", help="sentences that read as cut off (held for the gap)")
    args = parser.parse_args()
    print(json.dumps(run(args.seconds, args.rate, args.broker_url, args.unfinished)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
