"""The Rich Transcript worker: final transcripts + attention -> addressed, delivered messages.

Threads: the bus calls the handlers on its network thread. Attention, head pose and round
state are cheap and thread-safe, so they are applied there; final transcripts go to the
worker's asyncio loop, which merges them, decides the addressee, and hands each message to a
single delivery task (one at a time, so the human's messages reach the EO in the order spoken).

Time: every decision takes its time from the worker's clock (:attr:`TranscriptWorker.clock`, a
:class:`~hardware.clock.Clock`) - the merge holds, the TTL of a message, the round checks
(against the round state's phase deadline), the pending confirmation's deadline and the stage
timestamps it writes. Live, that clock is wall time; in a paced replay it is the session's clock,
so a replay decides as the room would have. Two readings stay on other clocks on purpose: the age
of a final (how long the broker held it: wall time against its publication stamp) and the
deadline handed to the HTTP client (``time.monotonic()``, for its real retries and timeouts).

Every message ends in exactly one recorded outcome - ``delivered``, ``blocked`` (with the EO's
rationale), ``maybe_delivered`` (sent, unanswered by its deadline), ``failed`` or
``undelivered`` (no active round, a round the EO does not know, expired, worker stopping) - in
the session log and on ``topics.outgoing_message()``. Nothing is dropped silently.

The current EO does not say in its answer why it blocked a message: it tells the human-side
service, and the Avatar Controller publishes that verdict (``EOVerdict``); the worker waits a
moment for it to record the rationale (:mod:`transcript.verdicts`).

The worker composes its parts here: the hand-over from the bus's thread (:mod:`transcript.inbox`),
the merger, the round tracker and the utterances held for a round (:mod:`transcript.round_hold`),
a pending confirmation (:mod:`transcript.confirm_answer`), the delivery task
(:mod:`transcript.sender`) with the EO's verdicts and the rules' notes, and the recorder of
outcomes (:mod:`transcript.outcomes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from formats.session_files import SESSIONS_DIR
from hardware.clock import Clock, RealClock
from humaine_platform.models import HUMAN
from transcript.confirm_answer import PendingConfirmation
from transcript.delivery import Delivery
from transcript.fusion.addressee import GazePolicy, decide
from transcript.fusion.attention import AttentionHistory
from transcript.fusion.names import NameMatcher
from transcript.inbox import Heard, LoopInbox
from transcript.jobs import Job
from transcript.merging import Merger, Utterance
from transcript.outcomes import OutcomeRecorder
from transcript.outgoing import build_message
from transcript.round_hold import RoundHold
from transcript.rounds import RoundTracker
from transcript.rule_notes import RuleNotes
from transcript.sender import Outbox, Sender
from transcript.session_log import SessionLog
from transcript.settings import TranscriptSettings
from transcript.verdicts import Verdicts
from workers.runtime.bus import Bus
from workers.runtime.config import Config, OrchestratorSettings
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import (
    Attention,
    ConfirmAnswer,
    ConfirmPending,
    EOVerdict,
    HeadPose,
    OutgoingMessage,
    RoundState,
    Transcript,
    VadEvent,
    new_id,
    now_ms,
)
from workers.runtime.worker import Worker
from workers.runtime.worker_ids import TRANSCRIPT as WORKER_ID

IDLE_POLL_S = 0.1
"""How often the loop looks at the stop flag when nothing happens."""
STOP_DELIVERY_WAIT_S = 1.0
"""On stop, how long queued messages may still be delivered (the stop deadline is 2 s)."""

T = TypeVar("T")


class TranscriptWorker(Worker):
    """Final transcripts and attention in, one addressed message per utterance out, each with
    one recorded outcome. All its time comes from :attr:`clock` (wall time live, the session's
    clock in a paced replay): never the machine's clock directly, so that tests and replays can
    drive it with a :class:`~hardware.clock.VirtualClock`."""

    name = WORKER_ID

    def __init__(self, config: Config, worker_id: str | None = None, bus: Bus | None = None, clock: Clock | None = None) -> None:
        """``clock``: the clock of the audio the transcripts come from (default: wall time, as
        for a live microphone; a paced replay passes its session clock). It governs the merge
        holds, the TTLs, the round checks and the stage timestamps (see the module's docstring)."""
        # resolve everything that can be misconfigured before connecting anywhere
        self.settings = config.section(TranscriptSettings)
        """``[transcript]``: merging, addressing, TTL and the session log."""
        self.avatars = list(config.core.avatars)
        """The avatars' names, as the buyer addresses them."""
        self.environment_uuid = config.core.environment_uuid
        """The environment every message is for."""
        self.delivery = Delivery(self.settings, config.section(OrchestratorSettings), self.avatars)
        """The EO's relay (or the file/stdout sink that stands in for it)."""
        self.clock: Clock = clock or RealClock()
        """The clock of every decision (see the module)."""
        super().__init__(config, worker_id, bus)
        s = self.settings
        self.bus.set_reads(s.finals_read())
        self.history = AttentionHistory(keep_ms=s.history_s * 1000)
        """Where the buyer looked, and when: the gaze half of addressing."""
        self.matcher = NameMatcher.build(self.avatars, s.name_aliases, s.greetings, s.name_max_prefix_words)
        """The names half of addressing: an avatar named in the words."""
        self.policy = GazePolicy(lead_ms=s.gaze_lead_s * 1000, start_ms=s.gaze_start_s * 1000, start_weight=s.gaze_start_weight,
                                 min_share=s.gaze_min_share, stale_ms=s.camera_stale_s * 1000)
        """How gaze decides the addressee when no name does."""
        self.rounds = RoundTracker(s.round_id, s.relay_phases, s.round_deadline_grace_s * 1000)
        """The current round state, and whether a message may be relayed in it."""
        self.merger = Merger.from_settings(s, self.avatars)
        """Finals into complete utterances (merge holds on the worker's clock)."""
        self.recorder = OutcomeRecorder(self.worker_id, self._session_log(config), self._publish_outcome, self.log)
        """Counts, the session log, and each message's one outcome."""
        self.held = RoundHold(s.ttl_s)
        """Complete utterances waiting for the first round state."""
        self.confirmation = PendingConfirmation(self.avatars)
        """The seller's Accept waiting for the buyer's spoken yes or no."""
        self.rule_notes = RuleNotes()
        """What the documented rules say of our delivered messages."""
        self.verdicts = Verdicts()
        """The EO's verdicts on the human's messages (rationales, lost answers)."""
        self.sender = Sender(self.delivery, self.rounds, self.clock, self.recorder, self.verdicts, self.rule_notes, s.ttl_s)
        """The delivery task: one job at a time to the EO."""
        self.inbox = LoopInbox()
        """Finals and voice events from the bus's thread to the worker's loop."""
        self._too_old = RateLimitedLog(self.log)
        # first in the file, before anything the subscriptions bring (a retained round state
        # arrives as soon as the bus connects, which may be before run() is called)
        self.recorder.write("session_start", environment=self.environment_uuid, worker=self.worker_id,
                            delivery=self.delivery.describe(), settings=s.model_dump(mode="json"))
        self._subscribe()

    def _session_log(self, config: Config) -> SessionLog | None:
        """The session log of this run (None when ``[transcript] session_log`` is off)."""
        if not self.settings.session_log:
            return None
        directory = Path(self.settings.session_dir) if self.settings.session_dir else config.core.data_dir / SESSIONS_DIR
        return SessionLog.create(directory, f"transcript-{self.environment_uuid}", self._disk_error, self._disk_recovered)

    def _subscribe(self) -> None:
        """Before the bus connects: the persistent session delivers its backlog at once."""
        topics, bus = self.topics, self.bus
        bus.subscribe(topics.transcript_final(), Transcript, self._on_transcript, on_invalid=self._on_invalid_final)
        bus.subscribe(topics.vad(), VadEvent, lambda _t, message: self._to_loop(message))
        bus.subscribe(topics.attention(), Attention, self._on_attention)
        bus.subscribe(topics.headpose(), HeadPose, lambda _t, message: self.history.saw_headpose(message.frame_ts))
        bus.subscribe(topics.eo_verdict(), EOVerdict, self._on_verdict)
        bus.subscribe(topics.round_state(), RoundState, self._on_round, on_invalid=lambda _t, reason: self.rounds.unreadable(reason))
        bus.subscribe(topics.confirm_pending(), ConfirmPending, lambda _t, message: self.confirmation.update(message))

    def _publish_outcome(self, message: OutgoingMessage) -> None:
        self.bus.publish(self.topics.outgoing_message(), message)

    def _disk_error(self, detail: str) -> None:
        """The session log cannot be written: an ``error`` status says so (it is published on
        connecting when this happens before), the relaying goes on."""
        self.bus.set_status("error", detail)

    def _disk_recovered(self) -> None:
        """The session log is written again (it says so in one line): ``online`` again."""
        self.bus.set_status("online")

    # -- bus handlers (network thread) -------------------------------------------------------
    def _on_transcript(self, _topic: str, message: Transcript) -> None:
        if message.final:
            self._to_loop(message)

    def _on_invalid_final(self, _topic: str, reason: str) -> None:
        """A final the bus dropped (not UTF-8 or JSON, not a transcript): the session log keeps a
        record of it (the bus said it in a rate-limited line), so no utterance is lost unrecorded."""
        self.recorder.write("final_dropped", reason=reason[:300])

    def _to_loop(self, message: Heard) -> None:
        if not self.inbox.put(message) and isinstance(message, Transcript):  # keep a trace of what it heard
            self.recorder.write("final", transcript=message.model_dump(mode="json"), ignored="worker stopping")

    def _on_attention(self, _topic: str, message: Attention) -> None:
        if self.history.add(message.since, message.target):
            self.recorder.write("attention", target=message.target, since=message.since, previous=message.previous,
                                source=message.source)

    def _on_verdict(self, _topic: str, message: EOVerdict) -> None:
        """Every verdict on a human message is kept a while: a rejection gives a blocked message
        its rationale, and a permitted log decides a relay whose answer was lost."""
        if message.message.get("speaker") != HUMAN:
            if message.permitted:
                self.rule_notes.agent_spoke(self.clock.now_ms())
            return
        self.inbox.call(self.verdicts.arrived, message)

    def _on_round(self, _topic: str, message: RoundState) -> None:
        self.rounds.update(message)
        self.recorder.write("round_state", round_id=message.round_id, phase=message.phase,
                            phase_deadline=message.phase_deadline)

    # -- main loop ---------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        self.log.info("delivering to %s", self.delivery.describe())
        try:
            asyncio.run(self._main(stop))
        finally:
            self.recorder.close()

    async def _main(self, stop: threading.Event) -> None:
        inbox = self.inbox.open()
        outbox: Outbox = asyncio.Queue()
        sender = asyncio.create_task(self.sender.run(outbox))
        try:
            while not stop.is_set():
                try:
                    received: Heard | None = await asyncio.wait_for(inbox.get(), self._idle_timeout())
                except (asyncio.TimeoutError, TimeoutError):
                    received = None
                if received is not None:
                    self._take(received, outbox)
                self._turn(outbox)
                if sender.done():  # never expected (the task catches per job): say it, start it again
                    self.recorder.internal_error("the delivery task", sender.exception() or RuntimeError("it returned"))
                    sender = asyncio.create_task(self.sender.run(outbox))
        finally:
            self.inbox.close()
            await self._finish(outbox, sender)

    def _idle_timeout(self) -> float:
        """How long the loop may wait for input: until the merger's next hold is due, at most
        :data:`IDLE_POLL_S`."""
        due = self.merger.next_due_ms()
        return IDLE_POLL_S if due is None else max(0.0, min(IDLE_POLL_S, (due - self.clock.now_ms()) / 1000))

    def _turn(self, outbox: Outbox, stopping: bool = False) -> None:
        """Utterances the merger lets go now (all of them when ``stopping``), then the held ones
        that may go."""
        step = self.merger.drain if stopping else (lambda: self.merger.due(self.clock.now_ms()))
        for utterance in self._survived("the merger", step) or []:
            self._dispatch_safely(utterance, outbox)
        self._survived("releasing held utterances", lambda: self._release_held(outbox, everything=stopping))

    async def _finish(self, outbox: Outbox, sender: asyncio.Task[None]) -> None:
        """A held utterance is complete now that no more speech will be taken: all go out, and
        what the sender cannot send within :data:`STOP_DELIVERY_WAIT_S` is recorded undelivered."""
        self._turn(outbox, stopping=True)
        outbox.put_nowait(None)
        try:
            await asyncio.wait_for(asyncio.shield(sender), STOP_DELIVERY_WAIT_S)
        except (asyncio.TimeoutError, TimeoutError):
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
        while not outbox.empty():
            job = outbox.get_nowait()
            if job is not None:
                self.recorder.record(job, "undelivered", "worker stopped before it could be sent")
        await self.delivery.aclose()

    # -- one input costs one record, never the loop -------------------------------------------
    def _take(self, received: Heard, outbox: Outbox) -> None:
        """One final or voice event into the merger. Whatever it raises costs that one input (a
        ``final_failed`` record and one rate-limited line), never the loop: an exception escaping
        here once stopped every later outcome while the status stayed ``online``."""
        if isinstance(received, VadEvent):
            self._survived("a voice event", lambda: self.merger.speech(received, self.clock.now_ms()))
            return
        try:
            utterances = self._accept(received)
        except Exception as exc:
            self.recorder.internal_error("a final transcript", exc, utterance_id=received.utterance_id, source=received.source)
            return
        for utterance in utterances:
            self._dispatch_safely(utterance, outbox)

    def _dispatch_safely(self, utterance: Utterance, outbox: Outbox, hold: bool = True) -> None:
        self._survived("an utterance", lambda: self._dispatch(utterance, outbox, hold), text=utterance.text[:200])

    def _survived(self, what: str, step: Callable[[], T], **fields: Any) -> T | None:
        """``step()``, or None after recording why it failed."""
        try:
            return step()
        except Exception as exc:
            self.recorder.internal_error(what, exc, **fields)
            return None

    def _accept(self, part: Transcript) -> list[Utterance]:
        self.recorder.count("finals")
        self.recorder.write("final", transcript=part.model_dump(mode="json"))
        if part.echo and self.settings.ignore_echo:
            self.recorder.count("echo_dropped")
            return []
        if not part.text.strip():
            return []
        # how long the broker held it: wall time since it was published (the envelope's ``ts`` is
        # the publisher's wall clock), on purpose not the worker's clock - the audio clock of a
        # replay is in the past by design, and a message's time in the broker is real time
        age_s = (now_ms() - part.ts) / 1000
        if age_s > self.settings.max_final_age_s:
            self.recorder.count("too_old")
            self.recorder.write("final_ignored", utterance_id=part.utterance_id, reason=f"too old: published {age_s:.0f} s ago")
            self._too_old.warning("too old", "final transcripts published over %g s ago are not relayed (the last: %.0f s)",
                                  self.settings.max_final_age_s, age_s)
            return []
        now = self.clock.now_ms()
        # the TTL runs on the worker's clock too (in seconds, as the merger keeps it)
        return self.merger.add(part, now, now_mono=now / 1000)

    def _dispatch(self, utterance: Utterance, outbox: Outbox, hold: bool = True) -> None:
        """Fuse, build and queue (or record as undelivered) one complete utterance; while no
        round state is known yet, hold it (see :meth:`_release_held`)."""
        if utterance.released_ms is None:  # when the merger let it go
            utterance.released_ms = self.clock.now_ms()
        if hold and (len(self.held) or not self.rounds.known):  # behind held ones: in the order spoken
            oldest = self.held.hold(utterance)
            if oldest is not None:
                self._dispatch_safely(oldest, outbox, hold=False)
            return
        decision = decide(utterance.text, utterance.speech_start, utterance.end, self.history, self.matcher, self.avatars,
                          self.policy)
        check = self.rounds.check(self.clock.now_ms())
        body = build_message(utterance, decision, self.environment_uuid, check.round_id)
        job = Job(new_id(), body, utterance.arrived_mono + self.settings.ttl_s, utterance.stages())
        self.recorder.count("messages")
        self.recorder.write("message", message_id=job.message_id, message=body, addressee_detail=decision.detail,
                            held_because=utterance.held_because)
        if self._answers_confirmation(job):
            return
        if not check.active:
            self.recorder.record(job, "undelivered", f"not relayed: {check.reason}")
            return
        outbox.put_nowait(job)

    def _answers_confirmation(self, job: Job) -> bool:
        """When a confirmation waits and this utterance is a plain yes or no, give it to the
        Avatar Controller as the answer (and record it so), instead of relaying it to the EO."""
        text = str(job.body.get("text", ""))
        answered = self.confirmation.answer(text, self.clock.now_ms())
        if answered is None:
            return False
        pending, accept = answered
        self.bus.publish(self.topics.confirm_answer(),
                         ConfirmAnswer(source=self.worker_id, confirm_id=pending.confirm_id, accept=accept, text=text))
        self.recorder.record(job, "answered", f"{'accepted' if accept else 'declined'} {pending.seller or 'the seller'}'s deal")
        return True

    def _release_held(self, outbox: Outbox, everything: bool = False) -> None:
        """Dispatch the held utterances once a round state is known, and those whose TTL ran
        out before one was (recorded undelivered: no round state received)."""
        for utterance in self.held.release(self.clock.now_ms() / 1000, everything or self.rounds.known):
            self._dispatch_safely(utterance, outbox, hold=False)

    def health(self) -> dict[str, Any]:
        round_check = self.rounds.check(self.clock.now_ms())
        return {**super().health(), **self.recorder.counts(), "delivery": self.delivery.describe(),
                "round": round_check.round_id, "round_reason": round_check.reason}
