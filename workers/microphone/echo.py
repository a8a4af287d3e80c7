"""Echo gating: what the microphone hears while an avatar speaks is (mostly) the avatar.

The avatar controller publishes retained speaking begin/end events per avatar. An utterance
whose span overlaps any avatar's speaking interval, extended by a tail for room reverb and
playback buffers, is echo. Intervals are kept for a while so an utterance that is finalized
after the avatar stopped is still judged against the right history.
"""

from __future__ import annotations

import threading

from workers.runtime.messages import Speaking

HISTORY_MS = 120_000
"""Closed speaking intervals older than this (relative to the newest event) are forgotten."""


class EchoGate:
    def __init__(self, tail_ms: int = 600) -> None:
        self.tail_ms = tail_ms
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}
        self._closed: list[tuple[int, int]] = []

    def on_speaking(self, event: Speaking) -> None:
        with self._lock:
            if event.state == "begin":
                self._open.setdefault(event.avatar, event.at)
            else:
                began = self._open.pop(event.avatar, None)
                if began is not None:
                    self._closed.append((began, event.at))
                horizon = event.at - HISTORY_MS
                self._closed = [(b, e) for b, e in self._closed if e >= horizon]

    def use_tail(self, tail_ms: int) -> None:
        """How long after an avatar stopped its echo is still heard from now on (the echo
        canceller started: what is left after it is short)."""
        with self._lock:
            self.tail_ms = tail_ms

    def speaking_now(self) -> bool:
        with self._lock:
            return bool(self._open)

    def speaking_at(self, t_ms: int) -> bool:
        """Whether an avatar was speaking at ``t_ms`` of the audio clock: what a block captured
        then heard, whenever it is processed (the capture's latency, a backlog after a stall).
        Judged by :meth:`speaking_now` instead, a block captured before the avatar began would
        teach the barge-in detector the room's silence as the echo, and the echo would then fire it."""
        with self._lock:
            if any(began <= t_ms for began in self._open.values()):
                return True
            return any(b <= t_ms <= e for b, e in self._closed)

    def is_echo(self, start_ms: int, end_ms: int) -> bool:
        """True when [start_ms, end_ms] overlaps an avatar's speech (plus the tail)."""
        with self._lock:
            if any(began <= end_ms for began in self._open.values()):
                return True
            return any(b <= end_ms and start_ms <= e + self.tail_ms for b, e in self._closed)
