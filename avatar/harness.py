"""Running a whole Avatar Controller inside the current process, and watching what it publishes.

The benchmark and the tests need the real thing - HTTP on a real port, the real speaker, the
real MQTT broker - but started and stopped from Python with a configuration of their own, and
a way to see the MQTT events the controller emits. This is that, nothing more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from avatar.worker import AvatarWorker
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import (
    AgentMessageSeen,
    ConfirmPending,
    Envelope,
    EOVerdict,
    Gesture,
    OutgoingMessage,
    RoundState,
    Speaking,
)


@dataclass
class Seen:
    topic: str
    message: Envelope
    received: float = field(default_factory=time.monotonic)


def utterance(message: Speaking) -> bool:
    """A speaking event of an actual utterance (not the start-up reset, which has no message)."""
    return bool(message.message_id)


class Observer:
    """Collects the room's MQTT events (speaking, gestures, round state, messages, the transcript
    worker's outcomes, pending confirmations)."""

    def __init__(self, config: Config, name: str = "observer") -> None:
        self.bus = Bus(config, name, persistent=False)
        self.topics = self.bus.topics
        self.seen: list[Seen] = []
        self._cond = threading.Condition()
        self.bus.subscribe(self.topics.round_state(), RoundState, self._add)
        self.bus.subscribe(self.topics.all_speaking(), Speaking, self._add)
        self.bus.subscribe(self.topics.all_gestures(), Gesture, self._add)
        self.bus.subscribe(self.topics.agent_message(), AgentMessageSeen, self._add)
        self.bus.subscribe(self.topics.eo_verdict(), EOVerdict, self._add)
        self.bus.subscribe(self.topics.outgoing_message(), OutgoingMessage, self._add)
        self.bus.subscribe(self.topics.confirm_pending(), ConfirmPending, self._add)

    def _add(self, topic: str, message: Envelope) -> None:
        with self._cond:
            self.seen.append(Seen(topic, message))
            self._cond.notify_all()

    def start(self, timeout: float = 10.0) -> Observer:
        self.bus.start()
        if not self.bus.wait_connected(timeout):
            raise RuntimeError(f"observer could not connect to the broker at {self.bus.address.url}")
        return self

    def stop(self) -> None:
        self.bus.stop()

    def _select(self, kind: type[Envelope], where: Callable[[Any], bool] | None, match: dict[str, Any]) -> list[Any]:
        return [s.message for s in self.seen if isinstance(s.message, kind)
                and all(getattr(s.message, k) == v for k, v in match.items())
                and (where is None or where(s.message))]

    def of(self, kind: type[Envelope], where: Callable[[Any], bool] | None = None, **match: Any) -> list[Any]:
        with self._cond:
            return self._select(kind, where, match)

    def wait(
        self,
        kind: type[Envelope],
        count: int = 1,
        timeout: float = 10.0,
        where: Callable[[Any], bool] | None = None,
        **match: Any,
    ) -> list[Any]:
        """The first ``count`` messages of ``kind`` with fields equal to ``match`` (and
        ``where(message)`` true); raises :class:`TimeoutError` after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = self._select(kind, where, match)
                if len(found) >= count:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"saw {len(found)} of {count} {kind.__name__} {match} in {timeout} s")
                self._cond.wait(remaining)


class LocalAvatar:
    """An :class:`AvatarWorker` serving on 127.0.0.1 (``avatar.port = 0``: a free port)."""

    def __init__(self, config: Config) -> None:
        self.worker = AvatarWorker(config)
        self.controller = self.worker.controller

    @property
    def url(self) -> str:
        return self.worker.server.url

    def start(self, timeout: float = 10.0) -> LocalAvatar:
        self.worker.start()
        if not self.worker.bus.wait_connected(timeout):
            raise RuntimeError("the Avatar Controller could not connect to the broker")
        self.worker.serve()
        return self

    def stop(self) -> None:
        self.worker.server.stop()
        self.worker.close()

    def __enter__(self) -> LocalAvatar:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
