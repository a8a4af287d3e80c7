"""The transcript worker decides on its own clock: merge holds, TTLs, round deadlines, stage times.

The worker runs in-process (its ``run`` loop in a thread) on a :class:`ScriptedBus` and a
:class:`VirtualClock` that only moves when the test moves it; the EO is an httpx transport, so
nothing listens or connects. The virtual time starts at :data:`T0`, long before the wall clock's
now: a decision taken on the wall clock instead would show at once (every virtual deadline long
past by wall time, every virtual TTL far off in real time).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from hardware.clock import VirtualClock
from humaine_platform import endpoints as ep
from humaine_platform.client import RELAY_PERMITTED_KEY
from tests.support.helpers import wait_for
from tests.support.scripted_bus import ScriptedBroker, ScriptedBus
from transcript.jobs import Job
from transcript.worker import IDLE_POLL_S, TranscriptWorker
from workers.runtime.config import Config
from workers.runtime.messages import OutgoingMessage, RoundState, Stage, Transcript, VadEvent

T0 = 1_700_000_000_000
"""The virtual clock's start (November 2023): years before the wall clock's now."""
QUIET_S = 3 * IDLE_POLL_S + 0.05
"""Long enough for the worker's loop to look three times: nothing happening by then means the
worker decided to wait (it polls every :data:`IDLE_POLL_S` real seconds)."""
OUTCOME_S = 5.0
"""Real time an expected outcome may take (it comes within a poll or two)."""
TTL_S = 60.0
"""A TTL far beyond any real time a test takes: only the virtual clock can make it run out."""


class ScriptedEO:
    """The EO as an httpx transport: knows every round, permits every message; a relay waits
    while :attr:`hold` is set (a slow EO), without blocking the worker's event loop."""

    def __init__(self) -> None:
        self.relayed: list[dict[str, Any]] = []
        self.hold = threading.Event()
        self.transport = httpx.MockTransport(self._handle)

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path.startswith(ep.VIEW_QUEUE + "/"):
            return httpx.Response(200, json=[])  # a started round: its (empty) queue
        if request.method == "POST" and request.url.path == ep.RELAY_MESSAGE:
            self.relayed.append(json.loads(request.content))
            while self.hold.is_set():
                await asyncio.sleep(0.01)
            return httpx.Response(200, json={RELAY_PERMITTED_KEY: []})
        return httpx.Response(404)

    def texts(self) -> list[str]:
        return [str(body["text"]) for body in self.relayed]


@dataclass
class Room:
    """The worker under test, its clock and EO, and the other side of its bus."""

    worker: TranscriptWorker
    clock: VirtualClock
    bus: ScriptedBus
    eo: ScriptedEO
    outgoing: list[OutgoingMessage] = field(default_factory=list)

    def say(self, text: str, start: int, end: int) -> None:
        """A microphone final of speech from ``start`` to ``end`` (audio clock: virtual ms)."""
        self.bus.publish(self.bus.topics.transcript_final(), Transcript(
            source="mic", final=True, utterance_id=f"u{start}", text=text, confidence=0.9, start=start, end=end,
            engine="test"))

    def vad(self, event: str, utterance_start: int, at: int) -> None:
        """A microphone voice-activity event (``speech_start``/``speech_end``, at ``at``) of the
        speech that began at ``utterance_start`` (audio clock: virtual ms; its final's id)."""
        self.bus.publish(self.bus.topics.vad(), VadEvent(
            source="microphone", event=event, utterance_id=f"u{utterance_start}", at=at))  # type: ignore[arg-type]

    def round(self, phase_deadline: int | None = None) -> None:
        """The Avatar Controller's retained round state: round r1, relaying."""
        started = None if phase_deadline is None else phase_deadline - 60_000
        self.bus.publish(self.bus.topics.round_state(), RoundState(
            source="avatar", round_id="r1", phase="round", phase_started=started, phase_deadline=phase_deadline))

    def outcomes(self, count: int) -> list[OutgoingMessage]:
        assert wait_for(lambda: len(self.outgoing) >= count, OUTCOME_S), f"expected {count} outcomes, got {self.outgoing}"
        return list(self.outgoing)

    def quiet(self, count: int) -> bool:
        """No outcome beyond the first ``count`` while the worker's loop looks a few times."""
        return not wait_for(lambda: len(self.outgoing) > count, QUIET_S)


StartRoom = Callable[..., Room]


