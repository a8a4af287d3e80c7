"""An in-process MQTT bus for the unit tier: workers talk through a scripted broker, no sockets.

In the spirit of paho's own test broker: one :class:`ScriptedBroker` object stands for the broker
and several :class:`ScriptedBus` clients share it, so a test's "room" and the worker under test
hear each other as they would through mosquitto. What a subscriber sees is what the real
:class:`~workers.runtime.bus.Bus` would give it: the publisher writes the envelope as JSON bytes
exactly as ``Bus.publish`` does, the broker sends them to the clients that subscribed, and each
reads them through the real bus's own :class:`~workers.runtime.mqtt.dispatch.Dispatcher` (the
strict parser, its model, ``on_invalid``, QoS 1 redeliveries dropped by envelope id). Retained
messages are kept for the topics the suite retains (a property of the
:class:`~workers.runtime.topics.Topic`). Filters match with MQTT wildcards (``Topic.matches``).

What it leaves out, on purpose: delivery is synchronous, in the publisher's thread (a test
knows a message arrived when ``publish`` returns, without polling a network thread); there are
no sessions, reconnects, last wills, takeovers or reader gates. A test that needs those belongs
to ``tests/integration`` with a real broker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from workers.runtime.broker import BrokerAddress, parse_broker_url
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import Envelope, Origin, Status, WorkerState
from workers.runtime.mqtt.dispatch import DROP_LOG_INTERVAL_S, Dispatcher, InvalidHandler, Received, Subscription
from workers.runtime.mqtt.stats import BusStats
from workers.runtime.mqtt.status import StatusKeeper
from workers.runtime.topics import Topic, Topics

log = logging.getLogger(__name__)

E = TypeVar("E", bound=Envelope)


class ScriptedBroker:
    """The broker of one test: routes every publication to the started clients at once and
    keeps the last retained payload of each concrete topic (an empty payload clears it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: list[ScriptedBus] = []
        self._retained: dict[str, tuple[int, bytes]] = {}
        """Concrete topic -> (QoS, payload) of its retained message."""

    def bus(self, config: Config, worker_id: str, health: Callable[[], dict[str, Any]] | None = None) -> ScriptedBus:
        """A new client of this broker (not started: subscribe first, as with a real bus)."""
        return ScriptedBus(self, config, worker_id, health=health)

    def retained(self, topic: Topic) -> bytes | None:
        """The retained payload on the concrete ``topic`` (what a new subscriber would get)."""
        with self._lock:
            kept = self._retained.get(topic.name)
        return None if kept is None else kept[1]

    def route(self, topic: Topic, payload: bytes) -> None:
        """One publication: retained when its topic is, then delivered to every started client
        that subscribed to it, as a broker does (in the publisher's thread; the broker's lock is not
        held while handlers run)."""
        with self._lock:
            if topic.retain:
                if payload:
                    self._retained[topic.name] = (topic.qos, payload)
                else:
                    self._retained.pop(topic.name, None)
            clients = [client for client in self._clients if client.subscribed_to(topic.name)]
        for client in clients:
            client.receive(topic.name, payload, topic.qos)

    def connect(self, client: ScriptedBus) -> None:
        with self._lock:
            if client not in self._clients:
                self._clients.append(client)

    def disconnect(self, client: ScriptedBus) -> None:
        with self._lock:
            if client in self._clients:
                self._clients.remove(client)

    def retained_matching(self, topic: Topic) -> list[tuple[str, int, bytes]]:
        """The retained messages a new subscription to the filter ``topic`` is sent."""
        with self._lock:
            return [(name, qos, payload) for name, (qos, payload) in self._retained.items() if topic.matches(name)]


class ScriptedBus:
    """One client of a :class:`ScriptedBroker`, with the interface of
    :class:`~workers.runtime.bus.Bus` that workers use (pass it as ``bus=``; :meth:`as_bus` types
    it so). Handlers run in the publisher's thread, each payload checked as ``Bus`` checks it."""

    def __init__(self, broker: ScriptedBroker, config: Config, worker_id: str, *,
                 health: Callable[[], dict[str, Any]] | None = None) -> None:
        self.broker = broker
        self.settings = config.broker
        self.topics = Topics(config.core.environment_uuid)
        self.worker_id = worker_id
        self.address: BrokerAddress = parse_broker_url(self.settings.url)
        """Where a real bus would connect (only named in messages: nothing connects)."""
        self.stats = BusStats()
        self.health = health
        """Figures for the status, as ``Bus(health=...)`` (settable after the worker exists)."""
        self._status = StatusKeeper(worker_id, self._health_figures, refresh_s=None)
        """The real bus's status: its states, origin and health figures."""
        self._filters: list[Topic] = []
        """What this client subscribed to (the broker sends it only those)."""
        self._dispatcher = Dispatcher(worker_id, self.settings.max_payload_bytes, self.stats, RateLimitedLog(log, DROP_LOG_INTERVAL_S))
        """The real bus's checks and hand-over, payload by payload."""
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._queued: list[tuple[Topic, bytes]] = []
        """Published while not connected: sent on :meth:`start`, as paho keeps them."""
        self._status_topic = self.topics.status(worker_id)

    def as_bus(self) -> Bus:
        """This client, typed as the ``Bus`` a worker's constructor takes."""
        return cast(Bus, self)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Connect at once: the retained messages of every subscription arrive, what was
        published meanwhile goes out, and the status becomes ``online`` (as ``Bus`` on connect)."""
        self.stats.connects += 1
        self.broker.connect(self)
        self._connected.set()
        with self._lock:
            filters = list(self._filters)
            queued, self._queued = self._queued, []
        self._send_retained(filters)
        for topic, payload in queued:
            self.publish_raw(topic, payload)
        self._publish_status(self._status.on_connect(ready=True))

    def wait_connected(self, timeout: float | None = None) -> bool:
        """True at once once started (nothing to wait for); False after ``timeout`` otherwise."""
        return self._connected.wait(timeout)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    @property
    def alive(self) -> bool:
        """No network thread can die here."""
        return True

    def stop(self, reason: str = "stopped") -> None:
        """The retained ``offline`` status with ``reason``, then off the broker."""
        if self._connected.is_set():
            self.publish(self._status_topic, self._status.offline(reason))
        self._connected.clear()
        self.broker.disconnect(self)

    # -- status ------------------------------------------------------------------------------
    @property
    def origin(self) -> Origin:
        """This process as its status names it: every envelope it publishes carries it."""
        return self._status.origin

    @property
    def taken_over(self) -> Status | None:
        """Always None: a scripted broker has no second instance to take the client id over."""
        return self._status.taken_over

    def _health_figures(self) -> dict[str, Any]:
        return self.health() if self.health is not None else {}

    def set_reads(self, reads: Sequence[str]) -> None:
        self._status.set_reads(reads)

    def set_status(self, state: WorkerState, detail: str = "", fallback: bool = False) -> None:
        self._publish_status(self._status.set(state, detail, fallback))

    def refresh_status(self) -> None:
        self._publish_status(self._status.current())

    def _publish_status(self, status: Status) -> None:
        if self._connected.is_set():
            self.publish(self._status_topic, status)

    # -- publish / subscribe -----------------------------------------------------------------
    def publish(self, topic: Topic, message: Envelope) -> None:
        """Written as ``Bus.publish`` writes it: with this process's origin unless the message
        names one, and a payload that is not JSON-able counted, not published."""
        if message.origin is None:
            message = message.model_copy(update={"origin": self.origin})
        try:
            payload = message.model_dump_json().encode()
        except ValueError as exc:
            self.stats.unpublishable += 1
            log.error("could not publish a %s on %s: %s", type(message).__name__, topic.name, exc)
            return
        self.publish_raw(topic, payload)

    def publish_raw(self, topic: Topic, payload: bytes) -> None:
        if not self._connected.is_set():
            with self._lock:
                self._queued.append((topic, payload))
            return
        self.stats.published += 1
        self.broker.route(topic, payload)

    def clear_retained(self, topic: Topic) -> None:
        self.publish_raw(topic, b"")

    def subscribe(self, topic: Topic, model: type[E], handler: Callable[[str, E], None],
                  on_invalid: InvalidHandler | None = None) -> None:
        """As ``Bus.subscribe``; once started, the retained messages of ``topic`` arrive at once."""
        with self._lock:
            self._filters.append(topic)
        self._dispatcher.add(Subscription(topic, model, handler, on_invalid))
        if self._connected.is_set():
            self._send_retained([topic])

    def _send_retained(self, filters: list[Topic]) -> None:
        seen: set[str] = set()
        for topic in filters:
            for name, qos, payload in self.broker.retained_matching(topic):
                if name not in seen:
                    seen.add(name)
                    self.receive(name, payload, qos, retain=True)

    # -- receiving -------------------------------------------------------------------------------
    def subscribed_to(self, name: str) -> bool:
        """Whether a subscription of this client matches the concrete topic ``name``."""
        with self._lock:
            return any(topic.matches(name) for topic in self._filters)

    def receive(self, name: str, payload: bytes, qos: int, retain: bool = False) -> None:
        """One payload from the broker on the concrete topic ``name``, through the real bus's
        :class:`~workers.runtime.mqtt.dispatch.Dispatcher`: parsed once, validated by each matching
        subscription's model, handed to its handler; a failure of any kind costs that one message."""
        self._dispatcher.receive(Received(name, payload, qos, retain))

