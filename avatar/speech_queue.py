"""One speech queue for both avatars: one voice at a time, in arrival order.

Why one queue and not one per avatar: the buyer hears a single room; two avatars talking over
each other are unintelligible, and the microphone's echo gating is simplest with one speaker.
Why bounded and with an age limit: the EO forwards a message the moment it permits it, and an
avatar reading out a reply from half a minute ago (while the agents have moved on) confuses the
buyer more than silence does. Every message that is not spoken is logged with the reason.

The HTTP handler only calls :meth:`SpeechQueue.submit`, which never blocks: the EO waits for
our answer, and our slowness would hold up the agents.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from avatar.ssml import SpeechText
from workers.runtime.messages import Stages

log = logging.getLogger(__name__)

STOP_WAIT_S = 1.5


@dataclass
class SpeechRequest:
    """One message to be spoken by one avatar."""

    avatar: str
    text: SpeechText
    message_id: str
    gestures: list[str] = field(default_factory=list)
    """Played when the avatar starts speaking this message."""
    received: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` when the message reached the controller (age is measured from here)."""
    stages: Stages = field(default_factory=dict)
    """Stage timestamps of this message (:class:`~workers.runtime.messages.Stage`): received, then
    first audio and speaking end as they happen."""


Verdict = Literal["queued", "too_long", "queue_full", "stopped"]


@dataclass
class QueueStats:
    queued: int = 0
    spoken: int = 0
    refused_too_long: int = 0
    refused_full: int = 0
    dropped_stale: int = 0
    failed: int = 0


class SpeechQueue:
    """Feeds :class:`SpeechRequest` objects, one at a time, to ``speak`` on its own thread."""

    def __init__(
        self,
        speak: Callable[[SpeechRequest], None],
        max_length: int,
        stale_after_s: float,
        max_words: int,
        on_drop: Callable[[SpeechRequest, str], None] | None = None,
    ) -> None:
        self._speak = speak
        self.max_length = max_length
        self.stale_after_s = stale_after_s
        self.max_words = max_words
        self._on_drop = on_drop
        self._items: collections.deque[SpeechRequest] = collections.deque()
        self._cond = threading.Condition()
        self._busy = False
        self._stopping = False
        self._held_until = 0.0
        """Monotonic time until which nothing more is spoken (the buyer has the floor)."""
        self.stats = QueueStats()
        self._thread = threading.Thread(target=self._loop, name="avatar-speech", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, request: SpeechRequest) -> Verdict:
        """Queue ``request`` unless a rule refuses it; never blocks."""
        # the words it would take to say, not only the ones written apart: spelling out or
        # gluing together does not get round the platform's rule
        words = max(request.text.word_count, request.text.spoken_words)
        if words > self.max_words:
            self.stats.refused_too_long += 1
            log.warning(
                "not speaking %s's message %s: %d words (as spoken), over the %d-word limit (R4)",
                request.avatar, request.message_id, words, self.max_words,
            )
            self._dropped(request, "too_long")
            return "too_long"
        with self._cond:
            if self._stopping:
                return "stopped"
            if len(self._items) >= self.max_length:
                self.stats.refused_full += 1
                log.warning(
                    "not speaking %s's message %s: %d messages already waiting (queue_max)",
                    request.avatar, request.message_id, len(self._items),
                )
                full = True
            else:
                full = False
                self._items.append(request)
                self.stats.queued += 1
                self._cond.notify_all()
        if full:
            self._dropped(request, "queue_full")
            return "queue_full"
        return "queued"

    def hold(self, seconds: float) -> None:
        """Speak nothing more for up to ``seconds`` (what waits keeps waiting), until :meth:`release`."""
        with self._cond:
            self._held_until = time.monotonic() + seconds
            self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            self._held_until = 0.0
            self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._items)

    def idle(self) -> bool:
        with self._cond:
            return not self._items and not self._busy

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing is waiting or being spoken (tests, shutdown, benchmarks)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._items or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def stop(self) -> None:
        """Forget what is waiting and end the thread after the current utterance (which the
        caller may cancel on the speaker)."""
        with self._cond:
            self._stopping = True
            self._items.clear()
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(STOP_WAIT_S)

    def _dropped(self, request: SpeechRequest, reason: str) -> None:
        if self._on_drop is not None:
            try:
                self._on_drop(request, reason)
            except Exception:
                log.exception("drop callback failed")

    def _next(self) -> SpeechRequest | None:
        with self._cond:
            while not self._stopping:
                held_s = self._held_until - time.monotonic()
                if self._items and held_s <= 0:
                    break
                self._cond.wait(held_s if held_s > 0 else None)
            if self._stopping:
                return None
            self._busy = True
            return self._items.popleft()

    def _loop(self) -> None:
        while True:
            request = self._next()
            if request is None:
                return
            try:
                age = time.monotonic() - request.received
                if age > self.stale_after_s:
                    self.stats.dropped_stale += 1
                    log.warning(
                        "not speaking %s's message %s: it waited %.1f s (stale_after_s is %.1f)",
                        request.avatar, request.message_id, age, self.stale_after_s,
                    )
                    self._dropped(request, "stale")
                else:
                    self._speak(request)
                    self.stats.spoken += 1
            except Exception as exc:  # one bad utterance must not silence the avatars
                self.stats.failed += 1
                log.error("speaking %s's message %s failed: %s", request.avatar, request.message_id, exc)
                self._dropped(request, "failed")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