@pytest.fixture
def start_room(make_config: Callable[..., Config], tmp_path: Path) -> Iterator[StartRoom]:
    """``start_room(**settings)``: a transcript worker running on a scripted bus and a virtual
    clock at :data:`T0`, with ``transcript.<name>`` settings; stopped when the test ends."""
    started: list[tuple[TranscriptWorker, threading.Thread]] = []

    def start(**settings: Any) -> Room:
        overrides = {"transcript.session_dir": str(tmp_path / "sessions"), "eo.url": "http://eo.invalid",
                     "transcript.ttl_s": TTL_S, **{f"transcript.{k}": v for k, v in settings.items()}}
        config = make_config("mqtt://scripted.invalid:1883", overrides=overrides)
        broker = ScriptedBroker()
        room = Room(worker=None, clock=VirtualClock(start_ms=T0, speed=None), bus=broker.bus(config, "test-room"),  # type: ignore[arg-type]
                    eo=ScriptedEO())
        room.bus.subscribe(room.bus.topics.outgoing_message(), OutgoingMessage, lambda _t, m: room.outgoing.append(m))
        room.bus.start()
        worker_bus = broker.bus(config, "transcript")
        room.worker = TranscriptWorker(config, bus=worker_bus.as_bus(), clock=room.clock)
        worker_bus.health = room.worker.health
        room.worker.delivery.poster.transport = room.eo.transport  # the client is made at the first request
        # not Worker.start(): it first probes the broker for another instance over the network
        worker_bus.start()
        thread = threading.Thread(target=room.worker.run, args=(room.worker.stop_event,), daemon=True)
        thread.start()
        started.append((room.worker, thread))
        return room

    yield start
    for worker, thread in started:
        worker.stop()
        thread.join(5)
        assert not thread.is_alive(), "the worker did not stop within 5 s"
        worker.close()


def test_an_utterance_without_round_state_expires_on_the_worker_clock(start_room: StartRoom) -> None:
    room = start_room(merge_gap_s=0)
    room.say("Celia I want two eggs", T0 - 1500, T0 - 200)
    assert wait_for(lambda: len(room.worker.held) == 1, OUTCOME_S), "the utterance was not held for a round state"
    room.clock.advance_to(T0 + int(TTL_S * 1000) - 1000)  # a second short of its TTL
    assert room.quiet(0), f"recorded before its TTL ran out: {room.outgoing}"
    assert len(room.worker.held) == 1
    room.clock.advance_to(T0 + int(TTL_S * 1000))
    (outcome,) = room.outcomes(1)
    assert outcome.outcome == "undelivered"
    assert "not relayed" in outcome.reason and "no round state" in outcome.reason, outcome.reason
    assert outcome.message["text"] == "Celia I want two eggs"
    assert outcome.stages[Stage.RELEASED] == T0  # stamped on the worker's clock, not the wall's
    assert len(room.worker.held) == 0 and room.eo.relayed == []
    assert room.worker.recorder.counts()["undelivered"] == 1


def test_a_queued_message_expires_on_the_worker_clock(start_room: StartRoom) -> None:
    """The second message waits behind a slow delivery of the first; its TTL runs out in
    virtual time meanwhile, so it is never sent (``expired``)."""
    room = start_room(merge_gap_s=0)
    room.round()
    room.eo.hold.set()
    room.say("Celia one egg", T0 - 1500, T0 - 1000)
    assert wait_for(lambda: room.eo.texts() == ["Celia one egg"], OUTCOME_S), "the first message was not sent"
    room.say("Watson two eggs", T0 - 800, T0 - 200)
    assert wait_for(lambda: room.worker.recorder.counts()["messages"] == 2, OUTCOME_S), "the second message was not queued"
    room.clock.advance_to(T0 + int(TTL_S * 1000))
    room.eo.hold.clear()
    first, second = room.outcomes(2)
    assert first.outcome == "delivered", first.reason
    assert (first.stages[Stage.RELAY_SENT], first.stages[Stage.EO_ANSWER]) == (T0, T0 + int(TTL_S * 1000))
    assert second.outcome == "undelivered" and second.reason == f"expired: not sent within {TTL_S:g} s"
    assert second.message["text"] == "Watson two eggs" and Stage.RELAY_SENT not in second.stages
    assert room.eo.texts() == ["Celia one egg"]


def test_the_merge_hold_runs_on_the_worker_clock(start_room: StartRoom) -> None:
    """Two finals closer than the gap make one message, released when the hold ends in
    virtual time; a final after that is a message of its own, though its speech began within
    the gap of the last one's (the hold was over when it came)."""
    room = start_room(merge_gap_s=1.2, merge_hold="always", merge_sources=["mic"], merge_vad_wait_s=0.3)
    room.round()
    room.say("I would like", T0 - 1000, T0 - 100)
    room.clock.advance_to(T0 + 500)
    room.say("five eggs", T0 + 200, T0 + 400)  # 0.3 s after the first: joins it
    assert wait_for(lambda: room.worker.recorder.counts()["finals"] == 2, OUTCOME_S)
    # held until 1.2 s (the gap) after its last words' end, + 0.3 s for a voice event: T0 + 1900
    room.clock.advance_to(T0 + 1899)
    assert room.quiet(0), f"released before the hold ended: {room.outgoing}"
    room.clock.advance_to(T0 + 1900)
    (merged,) = room.outcomes(1)
    assert merged.outcome == "delivered", merged.reason
    assert merged.message["text"] == "I would like five eggs"
    assert merged.message["utteranceIds"] == [f"u{T0 - 1000}", f"u{T0 + 200}"]
    assert merged.stages[Stage.RELEASED] == T0 + 1900

    room.say("and some milk", T0 + 1000, T0 + 1500)  # within the gap of "five eggs" by its audio times
    assert wait_for(lambda: room.worker.recorder.counts()["finals"] == 3, OUTCOME_S)
    room.clock.advance_to(T0 + 2999)  # held for a continuation of its own: until T0 + 1500 + 1200 + 300
    assert room.quiet(1), f"released before its own hold ended: {room.outgoing}"
    room.clock.advance_to(T0 + 3000)
    _, alone = room.outcomes(2)
    assert alone.outcome == "delivered", alone.reason
    assert alone.message["text"] == "and some milk" and alone.stages[Stage.RELEASED] == T0 + 3000
    assert room.eo.texts() == ["I would like five eggs", "and some milk"]


