"""What the round check costs: relaying human utterances to the platform's real EO (Node.js, on
loopback) through :class:`EOClient`, with ``verify_round`` on (``GET /viewQueue/{roundId}``
first, the default) and off.

Prints one JSON line: per mode, the relay latency p50/p95/max (ms) over the utterances, and the
share the EO permitted (all of them: human utterances 0 ms apart are within its rules).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

# run as `python bench/real_eo_relay.py`: import the checkout's packages from its root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.stats import HIGHER, percentile
from humaine_platform import endpoints as ep
from humaine_platform.client import Delivered, EOClient
from humaine_platform.models import confirm_accept_answer
from standins.eo import default_round
from standins.recorder import Behavior, RecordingServer
from tests.support.real_eo import RealEO

UTTERANCES = 100


async def relay_all(url: str, round_id: str, verify: bool) -> tuple[list[float], int]:
    client = EOClient(url, verify_round=verify)
    latencies: list[float] = []
    permitted = 0
    try:
        for index in range(UTTERANCES):
            body = {"roundId": round_id, "speaker": "Human", "addressee": "", "text": f"utterance {index}",
                    "role": "buyer", "environmentUUID": "abcdefg", "timestamp": time.time_ns() // 1_000_000}
            started = time.perf_counter()
            outcome = await client.relay_message(body, deadline=time.monotonic() + 5)
            latencies.append((time.perf_counter() - started) * 1000)
            permitted += isinstance(outcome, Delivered)
    finally:
        await client.aclose()
    return latencies, permitted


def main() -> None:
    results: dict[str, object] = {"bench": "real_eo_relay", "utterances": UTTERANCES}
    with tempfile.TemporaryDirectory() as tmp, RecordingServer() as human, RecordingServer() as celia, \
            RecordingServer() as watson, httpx.Client(timeout=10) as http:
        human.behaviors[ep.CONFIRM_ACCEPT] = Behavior(answer=confirm_accept_answer())
        eo = RealEO(Path(tmp), human.port).start()
        try:
            for verify in (True, False):
                round_id = f"bench-{verify}"
                body = default_round({"Celia": celia.port, "Watson": watson.port}, human.port, (0, 600, 0),
                                     round_id=round_id, name_human_service=False).body()
                http.post(eo.url + ep.INITIALIZE_ROUND, json=body)
                http.post(eo.url + ep.START_ROUND, json={"roundId": round_id})
                latencies, permitted = asyncio.run(relay_all(eo.url, round_id, verify))
                results["verify_round" if verify else "no_check"] = {
                    "p50_ms": round(statistics.median(latencies), 2), "p95_ms": percentile(latencies, 95, 2, HIGHER),
                    "max_ms": round(max(latencies), 2), "permitted": permitted / UTTERANCES,
                }
            results["eo_alive"] = eo.alive()
        finally:
            eo.stop()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
