"""The delivery task of the transcript worker: one message at a time to the EO, in the order
spoken, each ending in exactly one recorded outcome."""

from __future__ import annotations

import asyncio
import contextlib

from hardware.clock import Clock
from humaine_platform.client import Blocked, Delivered, Failed, Outcome
from humaine_platform.rules import Proposal
from transcript.delivery import Delivery
from transcript.jobs import Job
from transcript.outcomes import OutcomeRecorder
from transcript.rounds import RoundTracker
from transcript.rule_notes import RuleNotes
from transcript.verdicts import Verdicts
from workers.runtime.messages import EOVerdict, Stage

Outbox = asyncio.Queue[Job | None]
"""The jobs to send, in order; None ends the task."""


class Sender:
    """Sends each queued job unless it expired or its round changed while queued, and records
    what came of it (with the EO's verdict when its answer is missing)."""

    def __init__(self, delivery: Delivery, rounds: RoundTracker, clock: Clock, recorder: OutcomeRecorder,
                 verdicts: Verdicts, notes: RuleNotes, ttl_s: float) -> None:
        self._delivery = delivery
        self._rounds = rounds
        self._clock = clock
        self._recorder = recorder
        self._verdicts = verdicts
        self._notes = notes
        self._ttl_s = ttl_s

    async def run(self, outbox: Outbox) -> None:
        """One job at a time until None; a job that raises is recorded ``failed`` (or
        ``maybe_delivered`` once it was sent) and the next one goes."""
        while True:
            job = await outbox.get()
            if job is None:
                return
            try:
                await self._send(job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._recorder.internal_error("delivering a message", exc, message_id=job.message_id)
                if not job.recorded:
                    sent = Stage.RELAY_SENT in job.stages  # it may have reached the EO: never "failed"
                    with contextlib.suppress(Exception):
                        self._recorder.record(job, "maybe_delivered" if sent else "failed",
                                              f"internal error while delivering: {type(exc).__name__}")

    async def _send(self, job: Job) -> None:
        if job.expired(self._clock_s()):
            self._recorder.record(job, "undelivered", f"expired: not sent within {self._ttl_s:g} s")
            return
        check = self._rounds.check(self._clock.now_ms())
        if not check.active or check.round_id != job.body.get("roundId"):
            self._recorder.record(job, "undelivered", f"not relayed: round changed while queued ({check.reason})")
            return
        proposal = Proposal.from_body(job.body, self._clock.now_ms())
        job.stages[Stage.RELAY_SENT] = self._clock.now_ms()
        try:
            outcome = await self._relay(job)
            if isinstance(outcome, Failed) and outcome.uncertain:
                verdict = await self._verdicts.on(job.body)
                if verdict is not None:
                    self._decided_by_verdict(job, outcome, verdict, proposal)
                    return
        except asyncio.CancelledError:
            self._recorder.record(job, "maybe_delivered", "worker stopped while sending (it may have arrived)")
            raise
        self._recorder.outcome(job, outcome, self._notes.note(proposal, outcome, self._clock.now_ms()))

    async def _relay(self, job: Job) -> Outcome:
        """The EO's answer, with the rationale of a block (from its verdict when the answer has none)."""
        outcome = await self._delivery.send(job.body, job.monotonic_deadline(self._clock_s()))
        if isinstance(outcome, (Delivered, Blocked)):
            job.stages[Stage.EO_ANSWER] = self._clock.now_ms()
        if isinstance(outcome, Blocked) and not outcome.rationale:
            outcome = Blocked(await self._verdicts.rationale(job.body), outcome.answer, outcome.attempts, outcome.latency_ms)
        return outcome

    def _decided_by_verdict(self, job: Job, failed: Failed, verdict: EOVerdict, proposal: Proposal) -> None:
        """The relay failed in a way the EO may still have acted on (no answer in time, a server
        error, a failed dependency such as its human-side service dying mid-relay), and the EO's
        own verdict on the message arrived: that decides, not the failed answer."""
        note = ""
        if verdict.permitted:
            note = self._notes.note(proposal, Delivered(None, failed.attempts, failed.latency_ms), self._clock.now_ms())
        self._recorder.verdict(job, failed, verdict, note)

    def _clock_s(self) -> float:
        """Now on the worker's clock, in seconds (the unit of the TTL deadlines)."""
        return self._clock.now_ms() / 1000
