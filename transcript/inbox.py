"""The hand-over from the bus's network thread to the transcript worker's event loop.

Finals and voice events may arrive before the loop runs (a restarted worker's persistent
session delivers its backlog as soon as it connects): up to :data:`MAX_EARLY` wait and are
handed to the loop when it starts. Once the worker stops, nothing more is taken."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

from workers.runtime.messages import Transcript, VadEvent

MAX_EARLY = 10_000
"""Finals and voice events kept between connecting and the loop starting."""

Heard = Transcript | VadEvent
"""What the loop takes from the bus: a final transcript or a voice event."""

T = TypeVar("T")


class LoopInbox:
    """Thread-safe: :meth:`put` and :meth:`call` run on the bus's thread, :meth:`open` and
    :meth:`close` on the loop."""

    def __init__(self, max_early: int = MAX_EARLY) -> None:
        self._max_early = max_early
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        """The worker's loop while it runs."""
        self._queue: asyncio.Queue[Heard] | None = None
        """The loop's queue while it runs."""
        self._early: list[Heard] = []
        """What arrived before the loop ran (handed to it when it starts)."""
        self._closed = False
        """The loop has ended: nothing more is taken."""

    def open(self) -> asyncio.Queue[Heard]:
        """On the loop: its queue, holding what arrived early."""
        queue: asyncio.Queue[Heard] = asyncio.Queue()
        with self._lock:
            self._loop, self._queue = asyncio.get_running_loop(), queue
            for early in self._early:
                queue.put_nowait(early)
            self._early.clear()
        return queue

    def close(self) -> None:
        with self._lock:
            self._loop, self._closed = None, True

    def put(self, message: Heard) -> bool:
        """Hand ``message`` to the loop (or keep it until the loop runs); False when nothing
        will take it (the worker is stopping, or too much arrived before the loop ran)."""
        with self._lock:
            loop, queue, closed = self._loop, self._queue, self._closed
            if (loop is None or queue is None) and not closed:
                if len(self._early) < self._max_early:
                    self._early.append(message)
                    return True
                return False  # the loop never started: nothing will take it
        if loop is None or queue is None:
            return False
        try:
            loop.call_soon_threadsafe(queue.put_nowait, message)
        except RuntimeError:  # the loop is closing
            return False
        return True

    def call(self, step: Callable[[T], object], arg: T) -> None:
        """Run ``step(arg)`` on the loop if it runs (else it is dropped)."""
        with self._lock:
            loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(step, arg)