def test_a_pause_mid_sentence_is_merged_at_live_timing(start_room: StartRoom) -> None:
    """Published as a live microphone would: the first segment's final arrives 0.1 s after the
    segment ended, so its merge window closes at T0 + 1.4 s (1.2 s gap + 0.3 s for a voice
    event); the next speech is heard 0.6 s later (its voice-activity start), and its final
    arrives at T0 + 2.4 s, a second after the window would have closed: one message."""
    room = start_room(merge_gap_s=1.2)  # the other merge settings as shipped (hold what reads unfinished)
    room.round()
    room.say("Watson I would like", T0 - 1500, T0 - 100)
    assert wait_for(lambda: room.worker.merger.pending is not None, OUTCOME_S), "the unfinished final was not held"
    room.clock.advance_to(T0 + 600)
    room.vad("speech_start", T0 + 200, T0 + 500)
    # taken before the clock moves on: a loop turn between the two would release the held part
    assert wait_for(lambda: (held := room.worker.merger.pending) is not None and held.awaiting == f"u{T0 + 200}",
                    OUTCOME_S), "the voice-activity start was not taken"
    room.clock.advance_to(T0 + 2400)
    assert room.quiet(0), f"released before the continuation's final: {room.outgoing}"
    room.vad("speech_end", T0 + 200, T0 + 2300)
    room.say("five eggs please", T0 + 200, T0 + 2300)
    (merged,) = room.outcomes(1)
    assert merged.outcome == "delivered", merged.reason
    assert merged.message["text"] == "Watson I would like five eggs please"
    assert merged.stages[Stage.RELEASED] == T0 + 2400
    assert room.quiet(1), f"a second message: {room.outgoing}"
    assert room.eo.texts() == ["Watson I would like five eggs please"]


def test_round_deadlines_are_checked_on_the_worker_clock(start_room: StartRoom) -> None:
    """The round's phase ends at T0 + 10 s (+ 2 s grace): before it the buyer's words are
    relayed - although by wall time that deadline passed years ago - and after it they are not."""
    room = start_room(merge_gap_s=0, round_deadline_grace_s=2.0)
    deadline = T0 + 10_000
    room.round(phase_deadline=deadline)
    room.say("Celia one egg", T0 - 1500, T0 - 500)
    (first,) = room.outcomes(1)
    assert first.outcome == "delivered", first.reason
    assert first.message["roundId"] == "r1"

    room.clock.advance_to(deadline + 2000)  # past the deadline, still within its grace
    room.say("Watson two eggs", deadline + 500, deadline + 1500)
    _, second = room.outcomes(2)
    assert second.outcome == "delivered", second.reason
    assert room.worker.health()["round"] == "r1"

    room.clock.advance_to(deadline + 2001)
    room.say("Celia three eggs", deadline + 1600, deadline + 1900)
    _, _, late = room.outcomes(3)
    assert late.outcome == "undelivered"
    assert late.reason.startswith("not relayed") and "passed its deadline" in late.reason, late.reason
    assert room.eo.texts() == ["Celia one egg", "Watson two eggs"]
    health = room.worker.health()
    assert health["round"] is None and "passed its deadline" in health["round_reason"]


def test_the_http_deadline_is_what_is_left_on_the_worker_clock() -> None:
    """The TTL is on the worker's clock; the HTTP client's retries take a ``time.monotonic()``
    deadline as far off as the time the message has left (none once it has run out)."""
    clock = VirtualClock(start_ms=T0, speed=None)
    job = Job("m1", {}, deadline=T0 / 1000 + 2.5, stages={})
    before = time.monotonic()
    assert before + 2.5 <= job.monotonic_deadline(clock.now_ms() / 1000) <= time.monotonic() + 2.5
    clock.advance_to(T0 + 2000)
    assert before + 0.5 <= job.monotonic_deadline(clock.now_ms() / 1000) <= time.monotonic() + 0.5
    clock.advance_to(T0 + 4000)
    assert before <= job.monotonic_deadline(clock.now_ms() / 1000) <= time.monotonic()
