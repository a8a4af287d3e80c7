"""Where the transcript worker writes down what happened: its counters, its session log and,
for every message, exactly one recorded outcome on the outgoing topic."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from humaine_platform.client import Blocked, Delivered, Failed, Outcome, Undelivered
from transcript.jobs import Job, OutcomeName
from transcript.session_log import SessionLog
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import EOVerdict, OutgoingMessage

COUNTED = ("finals", "echo_dropped", "too_old", "messages", "delivered", "blocked", "maybe_delivered", "failed",
           "undelivered", "answered", "internal_errors")
"""The figures in the worker's health: inputs, messages built and their outcomes, bugs met."""


class OutcomeRecorder:
    """Counts, session-log records and the one outcome of each message (logged, written and
    published). Thread-safe: the bus's thread and the worker's loop both write here."""

    def __init__(self, worker_id: str, session_log: SessionLog | None, publish: Callable[[OutgoingMessage], None],
                 log: logging.Logger) -> None:
        self._worker_id = worker_id
        self._session_log = session_log
        """None when ``[transcript] session_log`` is off."""
        self._publish = publish
        """Puts an outcome on the outgoing topic."""
        self._log = log
        self._drops = RateLimitedLog(log)
        self._counts = dict.fromkeys(COUNTED, 0)
        self._lock = threading.Lock()

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def count(self, name: str) -> None:
        with self._lock:
            self._counts[name] += 1

    def write(self, kind: str, **fields: Any) -> None:
        """One record in the session log (nothing when there is none)."""
        if self._session_log is not None:
            self._session_log.write(kind, **fields)

    def close(self) -> None:
        """The last record (the counts), and the session log closed."""
        self.write("session_end", counts=self.counts())
        if self._session_log is not None:
            self._session_log.close()

    def internal_error(self, what: str, exc: BaseException, **fields: Any) -> None:
        """A bug of ours met by one input: one line per kind (rate-limited), a session-log record."""
        self.count("internal_errors")
        self._drops.error(("internal", what, type(exc).__name__), "%s failed (%s: %.200s); it is recorded and the worker goes on",
                          what, type(exc).__name__, exc)
        self._log.debug("%s failed", what, exc_info=exc)
        try:
            self.write("internal_error", what=what, error=f"{type(exc).__name__}: {exc}"[:500], **fields)
        except Exception:  # the record itself failed: the line above is all that can be said
            pass

    def outcome(self, job: Job, outcome: Outcome, note: str = "") -> None:
        """Record what the relay answered (``note``: what the documented rules say of it)."""
        extra = _relay_figures(outcome, note)
        if isinstance(outcome, Delivered):
            self.record(job, "delivered", "", **extra)
        elif isinstance(outcome, Blocked):
            self.record(job, "blocked", outcome.rationale, **extra)
        elif isinstance(outcome, Undelivered):
            self.record(job, "undelivered", outcome.reason, **extra)
        elif outcome.expired:
            self.record(job, "undelivered", f"expired: {outcome.reason}", **extra)
        elif outcome.uncertain:
            self.record(job, "maybe_delivered", f"may have been delivered: {outcome.reason}", **extra)
        else:
            self.record(job, "failed", outcome.reason, reached=outcome.reached, **extra)

    def verdict(self, job: Job, failed: Failed, verdict: EOVerdict, note: str = "") -> None:
        """Record the EO's own verdict on a message whose relay failed in a way the EO may still
        have acted on: that decides, not the failed answer (``note``: what the documented rules
        say of a permitted message)."""
        extra = _relay_figures(failed, note, relay_error=failed.reason[:300])
        if verdict.permitted:
            self.record(job, "delivered", "the EO's verdict: permitted (its answer to the relay was lost)", **extra)
        else:
            self.record(job, "blocked", verdict.rationale or "blocked by the EO (no rationale given)", **extra)

    def record(self, job: Job, outcome: OutcomeName, reason: str, **extra: Any) -> None:
        """The one outcome of ``job``: counted, logged, written and published."""
        job.recorded = True
        self.count(outcome)
        text = str(job.body.get("text", ""))[:60]
        if outcome == "delivered":
            self._log.debug("message %s delivered", job.message_id)
        elif outcome == "answered":
            self._log.info("the buyer's %r %s", text, reason)
        else:
            self._log.warning("message %r %s: %s", text, outcome, reason)
        self.write("outcome", message_id=job.message_id, outcome=outcome, reason=reason, stages=job.stages, **extra)
        self._publish(OutgoingMessage(source=self._worker_id, id=job.message_id, message=job.body, outcome=outcome,
                                      reason=reason, stages=job.stages, **extra))



def _relay_figures(outcome: Outcome, note: str, **more: Any) -> dict[str, Any]:
    """What an outcome's record says of the relay: its attempts and latency, ``more``, and the
    rules' ``note`` when there is one."""
    extra: dict[str, Any] = {"attempts": outcome.attempts, "latency_ms": round(outcome.latency_ms, 2), **more}
    if note:
        extra["rule_note"] = note
    return extra
