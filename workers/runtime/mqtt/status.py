"""The retained status of one worker: who it is (host, pid, start: the origin every envelope it
publishes carries), its state and health, and which instance owns its client id."""

from __future__ import annotations

import enum
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any

from workers.runtime import __version__
from workers.runtime.messages import Origin, Status, WorkerState, now_ms

HealthCheck = Callable[[], dict[str, Any]]
"""The owner's health figures, published in every status but ``offline``."""


class Claim(enum.Enum):
    """What to do about a status of someone else on our own status topic."""

    NOTHING = "nothing"
    """Our own status, a newer instance's ``offline``, or a takeover already seen: nothing to do."""
    YIELD = "yield"
    """A newer instance took our client id over: this one stops."""
    REASSERT = "reassert"
    """An older instance (or its last will) wrote there: our status goes over it again."""


class StatusKeeper:
    """What this worker's retained status says, built afresh each time it is published."""

    def __init__(self, worker_id: str, health: HealthCheck | None, refresh_s: float | None) -> None:
        self._worker_id = worker_id
        self._health = health
        self._refresh_s = refresh_s
        """How often the owner refreshes its status, said in every status so that others can
        tell a silent worker from a client that never refreshes."""
        self._origin = Origin(host=socket.gethostname(), pid=os.getpid(), started_at=now_ms())
        self._state: WorkerState = "starting"
        self._detail = ""
        self._fallback = False
        """Sticky: once the room goes on without this worker by design, every later status says so."""
        self._reads: tuple[str, ...] = ()
        """What the owner reads of others' messages (:attr:`~workers.runtime.messages.Status.reads`)."""
        self._taken_over: Status | None = None

    @property
    def origin(self) -> Origin:
        """This process as its retained status names it: every envelope it publishes carries it."""
        return self._origin

    @property
    def taken_over(self) -> Status | None:
        """The newer instance of this worker that took our client id over (we then stop)."""
        return self._taken_over

    def set_reads(self, reads: Sequence[str]) -> None:
        self._reads = tuple(reads)

    def set(self, state: WorkerState, detail: str, fallback: bool = False) -> Status:
        """Remember the state the owner reports and return the status that says it."""
        self._state, self._detail = state, detail
        self._fallback = self._fallback or fallback
        return self.current()

    def current(self) -> Status:
        """The current state, with fresh health figures."""
        return self._status(self._state, self._detail)

    def on_connect(self, ready: bool) -> Status:
        """The status published on (re)connecting: ``online`` if still ``starting`` and ``ready``."""
        state: WorkerState = "online" if self._state == "starting" and ready else self._state
        return self.set(state, self._detail)

    def offline(self, reason: str) -> Status:
        """The ``offline`` status (also the last will): no health figures."""
        return self._status("offline", reason)

    def claim(self, other: Status) -> Claim:
        """Someone else's status on our status topic: our client id is shared.

        The broker lets one connection hold a client id and silently drops the older one, so
        two instances knock each other off for ever. The newest instance keeps the id: an older
        one stops reconnecting (the worker then exits, see :mod:`workers.runtime.worker`); the
        newer one republishes its status over the older one's (and over its last will)."""
        me = self._origin
        if other.pid == me.pid and other.host == me.host:
            return Claim.NOTHING
        newer = (other.started_at, other.host, other.pid) > (me.started_at, me.host, me.pid)
        if not newer:
            return Claim.REASSERT
        if other.state == "offline" or self._taken_over is not None:
            return Claim.NOTHING
        self._taken_over = other
        return Claim.YIELD

    def _status(self, state: WorkerState, detail: str) -> Status:
        health: dict[str, Any] = {}
        if self._health is not None and state != "offline":
            try:
                health = self._health()
            except Exception as exc:  # health must never break status publishing
                health = {"error": f"health check failed: {exc}"}
        origin = self._origin
        return Status(
            source=self._worker_id, state=state, worker=self._worker_id, version=__version__,
            host=origin.host, pid=origin.pid, started_at=origin.started_at, detail=detail, health=health,
            reads=list(self._reads), refresh_s=self._refresh_s, fallback=self._fallback,
        )
