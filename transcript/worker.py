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
service, and the Avatar Controller publishes that verdict (``EOVerdict``); the worker waits up
to :data:`VERDICT_WAIT_S` for it to record the rationale.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from formats.session_files import SESSIONS_DIR
from hardware.clock import Clock, RealClock
from humaine_platform.client import Blocked, Delivered, Failed, Outcome, Undelivered
from humaine_platform.models import HUMAN
from humaine_platform.rules import Entry, Proposal, RuleSettings, Verdict, evaluate
from transcript.confirm_answer import spoken_answer
from transcript.delivery import Delivery
from transcript.fusion.addressee import GazePolicy, decide
from transcript.fusion.attention import AttentionHistory
from transcript.fusion.names import NameMatcher
from transcript.merging import Merger, Utterance
from transcript.outgoing import build_message
from transcript.rounds import RoundTracker
from transcript.session_log import SessionLog
from transcript.settings import TranscriptSettings
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
    Stage,
    Stages,
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
MAX_HELD_FOR_ROUND = 100
"""Utterances held while no round state is known yet (beyond it the oldest is recorded as
undelivered); each is held no longer than its TTL."""
MAX_EARLY = 10_000
"""Finals and voice events kept between connecting and the loop starting (a restarted worker's
persistent session delivers its backlog at once)."""

VERDICT_WAIT_S = 1.0
"""How long a blocked message waits for the EO's rationale (it comes over the Avatar Controller)."""
VERDICTS_KEPT = 256

OutcomeName = Literal["delivered", "blocked", "maybe_delivered", "failed", "undelivered", "answered"]
"""``answered``: the buyer's spoken yes or no to a pending confirmation, given to the Avatar
Controller instead of the EO (:mod:`transcript.confirm_answer`)."""


