"""The bus's parts on their own, without a broker: the dispatcher's checks on every payload and
the retained status's judgement of a shared client id."""

from __future__ import annotations

import logging
import os
import socket

from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import Status, VadEvent
from workers.runtime.mqtt.dispatch import Dispatcher, Received, Subscription
from workers.runtime.mqtt.stats import BusStats
from workers.runtime.mqtt.status import Claim, StatusKeeper
from workers.runtime.topics import Topic

LOG = logging.getLogger("workers.runtime.bus")
VAD = Topic("env/vad", 1)


def _dispatcher(max_payload_bytes: int = 1024) -> tuple[Dispatcher, BusStats, list[VadEvent], list[str]]:
    stats = BusStats()
    dispatcher = Dispatcher("listener", max_payload_bytes, stats, RateLimitedLog(LOG))
    got: list[VadEvent] = []
    invalid: list[str] = []
    dispatcher.add(Subscription(VAD, VadEvent, lambda _t, m: got.append(m), lambda _t, reason: invalid.append(reason)))
    return dispatcher, stats, got, invalid


def _vad(message_id: str = "v1") -> bytes:
    return VadEvent(source="mic", event="speech_start", utterance_id="u1", at=1, id=message_id).model_dump_json().encode()


def test_a_valid_payload_reaches_its_handler_once() -> None:
    dispatcher, stats, got, invalid = _dispatcher()
    for _ in range(2):  # a QoS 1 redelivery: the same envelope id
        dispatcher.receive(Received(VAD.name, _vad(), qos=1, retain=False))
    assert [m.id for m in got] == ["v1"] and invalid == []
    assert stats.received == 2 and stats.dropped_duplicate == 1


def test_bad_payloads_cost_one_message_each_and_are_told_to_the_subscriber() -> None:
    dispatcher, stats, got, invalid = _dispatcher(max_payload_bytes=400)
    dispatcher.receive(Received(VAD.name, b"{not json", qos=1, retain=False))
    dispatcher.receive(Received(VAD.name, b'{"v": 1, "type": "vad", "source": "x"}', qos=1, retain=False))
    dispatcher.receive(Received(VAD.name, b"[" * 500, qos=1, retain=False))
    dispatcher.receive(Received(VAD.name, b"", qos=1, retain=True))  # a retained message cleared
    assert got == []
    assert stats.dropped_invalid == 2 and stats.dropped_oversized == 1
    assert invalid[0].startswith("not JSON") and invalid[1].startswith("invalid VadEvent")


def test_a_failing_handler_and_an_unmatched_topic_are_counted_not_raised() -> None:
    stats = BusStats()
    dispatcher = Dispatcher("listener", 1024, stats, RateLimitedLog(LOG))
    dispatcher.add(Subscription(VAD, VadEvent, lambda _t, _m: 1 / 0))
    dispatcher.receive(Received(VAD.name, _vad(), qos=1, retain=False))
    dispatcher.receive(Received("env/other", _vad("v2"), qos=1, retain=False))
    assert stats.handler_errors == 1 and stats.dropped_unhandled == 1


def _status_of(keeper: StatusKeeper, **changes: object) -> Status:
    return keeper.current().model_copy(update=changes)


def test_a_newer_instance_takes_the_client_id_over_once() -> None:
    keeper = StatusKeeper("mic", None, None)
    newer = _status_of(keeper, pid=os.getpid() + 1, started_at=keeper.origin.started_at + 1)
    assert keeper.claim(keeper.current()) is Claim.NOTHING
    assert keeper.claim(newer.model_copy(update={"state": "offline"})) is Claim.NOTHING
    assert keeper.claim(newer) is Claim.YIELD and keeper.taken_over == newer
    assert keeper.claim(newer) is Claim.NOTHING


def test_an_older_instance_is_covered_by_our_status() -> None:
    keeper = StatusKeeper("mic", None, None)
    older = _status_of(keeper, host=f"not-{socket.gethostname()}", started_at=keeper.origin.started_at - 1)
    assert keeper.claim(older) is Claim.REASSERT and keeper.taken_over is None


def test_the_status_says_online_on_connect_only_when_ready_and_keeps_a_fallback() -> None:
    def failing_health() -> dict[str, object]:
        raise RuntimeError("sensor gone")

    keeper = StatusKeeper("avatar", failing_health, 3.0)
    assert keeper.on_connect(ready=False).state == "starting"
    assert keeper.on_connect(ready=True).state == "online"
    error = keeper.set("error", "no webcam", fallback=True)
    assert error.fallback and error.health == {"error": "health check failed: sensor gone"} and error.refresh_s == 3.0
    assert keeper.set("online", "").fallback, "a fallback stays said"
    assert keeper.offline("stopped").health == {}
