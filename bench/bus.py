"""Bus benchmark: 1 KB JSON envelopes through a real mosquitto on loopback.

Prints one JSON line: messages/s at QoS 0 and QoS 1 (publisher → broker → subscriber, both
through :class:`workers.runtime.bus.Bus`, payload validated on receipt), and publish→receive latency
p50/p99 at a steady 200 msg/s. Targets: ≥ 5,000 msg/s at QoS 0, p99 < 5 ms at 200 msg/s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

# run as `python bench/bus.py`: import the checkout's packages from its root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.helpers import MosquittoBroker, wait_for
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import Envelope
from workers.runtime.topics import QOS_EVENT, QOS_STREAM, Topic, Topics

PAYLOAD_BYTES = 1024
RATE_FOR_LATENCY = 200


class Probe(Envelope):
    type: str = "probe"
    seq: int
    sent_ns: int
    padding: str = ""


def _probe(seq: int, padding: str) -> Probe:
    return Probe(source="bench", seq=seq, sent_ns=time.perf_counter_ns(), padding=padding)


def _padding() -> str:
    size = len(_probe(0, "").model_dump_json())
    return "x" * max(0, PAYLOAD_BYTES - size)


class Receiver:
    def __init__(self) -> None:
        self.count = 0
        self.latencies_ms: list[float] = []
        self.done = threading.Event()
        self.expected = 0

    def __call__(self, _topic: str, message: Probe) -> None:
        self.latencies_ms.append((time.perf_counter_ns() - message.sent_ns) / 1e6)
        self.count += 1
        if self.count >= self.expected:
            self.done.set()


def _buses(url: str, topic: Topic, env: str) -> tuple[Bus, Bus, Receiver]:
    config = Config(file_data={}, environ={}, overrides={"environment_uuid": env, "broker.url": url, "broker.mode": "external"})
    publisher, subscriber = Bus(config, "bench-pub", persistent=False), Bus(config, "bench-sub", persistent=False)
    receiver = Receiver()
    subscriber.subscribe(topic, Probe, receiver)
    for bus in (publisher, subscriber):
        bus.start()
        if not bus.wait_connected(10):
            raise SystemExit("bench: the broker did not answer")
    time.sleep(0.3)
    return publisher, subscriber, receiver


def throughput(url: str, qos: int, count: int) -> dict[str, float]:
    env = f"benchq{qos}"
    topic = Topic(Topics(env).base + "/bench", qos)
    publisher, subscriber, receiver = _buses(url, topic, env)
    receiver.expected = count
    padding = _padding()
    start = time.perf_counter()
    for seq in range(count):
        publisher.publish(topic, _probe(seq, padding))
    receiver.done.wait(60)
    wait_for(lambda: receiver.count >= count, timeout=2)
    elapsed = time.perf_counter() - start
    publisher.stop()
    subscriber.stop()
    return {"msgs_per_s": round(receiver.count / elapsed), "received": receiver.count, "sent": count}


def latency(url: str, seconds: float) -> dict[str, float]:
    env = "benchlat"
    topic = Topic(Topics(env).base + "/bench", QOS_EVENT)
    publisher, subscriber, receiver = _buses(url, topic, env)
    count = int(seconds * RATE_FOR_LATENCY)
    receiver.expected = count
    padding = _padding()
    period = 1.0 / RATE_FOR_LATENCY
    start = time.perf_counter()
    for seq in range(count):
        target = start + seq * period
        while (delay := target - time.perf_counter()) > 0:
            time.sleep(delay)
        publisher.publish(topic, _probe(seq, padding))
    receiver.done.wait(30)
    publisher.stop()
    subscriber.stop()
    values = sorted(receiver.latencies_ms)
    return {
        "p50_ms": round(statistics.median(values), 3),
        "p99_ms": round(values[int(0.99 * (len(values) - 1))], 3),
        "max_ms": round(values[-1], 3),
        "received": len(values),
        "sent": count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=20000, help="messages per throughput run")
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of the 200 msg/s latency run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        broker = MosquittoBroker(Path(workdir)).start()
        try:
            qos0 = throughput(broker.url, QOS_STREAM, args.count)
            qos1 = throughput(broker.url, QOS_EVENT, args.count)
            lat = latency(broker.url, args.seconds)
        finally:
            broker.stop()
    print(json.dumps({
        "bench": "bus",
        "payload_bytes": PAYLOAD_BYTES,
        "qos0_msgs_per_s": qos0["msgs_per_s"],
        "qos0_received": f"{qos0['received']}/{qos0['sent']}",
        "qos1_msgs_per_s": qos1["msgs_per_s"],
        "qos1_received": f"{qos1['received']}/{qos1['sent']}",
        "latency_rate_per_s": RATE_FOR_LATENCY,
        "latency_qos": QOS_EVENT,
        "latency_p50_ms": lat["p50_ms"],
        "latency_p99_ms": lat["p99_ms"],
        "latency_max_ms": lat["max_ms"],
        "latency_received": f"{lat['received']}/{lat['sent']}",
    }))


if __name__ == "__main__":
    main()