@dataclass
class _Job:
    message_id: str
    body: dict[str, Any]
    deadline: float
    """Seconds on the worker's clock (``clock.now_ms() / 1000``) after which it is no longer
    sent (the TTL); turned into a ``time.monotonic()`` deadline for the HTTP client when sent."""
    stages: Stages
    """Stage timestamps (:class:`~workers.runtime.messages.Stage`), completed as it is delivered."""
    recorded: bool = False
    """Its one outcome is recorded (never a second one)."""


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
        core = config.core
        self.avatars = list(core.avatars)
        self.environment_uuid = core.environment_uuid
        self.delivery = Delivery(self.settings, config.section(OrchestratorSettings), self.avatars)
        self.clock: Clock = clock or RealClock()
        super().__init__(config, worker_id, bus)
        s = self.settings
        self.bus.set_reads(s.finals_read())
        self.history = AttentionHistory(keep_ms=s.history_s * 1000)
        self.matcher = NameMatcher.build(self.avatars, s.name_aliases, s.greetings, s.name_max_prefix_words)
        self.policy = GazePolicy(
            lead_ms=s.gaze_lead_s * 1000,
            start_ms=s.gaze_start_s * 1000,
            start_weight=s.gaze_start_weight,
            min_share=s.gaze_min_share,
            stale_ms=s.camera_stale_s * 1000,
        )
        self.rounds = RoundTracker(s.round_id, s.relay_phases, s.round_deadline_grace_s * 1000)
        self.merger = Merger.from_settings(s, self.avatars)
        self.session_log: SessionLog | None = None
        if s.session_log:
            directory = Path(s.session_dir) if s.session_dir else core.data_dir / SESSIONS_DIR
            self.session_log = SessionLog.create(directory, f"transcript-{self.environment_uuid}", self._disk_error,
                                                 self._disk_recovered)
            # first in the file, before anything the subscriptions bring (a retained round state
            # arrives as soon as the bus connects, which may be before run() is called)
            self._log("session_start", environment=self.environment_uuid, worker=self.worker_id,
                      delivery=self.delivery.describe(), settings=self.settings.model_dump(mode="json"))
        self.counts: dict[str, int] = {
            "finals": 0, "echo_dropped": 0, "too_old": 0, "messages": 0,
            "delivered": 0, "blocked": 0, "maybe_delivered": 0, "failed": 0, "undelivered": 0, "answered": 0,
            "internal_errors": 0,
        }
        self._drops = RateLimitedLog(self.log)
        self._verdicts: dict[tuple[object, object], EOVerdict] = {}
        """The EO's recent verdicts on human messages, by (timestamp, text) of the message."""
        self._verdict_waiters: dict[tuple[object, object], asyncio.Future[EOVerdict]] = {}
        self._sent: list[Entry] = []
        self._last_sent_ms = 0
        self._agent_replied_ms = 0
        """When an agent's message was last permitted (the EO's verdicts): a documented-R0 note on
        a message sent after an agent answered would be noise."""
        """Our delivered messages, to explain outcomes with the documented rules."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inbox: asyncio.Queue[Transcript | VadEvent] | None = None
        self._early: list[Transcript | VadEvent] = []
        """What arrived before the loop ran (handed to it when it starts)."""
        self._stopping = False
        self._held: list[Utterance] = []
        self._pending_confirm: ConfirmPending | None = None
        """Complete utterances waiting for the first round state (a restarted worker gets its
        queued finals before the retained round state)."""
        self._lock = threading.Lock()
        # subscribe before the bus connects: the persistent session delivers its backlog at once
        topics = self.topics
        self.bus.subscribe(topics.transcript_final(), Transcript, self._on_transcript, on_invalid=self._on_invalid_final)
        self.bus.subscribe(topics.vad(), VadEvent, self._on_vad)
        self.bus.subscribe(topics.attention(), Attention, self._on_attention)
        self.bus.subscribe(topics.headpose(), HeadPose, self._on_headpose)
        self.bus.subscribe(topics.eo_verdict(), EOVerdict, self._on_verdict)
        self.bus.subscribe(topics.round_state(), RoundState, self._on_round,
                           on_invalid=lambda _t, reason: self.rounds.unreadable(reason))
        self.bus.subscribe(topics.confirm_pending(), ConfirmPending, self._on_confirm_pending)

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
        self._log("final_dropped", reason=reason[:300])

    def _on_vad(self, _topic: str, message: VadEvent) -> None:
        self._to_loop(message)

    def _to_loop(self, message: Transcript | VadEvent) -> None:
        with self._lock:
            loop, inbox, stopping = self._loop, self._inbox, self._stopping
            if (loop is None or inbox is None) and not stopping:
                if len(self._early) < MAX_EARLY:
                    self._early.append(message)
                    return
                stopping = True  # the loop never started: nothing will take it
        try:
            if loop is None or inbox is None:
                raise RuntimeError("not running")
            loop.call_soon_threadsafe(inbox.put_nowait, message)
        except RuntimeError:  # the worker is stopping: keep a trace of what it heard
            if isinstance(message, Transcript):
                self._log("final", transcript=message.model_dump(mode="json"), ignored="worker stopping")

    def _on_attention(self, _topic: str, message: Attention) -> None:
        if self.history.add(message.since, message.target):
            self._log("attention", target=message.target, since=message.since, previous=message.previous,
                      source=message.source)

    def _on_headpose(self, _topic: str, message: HeadPose) -> None:
        self.history.saw_headpose(message.frame_ts)

    def _on_verdict(self, _topic: str, message: EOVerdict) -> None:
        """Every verdict on a human message is kept a while: a rejection gives a blocked message
        its rationale, and a permitted log decides a relay whose answer was lost."""
        if message.message.get("speaker") != HUMAN:
            if message.permitted:
                self._agent_replied_ms = self.clock.now_ms()
            return
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._verdict_arrived, message)

    def _verdict_arrived(self, verdict: EOVerdict) -> None:
        key = (verdict.message.get("timestamp"), verdict.message.get("text"))
        if verdict.via == "rejection" or key not in self._verdicts:
            self._verdicts[key] = verdict
        while len(self._verdicts) > VERDICTS_KEPT:
            del self._verdicts[next(iter(self._verdicts))]
        waiter = self._verdict_waiters.pop(key, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(verdict)

    async def _verdict(self, body: dict[str, Any]) -> EOVerdict | None:
        """The EO's verdict on ``body`` as its human-side service heard it (waiting up to
        :data:`VERDICT_WAIT_S`), or None."""
        key = (body.get("timestamp"), body.get("text"))
        verdict = self._verdicts.get(key)
        if verdict is None:
            waiter = asyncio.get_running_loop().create_future()
            self._verdict_waiters[key] = waiter
            try:
                verdict = await asyncio.wait_for(waiter, VERDICT_WAIT_S)
            except (asyncio.TimeoutError, TimeoutError):
                return None
            finally:
                self._verdict_waiters.pop(key, None)
        return verdict

    async def _rationale(self, body: dict[str, Any]) -> str:
        """The EO's reason for blocking ``body``, as its human-side service heard it."""
        verdict = await self._verdict(body)
        if verdict is None:
            return "blocked by the EO (its rationale did not reach the Avatar Controller)"
        return verdict.rationale or "blocked by the EO (no rationale given)"

    def _on_confirm_pending(self, _topic: str, message: ConfirmPending) -> None:
        """The seller's Accept waiting for the buyer's yes or no (or none: ``confirm_id`` None)."""
        self._pending_confirm = message if message.confirm_id else None

    def _answers_confirmation(self, job: _Job) -> bool:
        """When a confirmation waits and this utterance is a plain yes or no, give it to the
        Avatar Controller as the answer (and record it so), instead of relaying it to the EO."""
        pending = self._pending_confirm
        if pending is None or pending.confirm_id is None or (pending.deadline is not None and self.clock.now_ms() > pending.deadline):
            return False
        text = str(job.body.get("text", ""))
        accept = spoken_answer(text, self.avatars)
        if accept is None:
            return False
        self._pending_confirm = None
        self.bus.publish(self.topics.confirm_answer(),
                         ConfirmAnswer(source=self.worker_id, confirm_id=pending.confirm_id, accept=accept, text=text))
        self._record(job, "answered", f"{'accepted' if accept else 'declined'} {pending.seller or 'the seller'}'s deal")
        return True

    def _on_round(self, _topic: str, message: RoundState) -> None:
        self.rounds.update(message)
        self._log("round_state", round_id=message.round_id, phase=message.phase,
                  phase_deadline=message.phase_deadline)

    # -- main loop ---------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        self.log.info("delivering to %s", self.delivery.describe())
        try:
            asyncio.run(self._main(stop))
        finally:
            self._log("session_end", counts=dict(self.counts))
            if self.session_log is not None:
                self.session_log.close()

    async def _main(self, stop: threading.Event) -> None:
        inbox: asyncio.Queue[Transcript | VadEvent] = asyncio.Queue()
        with self._lock:
            self._loop, self._inbox = asyncio.get_running_loop(), inbox
            for early in self._early:
                inbox.put_nowait(early)
            self._early.clear()
        outbox: asyncio.Queue[_Job | None] = asyncio.Queue()
        sender = asyncio.create_task(self._deliver_loop(outbox))
        try:
            while not stop.is_set():
                timeout = IDLE_POLL_S
                due = self.merger.next_due_ms()
                if due is not None:
                    timeout = max(0.0, min(timeout, (due - self.clock.now_ms()) / 1000))
                try:
                    received = await asyncio.wait_for(inbox.get(), timeout)
                except (asyncio.TimeoutError, TimeoutError):
                    received = None
                if received is not None:
                    self._take(received, outbox)
                for utterance in self._survived("the merger", lambda: self.merger.due(self.clock.now_ms())) or []:
                    self._dispatch_safely(utterance, outbox)
                self._survived("releasing held utterances", lambda: self._release_held(outbox))
                if sender.done():  # never expected (the loop catches per job): say it, start it again
                    self._internal_error("the delivery task", sender.exception() or RuntimeError("it returned"))
                    sender = asyncio.create_task(self._deliver_loop(outbox))
        finally:
            with self._lock:
                self._loop, self._stopping = None, True
            # a held utterance is complete now that no more speech will be taken
            for utterance in self._survived("the merger", self.merger.drain) or []:
                self._dispatch_safely(utterance, outbox)
            self._survived("releasing held utterances", lambda: self._release_held(outbox, everything=True))
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
                    self._record(job, "undelivered", "worker stopped before it could be sent")
            await self.delivery.aclose()

    # -- one input costs one record, never the loop -------------------------------------------
    def _take(self, received: Transcript | VadEvent, outbox: asyncio.Queue[_Job | None]) -> None:
        """One final or voice event into the merger. Whatever it raises costs that one input (a
        ``final_failed`` record and one rate-limited line), never the loop: an exception escaping
        here once stopped every later outcome while the status stayed ``online``."""
        if isinstance(received, VadEvent):
            self._survived("a voice event", lambda: self.merger.speech(received, self.clock.now_ms()))
            return
        try:
            utterances = self._accept(received)
        except Exception as exc:
            self._internal_error("a final transcript", exc, utterance_id=received.utterance_id, source=received.source)
            return
        for utterance in utterances:
            self._dispatch_safely(utterance, outbox)

    def _dispatch_safely(self, utterance: Utterance, outbox: asyncio.Queue[_Job | None], hold: bool = True) -> None:
        self._survived("an utterance", lambda: self._dispatch(utterance, outbox, hold), text=utterance.text[:200])

    def _survived(self, what: str, step: Any, **fields: Any) -> Any:
        """``step()``, or None after recording why it failed."""
        try:
            return step()
        except Exception as exc:
            self._internal_error(what, exc, **fields)
            return None

    def _internal_error(self, what: str, exc: BaseException, **fields: Any) -> None:
        """A bug of ours met by one input: one line per kind (rate-limited), a session-log record."""
        with self._lock:
            self.counts["internal_errors"] += 1
        self._drops.error(("internal", what, type(exc).__name__), "%s failed (%s: %.200s); it is recorded and the worker goes on",
                          what, type(exc).__name__, exc)
        self.log.debug("%s failed", what, exc_info=exc)
        try:
            self._log("internal_error", what=what, error=f"{type(exc).__name__}: {exc}"[:500], **fields)
        except Exception:  # the record itself failed: the line above is all that can be said
            pass

    def _accept(self, part: Transcript) -> list[Utterance]:
        self.counts["finals"] += 1
        self._log("final", transcript=part.model_dump(mode="json"))
        if part.echo and self.settings.ignore_echo:
            self.counts["echo_dropped"] += 1
            return []
        if not part.text.strip():
            return []
        # how long the broker held it: wall time since it was published (the envelope's ``ts`` is
        # the publisher's wall clock), on purpose not the worker's clock - the audio clock of a
        # replay is in the past by design, and a message's time in the broker is real time
        age_s = (now_ms() - part.ts) / 1000
        if age_s > self.settings.max_final_age_s:
            self.counts["too_old"] += 1
            self._log("final_ignored", utterance_id=part.utterance_id, reason=f"too old: published {age_s:.0f} s ago")
            self._drops.warning("too old", "final transcripts published over %g s ago are not relayed (the last: %.0f s)",
                                self.settings.max_final_age_s, age_s)
            return []
        now = self.clock.now_ms()
        # the TTL runs on the worker's clock too (in seconds, as the merger keeps it)
        return self.merger.add(part, now, now_mono=now / 1000)

    def _dispatch(self, utterance: Utterance, outbox: asyncio.Queue[_Job | None], hold: bool = True) -> None:
        """Fuse, build and queue (or record as undelivered) one complete utterance; while no
        round state is known yet, hold it (see :meth:`_release_held`)."""
        if utterance.released_ms is None:  # when the merger let it go
            utterance.released_ms = self.clock.now_ms()
        if hold and (self._held or not self.rounds.known):  # behind held ones: in the order spoken
            self._held.append(utterance)
            if len(self._held) > MAX_HELD_FOR_ROUND:
                self._dispatch_safely(self._held.pop(0), outbox, hold=False)
            return
        decision = decide(
            utterance.text, utterance.speech_start, utterance.end, self.history, self.matcher, self.avatars, self.policy
        )
        check = self.rounds.check(self.clock.now_ms())
        body = build_message(utterance, decision, self.environment_uuid, check.round_id)
        job = _Job(new_id(), body, utterance.arrived_mono + self.settings.ttl_s, utterance.stages())
        self.counts["messages"] += 1
        self._log("message", message_id=job.message_id, message=body, addressee_detail=decision.detail,
                  held_because=utterance.held_because)
        if self._answers_confirmation(job):
            return
        if not check.active:
            self._record(job, "undelivered", f"not relayed: {check.reason}")
            return
        outbox.put_nowait(job)

    def _release_held(self, outbox: asyncio.Queue[_Job | None], everything: bool = False) -> None:
        """Dispatch the held utterances once a round state is known, and those whose TTL ran
        out before one was (recorded undelivered: no round state received)."""
        if not self._held:
            return
        now = self._clock_s()
        release_all = everything or self.rounds.known
        keep = []
        for utterance in self._held:
            if release_all or now >= utterance.arrived_mono + self.settings.ttl_s:
                self._dispatch_safely(utterance, outbox, hold=False)
            else:
                keep.append(utterance)
        self._held = keep

    def _clock_s(self) -> float:
        """Now on the worker's clock, in seconds (the unit of the TTL deadlines)."""
        return self.clock.now_ms() / 1000

    def _monotonic_deadline(self, job: _Job) -> float:
        """The TTL of ``job`` as the HTTP client takes it: a ``time.monotonic()`` deadline for
        its real retries and timeouts, as much later as the job has left on the worker's clock."""
        return time.monotonic() + max(0.0, job.deadline - self._clock_s())

    async def _deliver_loop(self, outbox: asyncio.Queue[_Job | None]) -> None:
        """One job at a time; a job that raises is recorded ``failed`` and the next one goes."""
        while True:
            job = await outbox.get()
            if job is None:
                return
            try:
                await self._deliver_one(job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._internal_error("delivering a message", exc, message_id=job.message_id)
                if not job.recorded:
                    sent = Stage.RELAY_SENT in job.stages  # it may have reached the EO: never "failed"
                    with contextlib.suppress(Exception):
                        self._record(job, "maybe_delivered" if sent else "failed",
                                     f"internal error while delivering: {type(exc).__name__}")

    async def _deliver_one(self, job: _Job) -> None:
        if self._clock_s() >= job.deadline:
            self._record(job, "undelivered", f"expired: not sent within {self.settings.ttl_s:g} s")
            return
        check = self.rounds.check(self.clock.now_ms())
        if not check.active or check.round_id != job.body.get("roundId"):
            self._record(job, "undelivered", f"not relayed: round changed while queued ({check.reason})")
            return
        proposal = Proposal.from_body(job.body, self.clock.now_ms())
        job.stages[Stage.RELAY_SENT] = self.clock.now_ms()
        try:
            outcome = await self.delivery.send(job.body, self._monotonic_deadline(job))
            if isinstance(outcome, (Delivered, Blocked)):
                job.stages[Stage.EO_ANSWER] = self.clock.now_ms()
            if isinstance(outcome, Blocked) and not outcome.rationale:
                outcome = Blocked(await self._rationale(job.body), outcome.answer, outcome.attempts, outcome.latency_ms)
            if isinstance(outcome, Failed) and outcome.uncertain:
                verdict = await self._verdict(job.body)
                if verdict is not None:
                    self._record_verdict(job, outcome, verdict, proposal)
                    return
        except asyncio.CancelledError:
            self._record(job, "maybe_delivered", "worker stopped while sending (it may have arrived)")
            raise
        self._record_outcome(job, outcome, self._rule_note(proposal, outcome))

    def _record_verdict(self, job: _Job, failed: Failed, verdict: EOVerdict, proposal: Proposal) -> None:
        """The relay failed in a way the EO may still have acted on (no answer in time, a server
        error, a failed dependency such as its human-side service dying mid-relay), and the EO's
        own verdict on the message arrived: that decides, not the failed answer."""
        extra: dict[str, Any] = {"attempts": failed.attempts, "latency_ms": round(failed.latency_ms, 2),
                                 "relay_error": failed.reason[:300]}
        if verdict.permitted:
            note = self._rule_note(proposal, Delivered(None, failed.attempts, failed.latency_ms))
            if note:
                extra["rule_note"] = note
            self._record(job, "delivered", "the EO's verdict: permitted (its answer to the relay was lost)", **extra)
        else:
            self._record(job, "blocked", verdict.rationale or "blocked by the EO (no rationale given)", **extra)

    # -- outcomes ----------------------------------------------------------------------------
    def _rule_note(self, proposal: Proposal, outcome: Outcome) -> str:
        """What the documented rules say about a message we sent: the current EO does not
        apply R0 as documented, so a message it forwarded may still be one a conforming EO
        would block - worth a line in the log when agents seem not to answer."""
        verdict = evaluate(self._sent, proposal, RuleSettings.documented())
        answered = self._agent_replied_ms > self._last_sent_ms  # an agent spoke since our last message
        if isinstance(outcome, Delivered):
            self._sent.append(Entry(proposal, Verdict(True)))
            del self._sent[:-50]
            self._last_sent_ms = self.clock.now_ms()
        if verdict.permitted or (verdict.rule == "R0" and answered):
            return ""  # R0 only explains agents that do not answer: a note where they did is noise
        return f"the documented {verdict.rule} would block it ({verdict.rationale})"

    def _record_outcome(self, job: _Job, outcome: Outcome, note: str = "") -> None:
        extra: dict[str, Any] = {"attempts": outcome.attempts, "latency_ms": round(outcome.latency_ms, 2)}
        if note:
            extra["rule_note"] = note
        if isinstance(outcome, Delivered):
            self._record(job, "delivered", "", **extra)
        elif isinstance(outcome, Blocked):
            self._record(job, "blocked", outcome.rationale, **extra)
        elif isinstance(outcome, Undelivered):
            self._record(job, "undelivered", outcome.reason, **extra)
        elif isinstance(outcome, Failed) and outcome.expired:
            self._record(job, "undelivered", f"expired: {outcome.reason}", **extra)
        elif isinstance(outcome, Failed) and outcome.uncertain:
            self._record(job, "maybe_delivered", f"may have been delivered: {outcome.reason}", **extra)
        else:
            assert isinstance(outcome, Failed)
            self._record(job, "failed", outcome.reason, reached=outcome.reached, **extra)

    def _record(self, job: _Job, outcome: OutcomeName, reason: str, **extra: Any) -> None:
        job.recorded = True
        with self._lock:
            self.counts[outcome] += 1
        if outcome == "delivered":
            self.log.debug("message %s delivered", job.message_id)
        elif outcome == "answered":
            self.log.info("the buyer's %r %s", job.body.get("text", "")[:60], reason)
        else:
            self.log.warning("message %r %s: %s", job.body.get("text", "")[:60], outcome, reason)
        self._log("outcome", message_id=job.message_id, outcome=outcome, reason=reason, stages=job.stages, **extra)
        envelope = OutgoingMessage(
            source=self.worker_id, id=job.message_id, message=job.body, outcome=outcome, reason=reason,
            stages=job.stages, **extra
        )
        self.bus.publish(self.topics.outgoing_message(), envelope)

    def _log(self, kind: str, **fields: Any) -> None:
        if self.session_log is not None:
            self.session_log.write(kind, **fields)

    def health(self) -> dict[str, Any]:
        base = super().health()
        with self._lock:
            counts = dict(self.counts)
        round_check = self.rounds.check(self.clock.now_ms())
        return {**base, **counts, "delivery": self.delivery.describe(), "round": round_check.round_id,
                "round_reason": round_check.reason}
