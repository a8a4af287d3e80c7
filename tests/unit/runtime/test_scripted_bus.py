"""The unit tier's scripted bus writes what the real bus writes: every envelope carries the
process's origin, so a reader can hold it to the publisher's retained status, and the status
says a fallback as the worker runtime reports it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.scripted_bus import ScriptedBroker
from workers.runtime.config import Config
from workers.runtime.messages import Status, VadEvent
from workers.runtime.origins import vouched


def test_a_published_envelope_is_vouched_for_by_its_publishers_status(make_config: Callable[..., Config]) -> None:
    config = make_config("mqtt://scripted.invalid:1883")
    broker = ScriptedBroker()
    mic, reader = broker.bus(config, "microphone"), broker.bus(config, "transcript")
    heard: list[VadEvent] = []
    statuses: dict[str, Status] = {}
    reader.subscribe(reader.topics.vad(), VadEvent, lambda _t, m: heard.append(m))
    reader.subscribe(reader.topics.all_status(), Status, lambda _t, s: statuses.update({s.worker: s}))
    reader.start()
    mic.start()
    mic.publish(mic.topics.vad(), VadEvent(source="microphone", event="speech_start", utterance_id="u1", at=1))
    assert heard[0].origin == mic.origin
    assert vouched(heard[0], statuses["microphone"])


def test_the_status_says_a_fallback_and_keeps_saying_it(make_config: Callable[..., Config]) -> None:
    config = make_config("mqtt://scripted.invalid:1883")
    broker = ScriptedBroker()
    bus = broker.bus(config, "camera", health=lambda: {"frames": 3})
    seen: list[Status] = []
    bus.subscribe(bus.topics.status("camera"), Status, lambda _t, s: seen.append(s))
    bus.start()
    bus.set_status("error", "no webcam", fallback=True)
    bus.stop("stopped")
    states: list[tuple[Any, ...]] = [(s.state, s.fallback, s.health) for s in seen]
    assert states == [("online", False, {"frames": 3}), ("error", True, {"frames": 3}), ("offline", True, {})]
