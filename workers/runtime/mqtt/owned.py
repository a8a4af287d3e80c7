"""Retained states this client owns (:meth:`workers.runtime.bus.Bus.own`).

A retained state has one owner, which publishes it again over a payload there that cannot be
read (a retained non-JSON round state had blocked every utterance until someone cleared it by
hand) and after a reconnect on which the broker had lost its state (the retained message went
with it)."""

from __future__ import annotations

from collections.abc import Callable

from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import Envelope
from workers.runtime.mqtt.dispatch import DropLog, short
from workers.runtime.topics import Topic

CurrentState = Callable[[], Envelope | None]
"""The owner's state now (None: there is none, the retained message is cleared)."""


class OwnedStates:
    """The concrete topics this client owns, each with how to get its current state."""

    def __init__(self, worker_id: str, lines: RateLimitedLog, publish: Callable[[Topic, Envelope], None],
                 clear: Callable[[Topic], None]) -> None:
        self._worker_id = worker_id
        self._publish = publish
        self._clear = clear
        self._lines = lines
        self._drops = DropLog(lines)
        self._owned: dict[str, tuple[Topic, CurrentState]] = {}

    def own(self, topic: Topic, current: CurrentState) -> None:
        self._owned[topic.name] = (topic, current)

    def republish_all(self) -> None:
        """After a reconnect on which the broker lost its state: every owned state again."""
        for topic, _current in list(self._owned.values()):
            self.republish(topic, "")

    def republish(self, topic: Topic, reason: str) -> None:
        """Publish the owned state of ``topic`` (``reason``: why; empty after a lost broker state)."""
        try:
            state = self._owned[topic.name][1]()
        except Exception as exc:  # the owner's bug costs this republication, not the network thread
            self._drops.drop(topic.name, "owner's state failed", f"{type(exc).__name__}: {short(str(exc))}")
            return
        if reason:
            self._lines.warning(("replaced", topic.name), "an unreadable retained message on %s (%s) was replaced by "
                                   "the state of its owner %s", short(topic.name), reason, self._worker_id)
        if state is None:
            self._clear(topic)
        else:
            self._publish(topic, state)
