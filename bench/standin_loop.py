"""Latency of the laptop loop's HTTP half: a buyer utterance posted to the stand-in EO until the
addressed demo seller's reply reaches the human-side service (a recording server).

Prints one JSON line: the relay call's latency and the reply latency (p50/p95/max, ms), with
the sellers' configured reply delay, which the reply latency includes.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

# The repository first: run as ``python bench/standin_loop.py``, this folder would come first and
# its avatar.py would stand in for the avatar package.
# run as `python bench/standin_loop.py`: import the checkout's packages from its root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.stats import HIGHER, percentile
from humaine_platform import endpoints as ep
from humaine_platform.models import confirm_accept_answer
from standins.demo_agents.runner import DemoAgents
from standins.demo_agents.settings import DemoAgentsSettings
from standins.eo import StandinServer, StandinSettings, default_round
from standins.recorder import Behavior, RecordingServer

ROUNDS = 20
REPLY_TIMEOUT_S = 10.0
"""How long one reply may take before the benchmark gives up (the seller answers in well under 1 s)."""


def _summary(values: list[float]) -> dict[str, float | None]:
    return {"p50": round(statistics.median(values), 1), "p95": percentile(values, 95, 1, HIGHER), "max": round(max(values), 1)}


def main() -> None:
    relay_ms: list[float] = []
    reply_ms: list[float] = []
    settings = DemoAgentsSettings(agents={"Celia": 0, "Watson": 0})
    with RecordingServer() as human_side, httpx.Client(timeout=10) as http:
        human_side.behaviors[ep.CONFIRM_ACCEPT] = Behavior(answer=confirm_accept_answer())
        eo = StandinServer(StandinSettings(port=0, r0_min_gap_s=0.0)).start()
        sellers = DemoAgents(settings, eo.url).start()
        try:
            http.post(eo.url + ep.INITIALIZE_ROUND, json=default_round(sellers.ports, human_side.port, (0, 600, 0)).body())
            http.post(eo.url + ep.START_ROUND, json={"roundId": "r1"})
            human_side.wait_for(1, ep.START_ROUND, timeout=5)
            for index in range(ROUNDS):
                replies = sum(1 for b in human_side.bodies(ep.RECEIVE_MESSAGE) if b["speaker"] == "Celia")
                body = {
                    "roundId": "r1", "speaker": "Human", "addressee": "Celia", "text": f"Celia, {index + 2} eggs please",
                    "role": "buyer", "environmentUUID": "bench", "timestamp": time.time_ns() // 1_000_000,
                }
                started = time.perf_counter()
                http.post(eo.url + ep.RELAY_MESSAGE, json=body).raise_for_status()
                relay_ms.append((time.perf_counter() - started) * 1000)
                while sum(1 for b in human_side.bodies(ep.RECEIVE_MESSAGE) if b["speaker"] == "Celia") <= replies:
                    if time.perf_counter() - started > REPLY_TIMEOUT_S:
                        raise SystemExit(f"standin_loop: no reply from Celia within {REPLY_TIMEOUT_S:.0f} s to utterance {index + 1}")
                    time.sleep(0.002)
                reply_ms.append((time.perf_counter() - started) * 1000)
        finally:
            sellers.stop()
            eo.stop()
    print(json.dumps({
        "bench": "standin_loop",
        "utterances": ROUNDS,
        "relay_ms": _summary(relay_ms),
        "reply_ms": _summary(reply_ms),
        "seller_reply_delay_ms": settings.reply_delay_s * 1000,
    }))


if __name__ == "__main__":
    main()
