"""From a payload on the wire to the handlers of the subscriptions it matches.

A bad payload must never kill a subscriber: oversized, non-JSON (strictly: no NaN, bounded
nesting and numbers), invalid payloads and handler failures of any kind drop that one message
with one rate-limited line, and QoS 1 redeliveries are dropped by envelope ``id``. A message
matching no subscription is named in a (rate-limited) line, never dropped silently.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import Envelope
from workers.runtime.mqtt.stats import BusStats
from workers.runtime.strict_json import StrictJSONError
from workers.runtime.strict_json import loads as strict_loads
from workers.runtime.topics import Topic
from workers.runtime.validation_text import error_line

Handler = Callable[[str, Any], None]
"""``handler(concrete_topic, message)``: a valid message on a subscribed topic."""
InvalidHandler = Callable[[str, str], None]
"""``on_invalid(concrete_topic, reason)``: a payload on a subscribed topic was dropped as invalid."""

DROP_LOG_INTERVAL_S = 60.0
"""Repeated drops of the same kind on the same topic are summarised at most this often."""
SEEN_IDS_KEPT = 4096
"""How many envelope ids a subscription remembers to drop QoS 1 redeliveries."""
REASON_MAX_CHARS = 200
"""Longest reason quoted in a log line (a hostile payload's text must not fill the log)."""


def short(text: str) -> str:
    """``text`` cut to :data:`REASON_MAX_CHARS` for a log line."""
    return text if len(text) <= REASON_MAX_CHARS else text[:REASON_MAX_CHARS] + "..."


class DropLog:
    """One line per kind of dropped payload and topic, summarised when it repeats quickly
    (through the bus's one :class:`RateLimitedLog`, keyed by topic and kind)."""

    def __init__(self, lines: RateLimitedLog) -> None:
        self._lines = lines

    def drop(self, topic: str, kind: str, reason: str) -> None:
        self._lines.warning((topic, kind), "dropped a payload on %s: %s: %s", short(topic), kind, reason)


@dataclass
class Subscription:
    """One ``subscribe`` call: its filter, the model its payloads must be and who is told."""

    topic: Topic
    model: type[Envelope]
    handler: Handler
    on_invalid: InvalidHandler | None = None
    seen: OrderedDict[str, None] = field(default_factory=OrderedDict)
    """Envelope ids already handed over (the most recent :data:`SEEN_IDS_KEPT`)."""

    def first_time(self, message_id: str) -> bool:
        """True unless ``message_id`` was handed over before (a QoS 1 redelivery)."""
        if message_id in self.seen:
            return False
        self.seen[message_id] = None
        if len(self.seen) > SEEN_IDS_KEPT:
            self.seen.popitem(last=False)
        return True


@dataclass(frozen=True)
class Received:
    """One payload from the broker, as the dispatcher needs it (paho's message, unwrapped)."""

    topic: str
    payload: bytes | bytearray
    qos: int
    retain: bool


class Dispatcher:
    """The subscriptions of one bus and the checks every payload passes before a handler sees it.

    :meth:`receive` runs on the MQTT network thread and never raises."""

    def __init__(self, worker_id: str, max_payload_bytes: int, stats: BusStats, lines: RateLimitedLog) -> None:
        self._worker_id = worker_id
        self._max_payload_bytes = max_payload_bytes
        self._stats = stats
        self._log = lines.logger
        self._drops = DropLog(lines)
        self._subscriptions: list[Subscription] = []
        self._lock = threading.Lock()

    def add(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscriptions.append(subscription)

    def filters(self) -> list[tuple[str, int]]:
        """Every (filter, QoS) subscribed, once each and sorted: what the broker must hold."""
        with self._lock:
            return sorted({(s.topic.name, s.topic.qos) for s in self._subscriptions})

    def receive(self, message: Received) -> None:
        """Never raises: whatever goes wrong drops this one message with one rate-limited line."""
        try:
            self._receive(message)
        except Exception as exc:  # a bug of ours must cost one message, not the network thread
            self._stats.handler_errors += 1
            self._drops.drop(message.topic, "internal error", f"{type(exc).__name__}: {exc}")

    def _receive(self, msg: Received) -> None:
        self._stats.received += 1
        if not msg.payload:
            return  # empty payload = a retained message being cleared
        with self._lock:
            matching = [s for s in self._subscriptions if s.topic.matches(msg.topic)]
        if not matching:
            self._unhandled(msg)
            return
        if len(msg.payload) > self._max_payload_bytes:
            self._stats.dropped_oversized += 1
            self._drops.drop(msg.topic, "oversized", f"{len(msg.payload)} bytes > limit {self._max_payload_bytes}")
            return
        try:
            data = strict_loads(msg.payload)
        except StrictJSONError as exc:
            self._stats.dropped_invalid += 1
            self._drops.drop(msg.topic, "not JSON", short(str(exc)))
            for sub in matching:
                self._invalid(sub, msg.topic, f"not JSON: {short(str(exc))}")
            return
        for sub in matching:
            self._deliver(sub, msg, data)

    def _unhandled(self, msg: Received) -> None:
        self._stats.dropped_unhandled += 1
        if msg.retain:
            # a state we did not ask for: the embedded broker (amqtt 0.12) sends a new client
            # the retained messages of other clients' subscriptions; nothing is lost
            self._log.debug("ignored a retained message on %s: no subscription of %s matches", msg.topic, self._worker_id)
        else:
            # a persistent session delivers what it queued for us before we subscribe again
            self._drops.drop(msg.topic, "no handler", f"no subscription of {self._worker_id} matches (subscribe before start)")

    def _invalid(self, sub: Subscription, topic: str, reason: str) -> None:
        """Tell the subscriber a payload was dropped as invalid (its failure costs a line)."""
        if sub.on_invalid is None:
            return
        try:
            sub.on_invalid(topic, reason)
        except Exception as exc:
            self._stats.handler_errors += 1
            self._drops.drop(topic, "invalid-payload handler failed", f"{type(exc).__name__}: {short(str(exc))}")

    def _validated(self, sub: Subscription, topic: str, data: Any) -> Envelope | None:
        """``data`` as the subscription's model, or None after counting and saying why not."""
        try:
            return sub.model.model_validate(data)
        except ValidationError as exc:
            kind = f"invalid {sub.model.__name__}"
            reason = short(error_line(exc.errors(), "payload", limit=3))
            self._drops.drop(topic, kind, reason)
        except Exception as exc:  # e.g. RecursionError inside a validator
            kind = f"invalid {sub.model.__name__}"
            self._drops.drop(topic, kind, f"{type(exc).__name__}: {short(str(exc))}")
            reason = type(exc).__name__
        self._stats.dropped_invalid += 1
        self._invalid(sub, topic, f"{kind}: {reason}")
        return None

    def _deliver(self, sub: Subscription, msg: Received, data: Any) -> None:
        message = self._validated(sub, msg.topic, data)
        if message is None:
            return
        if msg.qos > 0 and not sub.first_time(message.id):
            self._stats.dropped_duplicate += 1
            return
        try:
            sub.handler(msg.topic, message)
        except Exception as exc:
            self._stats.handler_errors += 1
            self._log.debug("handler for %s failed", sub.topic.name, exc_info=True)
            self._drops.drop(
                msg.topic, "handler failed",
                f"handler for {sub.topic.name} raised {type(exc).__name__}: {short(str(exc))} on a message from {message.source!r}",
            )
