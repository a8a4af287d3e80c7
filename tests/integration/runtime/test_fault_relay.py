"""Fault injection, the relay: the EO's human-side service (the Avatar Controller) dies while the
EO forwards the buyer's message. The stand-in EO then answers 424 (Failed Dependency) - after it
queued the message and forwarded it to the sellers. That is not a refusal: the outcome is what
the EO's own verdict says (``eo/verdict``, from its ``/receiveLog``), or ``maybe_delivered``
when no verdict comes; never ``failed``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from avatar.harness import LocalAvatar
from humaine_platform import endpoints as ep
from standins.eo import StandinServer, StandinSettings, default_round
from standins.eo.errors import SERVICE_FAILED
from standins.recorder import Behavior, RecordingServer
from tests.support import loopback
from tests.support.helpers import MosquittoBroker, wait_for
from tests.support.room import Collector, Room
from tests.support.room import transcript_process as transcript_process
from workers.runtime.config import Config
from workers.runtime.messages import EOVerdict, Status, now_ms

ROUND = "r1"


@dataclass
class Relay:
    eo: StandinServer
    celia: RecordingServer
    watson: RecordingServer
    room: Room
    statuses: Collector


@contextmanager
def relay_room(config: Config, human_port: int) -> Iterator[Relay]:
    """The stand-in EO (its documented mode: a human-side service that fails is a 424) with two
    recording sellers, a round running whose human side is on ``human_port``."""
    with RecordingServer() as celia, RecordingServer() as watson, loopback.client(timeout=10) as http:
        eo = StandinServer(StandinSettings(port=0, rules="documented", r0_min_gap_s=0.0, request_timeout_s=1.0)).start()
        room = Room(config)
        statuses = Collector()
        room.bus.subscribe(room.topics.status("transcript"), Status, statuses)
        try:
            body = default_round({"Celia": celia.port, "Watson": watson.port}, human_port, (0.0, 60.0, 0.0), round_id=ROUND)
            assert http.post(eo.url + ep.INITIALIZE_ROUND, json=body.body()).status_code == 200
            assert http.post(eo.url + ep.START_ROUND, json={"roundId": ROUND}).status_code == 200
            yield Relay(eo, celia, watson, room, statuses)
        finally:
            room.close()
            eo.stop()


def _online(relay: Relay, pid: int) -> bool:
    return any(s.pid == pid and s.state == "online" for s in relay.statuses.items)


def test_a_relay_the_avatar_dies_in_is_maybe_delivered_not_failed(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path
) -> None:
    """The Avatar Controller is killed mid-round: the EO queues the buyer's message, forwards it
    to the sellers and answers 424. No verdict can come (the controller relays it): the message
    may have been delivered - it was."""
    config = make_config(mosquitto.url, **{"avatar.port": 0, "avatar.speaker": f"wav:{tmp_path / 'wav'}"})
    avatar = LocalAvatar(config).start()
    port = urlsplit(avatar.url).port
    assert port is not None
    with relay_room(config, port) as relay:
        worker = transcript_process(config, relay.eo.url, mosquitto.url)
        try:
            assert wait_for(lambda: _online(relay, worker.pid), 20)
            state = avatar.controller.round_state()
            assert (state.round_id, state.phase) == (ROUND, "round")  # the EO told it; it is retained on the bus
            avatar.stop()  # killed: its port answers nothing any more
            t = now_ms()
            relay.room.say("Celia, I want two eggs", t - 900, t - 100, source="typed")
            (outcome,) = relay.room.outcomes(1, timeout=15)
            assert outcome.outcome == "maybe_delivered", (outcome.outcome, outcome.reason)
            assert f"HTTP {SERVICE_FAILED}" in outcome.reason
            assert [b["text"] for b in relay.celia.bodies(ep.RECEIVE_MESSAGE)] == ["Celia, I want two eggs"]
        finally:
            worker.kill()
            worker.wait(10)


def test_the_eos_verdict_decides_a_relay_whose_answer_failed(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    """The human side took the EO's ``/receiveLog`` (and published the verdict, as the Avatar
    Controller does) and then failed the forwarded message: the EO permitted and queued it, so
    the outcome is ``delivered``, though the relay was answered with a 424."""
    config = make_config(mosquitto.url)
    with RecordingServer() as human_side:
        human_side.behaviors[ep.RECEIVE_MESSAGE] = Behavior(status=500)  # died right after the log
        with relay_room(config, human_side.port) as relay:
            stop = threading.Event()
            publisher = threading.Thread(target=_publish_verdicts, args=(human_side, relay.room, stop), daemon=True)
            publisher.start()
            worker = transcript_process(config, relay.eo.url, mosquitto.url)
            try:
                assert wait_for(lambda: _online(relay, worker.pid), 20)
                relay.room.round(ROUND, "round")
                t = now_ms()
                relay.room.say("Watson, three eggs please", t - 900, t - 100, source="typed")
                (outcome,) = relay.room.outcomes(1, timeout=15)
                assert outcome.outcome == "delivered", (outcome.outcome, outcome.reason)
                assert "EO's verdict" in outcome.reason
                assert [b["text"] for b in relay.watson.bodies(ep.RECEIVE_MESSAGE)] == ["Watson, three eggs please"]
            finally:
                stop.set()
                worker.kill()
                worker.wait(10)


def _publish_verdicts(human_side: RecordingServer, room: Room, stop: threading.Event) -> None:
    """What the Avatar Controller does with each ``/receiveLog``: the verdict on ``eo/verdict``,
    the message without its ``permitted``/``rationale`` (``AvatarController._publish_verdict``)."""
    published = 0
    while not stop.wait(0.02):
        logs = human_side.bodies(ep.RECEIVE_LOG)
        for body in logs[published:]:
            message = {k: v for k, v in body.items() if k not in ("permitted", "rationale")}
            room.bus.publish(room.topics.eo_verdict(), EOVerdict(source="avatar", via="log", permitted=bool(body["permitted"]),
                                                                  rationale=body.get("rationale"), message=message))
        published = len(logs)

