"""The MQTT bus every worker talks through (paho-mqtt 2.x).

Why it is more than a thin wrapper:

* Workers run on different machines and the broker may restart: the client connects in the
  background with exponential backoff, reconnects by itself and re-subscribes after every
  connect.
* QoS 1 events must survive a short absence: the session is persistent (fixed client id,
  ``clean_session=False``) so the broker queues them for us, and paho keeps our own unacked
  QoS 1 publications and sends them again after reconnecting. Redeliveries are dropped by
  envelope ``id`` so handlers see each event once.
* Everyone must know who is alive: a retained ``status`` (online, version, host, started-at)
  is published on connect and a retained ``offline`` is registered as the last will.
* Everyone must be able to tell who said a thing: every envelope published carries the same
  host, pid and start as the status (its ``origin``), so a reader can hold a message that claims
  a worker's ``source`` to that worker's status (:mod:`workers.runtime.origins`).
* A bad payload must never kill a subscriber: oversized, non-JSON (strictly: no NaN, bounded
  nesting and numbers), invalid payloads and handler failures of any kind drop that one
  message with one rate-limited log line. The message is still acknowledged, so a persistent
  session never redelivers a poison message for ever. paho's network thread never sees an
  exception from us; should it die anyway, :attr:`Bus.alive` says so and the worker runtime's
  watchdog turns that into a non-zero exit the supervisor restarts.
* Handlers must be in place before the session resumes: a persistent session delivers what
  was queued for us the moment we connect, so a message matching no subscription is named in
  a (rate-limited) line, never dropped silently. Subscribe before :meth:`Bus.start`.
* A broker that forgot our session (restarted without persistence) lost what it held for us:
  one warning line says so each time it answers a reconnect with no session.
* Such a broker has also forgotten every other client's subscriptions, so a QoS 1 message
  published the moment we are back reaches nobody until its reader has subscribed again (seen:
  9 of 12 typed finals lost, without a trace, because the microphone was back before the
  transcript worker). A publisher can therefore hold its messages for one reader
  (:meth:`Bus.hold_for_reader`): after a reconnect without a session they wait until the
  reader's retained status says it is connected - it publishes that status after its
  subscriptions, on the same connection, so they are in place - or, at most ``wait_s``, and
  then go with one warning line. Messages the broker had not yet acknowledged are sent again
  too (at least once; subscribers drop the copy by its envelope id).
* A retained state has one owner (:meth:`Bus.own`), which publishes it again over a payload
  there that cannot be read (a retained non-JSON round state had blocked every utterance until
  someone cleared it by hand) and after a reconnect on which the broker had lost its state (the
  retained message went with it). Any subscriber may also be told of payloads dropped as
  invalid (``on_invalid``).
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from pydantic import ValidationError

from workers.runtime import __version__
from workers.runtime.broker import BrokerAddress, parse_broker_url
from workers.runtime.config import Config
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import Envelope, Origin, Status, now_ms
from workers.runtime.strict_json import StrictJSONError
from workers.runtime.strict_json import loads as strict_loads
from workers.runtime.topics import Topic, Topics

log = logging.getLogger(__name__)

E = TypeVar("E", bound=Envelope)
Handler = Callable[[str, Any], None]

SEEN_IDS_KEPT = 4096
"""How many envelope ids a subscription remembers to drop QoS 1 redeliveries."""
DROP_LOG_INTERVAL_S = 60.0
"""Repeated drops of the same kind on the same topic are summarised at most this often."""
OFFLINE_PUBLISH_WAIT_S = 1.0


class _ReconnectNoise(logging.Filter):
    """paho logs an ERROR when the broker's socket closes under it and on every loop turn while
    it waits to reconnect. Our own warning says the broker is gone once reconnecting fails
    (:meth:`Bus._on_connect_fail`), and says nothing when the broker is back at once or the room
    is stopping (Ctrl-C ends the embedded broker and the workers together), so those lines are
    dropped."""

    NOISE = ("Client is not connected", "failed to receive on socket")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(noise in message for noise in self.NOISE)


_PAHO_LOG = logging.getLogger("paho")
_PAHO_LOG.addFilter(_ReconnectNoise())


InvalidHandler = Callable[[str, str], None]
"""``on_invalid(concrete_topic, reason)``: a payload on a subscribed topic was dropped as invalid."""
HELD_MAX = 10_000
"""Messages a publisher holds for its reader (:meth:`Bus.hold_for_reader`); beyond it they go at once."""
READER_WAIT_S = 10.0
"""How long held messages wait for their reader after a reconnect that lost the broker's state."""


@dataclass
class _Subscription:
    topic: Topic
    model: type[Envelope]
    handler: Handler
    on_invalid: InvalidHandler | None = None
    seen: OrderedDict[str, None] = field(default_factory=OrderedDict)

    def first_time(self, message_id: str) -> bool:
        if message_id in self.seen:
            return False
        self.seen[message_id] = None
        if len(self.seen) > SEEN_IDS_KEPT:
            self.seen.popitem(last=False)
        return True


RESEND_WINDOW_S = 2.0
"""After a reconnect that lost the broker's state, held messages published this long before the
connection was lost are sent again (the broker may have acknowledged one and died before passing
it on); those never acknowledged are sent again whatever their age."""


@dataclass
class _Sent:
    topic: Topic
    payload: bytes
    info: mqtt.MQTTMessageInfo
    at: float
    """``time.monotonic()`` when it was handed to paho."""

    def acknowledged(self) -> bool:
        """The broker has acknowledged it. paho's ``is_published`` raises instead of answering
        for a message handed over while paho had no connection (it keeps such a message and
        sends it once connected): raised inside ``on_connect``, that cost the whole reconnect
        (no gate, no status) and the messages said during a broker's restart. Such a message
        counts as unacknowledged only until that connect: every connect empties
        :attr:`_ReaderGate.sent` (into the held messages when the broker lost its state)."""
        try:
            return self.info.is_published()
        except (RuntimeError, ValueError):  # not connected, or not queued: not acknowledged
            return False


@dataclass
class _ReaderGate:
    """QoS 1 messages on :attr:`topics` are for :attr:`reader`: after a reconnect that lost the
    broker's state they wait for it (see :meth:`Bus.hold_for_reader`)."""

    reader: str
    topics: frozenset[str]
    wait_s: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Never held while paho holds one of its own (no paho callback takes it but the message's)."""
    open: bool = True
    held: list[tuple[Topic, bytes]] = field(default_factory=list)
    sent: deque[_Sent] = field(default_factory=deque)
    """Handed to paho recently or not yet acknowledged by the broker, oldest first."""
    lost_at: float = 0.0
    """``time.monotonic()`` when the connection was last lost."""
    timer: threading.Timer | None = None

    def publish(self, client: mqtt.Client, topic: Topic, payload: bytes) -> None:
        """Hand one message to paho and remember it (hold :attr:`lock`)."""
        now = time.monotonic()
        info = client.publish(topic.name, payload, qos=topic.qos, retain=topic.retain)
        self.sent.append(_Sent(topic, payload, info, now))
        while self.sent and (len(self.sent) > HELD_MAX or (
                self.sent[0].acknowledged() and now - self.sent[0].at > RESEND_WINDOW_S)):
            self.sent.popleft()

    def to_resend(self) -> list[tuple[Topic, bytes]]:
        """What the broker may have lost with its state (hold :attr:`lock`)."""
        since = self.lost_at - RESEND_WINDOW_S
        again = [(m.topic, m.payload) for m in self.sent if not m.acknowledged() or m.at >= since]
        self.sent.clear()
        return again


@dataclass
class BusStats:
    received: int = 0
    published: int = 0
    dropped_invalid: int = 0
    dropped_oversized: int = 0
    dropped_duplicate: int = 0
    handler_errors: int = 0
    dropped_unhandled: int = 0
    connects: int = 0
    sessions_lost: int = 0
    unpublishable: int = 0
    """Messages of ours that could not be written as JSON (each kind said in a line)."""
    held_for_reader: int = 0
    """Messages held after a reconnect until their reader was back (:meth:`Bus.hold_for_reader`)."""
    sent_without_reader: int = 0
    """Held messages published when the reader did not come back in time (each time said in a line)."""


class Bus:
    """One MQTT connection of one worker."""

    def __init__(
        self,
        config: Config,
        worker_id: str,
        *,
        persistent: bool = True,
        health: Callable[[], dict[str, Any]] | None = None,
        address: BrokerAddress | None = None,
        ready: bool = True,
        refresh_s: float | None = None,
    ) -> None:
        """``ready=False``: the retained status stays ``starting`` after connecting, until the
        owner says ``online`` (:meth:`set_status`) once it really serves, e.g. its HTTP port
        listens; whoever waits for ``online`` can then use it at once. ``refresh_s``: how often
        the owner refreshes its status (:meth:`refresh_status`), said in every status so that
        others can tell a silent worker from a client that never refreshes."""
        self.refresh_s = refresh_s
        self.reads: tuple[str, ...] = ()
        """What this client's owner reads of others' messages, said in its status
        (:attr:`~workers.runtime.messages.Status.reads`); set before :meth:`start`."""
        core = config.core
        self.settings = config.broker
        self.topics = Topics(core.environment_uuid)
        self.worker_id = worker_id
        self.address = address or parse_broker_url(self.settings.url)
        self.stats = BusStats()
        self._health = health
        self._started_at = now_ms()
        self._state = "starting"
        self._ready_on_connect = ready
        self._detail = ""
        self._fallback = False
        self._subscriptions: list[_Subscription] = []
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._ready = threading.Event()
        """Connected and every subscription acknowledged by the broker (SUBACK): from then on
        nothing published to a subscribed topic can miss this client."""
        self._pending_subscriptions: set[int] = set()
        self._drops = RateLimitedLog(log, DROP_LOG_INTERVAL_S)
        self._persistent = persistent
        self._loop_started = False
        self._status_topic = self.topics.status(worker_id)

        self.client = self.new_client(f"humaine-{core.environment_uuid}-{worker_id}", clean_session=not persistent)
        self.client.reconnect_delay_set(self.settings.reconnect_min_s, self.settings.reconnect_max_s)  # type: ignore[arg-type]
        self.client.max_queued_messages_set(0)
        self.client.max_inflight_messages_set(100)
        self.client.will_set(
            self._status_topic.name,
            self._status("offline", "connection lost").model_dump_json(),
            qos=self._status_topic.qos,
            retain=True,
        )
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_connect_fail = self._on_connect_fail
        self._lost_reason: str | None = None
        self.client.on_message = self._on_message
        self.client.on_subscribe = self._on_subscribe
        self._gate: _ReaderGate | None = None
        self._owned: dict[str, tuple[Topic, Callable[[], Envelope | None]]] = {}
        self.taken_over: Status | None = None
        """The newer instance of this worker that took our client id over (we then stop)."""
        # garbage on our own status topic is covered by our status at once
        self.subscribe(self._status_topic, Status, self._on_own_status, on_invalid=lambda _t, _r: self.refresh_status())

    def new_client(self, client_id: str, clean_session: bool) -> mqtt.Client:
        """A paho client with this bus's credentials, TLS and logging (also for probes)."""
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean_session,
                             protocol=mqtt.MQTTv311)
        client.enable_logger(_PAHO_LOG)
        # our callbacks catch their own failures; this only guards against a bug of ours
        # killing the network thread (paho then logs the error in one line)
        client.suppress_exceptions = True
        if self.settings.username:
            client.username_pw_set(self.settings.username, self.settings.password or None)
        if self.address.tls:
            client.tls_set(
                ca_certs=self.settings.tls_ca or None,
                certfile=self.settings.tls_cert or None,
                keyfile=self.settings.tls_key or None,
                cert_reqs=ssl.CERT_NONE if self.settings.tls_insecure else ssl.CERT_REQUIRED,
            )
            client.tls_insecure_set(self.settings.tls_insecure)
        return client

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Connect in the background; paho retries with backoff until the broker answers."""
        self.client.connect_async(self.address.host, self.address.port, self.settings.keepalive_s)
        self.client.loop_start()
        self._loop_started = True

    def wait_connected(self, timeout: float | None = None) -> bool:
        """Wait until connected *and* subscribed: a CONNACK alone does not mean the broker has
        our subscriptions yet, so a message published at once could pass us by."""
        return self._ready.wait(timeout)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    @property
    def alive(self) -> bool:
        """False once :meth:`start` ran and paho's network thread has died (a worker whose bus
        thread is dead still looks online to everyone but hears and says nothing)."""
        if not self._loop_started:
            return True
        thread = getattr(self.client, "_thread", None)
        return thread is not None and thread.is_alive()

    def stop(self, reason: str = "stopped") -> None:
        """Publish the retained ``offline`` status with ``reason`` (unless another instance owns
        it now), then disconnect cleanly."""
        if self._connected.is_set() and self.taken_over is None:
            info = self.client.publish(
                self._status_topic.name,
                self._status("offline", reason).model_dump_json(),
                qos=self._status_topic.qos,
                retain=True,
            )
            try:
                info.wait_for_publish(OFFLINE_PUBLISH_WAIT_S)
            except (RuntimeError, ValueError):
                pass
        self.client.disconnect()
        self.client.loop_stop()
        self._loop_started = False
        self._connected.clear()
        self._ready.clear()
        gate = self._gate
        if gate is not None:
            with gate.lock:
                if gate.timer is not None:
                    gate.timer.cancel()
                held, gate.held = gate.held, []
            if held:
                log.warning("%d messages held for %s were not published: %s stopped before it came back",
                            len(held), gate.reader, self.worker_id)

    # -- status ------------------------------------------------------------------------------
    @property
    def origin(self) -> Origin:
        """This process as its retained status names it: every envelope it publishes carries it."""
        return Origin(host=socket.gethostname(), pid=os.getpid(), started_at=self._started_at)

    def _status(self, state: str, detail: str = "") -> Status:
        health = {}
        if self._health is not None and state != "offline":
            try:
                health = self._health()
            except Exception as exc:  # health must never break status publishing
                health = {"error": f"health check failed: {exc}"}
        origin = self.origin
        return Status(
            source=self.worker_id,
            state=state,  # type: ignore[arg-type]
            worker=self.worker_id,
            version=__version__,
            host=origin.host,
            pid=origin.pid,
            started_at=origin.started_at,
            detail=detail,
            health=health,
            reads=list(self.reads),
            refresh_s=self.refresh_s,
            fallback=self._fallback,
        )

    def set_status(self, state: str, detail: str = "", fallback: bool = False) -> None:
        """Publish the retained status (``online`` or ``error`` with a readable detail; with
        ``fallback``, this and the ``offline`` that follows say the room goes on without it by design)."""
        self._state, self._detail = state, detail
        self._fallback = self._fallback or fallback
        if self._connected.is_set() and self.taken_over is None:
            self.publish(self._status_topic, self._status(state, detail))

    def refresh_status(self) -> None:
        """Publish the current state again, with fresh health figures."""
        self.set_status(self._state, self._detail)

    # -- publish / subscribe -----------------------------------------------------------------
    def publish(self, topic: Topic, message: Envelope) -> None:
        """Publish with the topic's QoS and retain flag. QoS 1 messages published while the
        broker is unreachable are kept by paho and sent after reconnecting. A message that cannot
        be written as JSON (a lone surrogate in a string: not UTF-8) is not published, with one
        rate-limited line, instead of raising in the publisher's loop."""
        if message.origin is None:  # said by this process: who may, readers check by its status
            message = message.model_copy(update={"origin": self.origin})
        try:
            payload = message.model_dump_json().encode()
        except ValueError as exc:  # pydantic's serialization error is one
            self.stats.unpublishable += 1
            self._drops.error(("unpublishable", topic.name), "could not publish a %s on %s: %s", type(message).__name__,
                              _short(topic.name), _short(str(exc)))
            return
        self.publish_raw(topic, payload)

    def publish_raw(self, topic: Topic, payload: bytes) -> None:
        gate = self._gate
        if gate is not None and topic.qos > 0 and topic.name in gate.topics:
            with gate.lock:
                if not gate.open and len(gate.held) < HELD_MAX:
                    gate.held.append((topic, payload))
                    self.stats.held_for_reader += 1
                    return
                gate.publish(self.client, topic, payload)
        else:
            self.client.publish(topic.name, payload, qos=topic.qos, retain=topic.retain)
        self.stats.published += 1

    def hold_for_reader(self, topics: list[Topic], reader: str, wait_s: float = READER_WAIT_S) -> None:
        """QoS 1 messages on ``topics`` are read by the worker ``reader`` (the microphone's finals
        by the transcript worker). After a reconnect on which the broker had lost our session
        (restarted without persistence: it lost every reader's subscriptions too), they are held
        until ``reader``'s retained status - published after its subscriptions - says it is
        connected again, or ``wait_s`` has passed (then they go, with one warning line). Those
        the broker had not acknowledged before it went are sent again after it. Call before
        :meth:`start`."""
        self._gate = _ReaderGate(reader, frozenset(t.name for t in topics), wait_s)
        self.subscribe(self.topics.status(reader), Status, self._on_reader_status)

    def own(self, topic: Topic, model: type[E], current: Callable[[], E | None]) -> None:
        """This client owns the retained state on ``topic`` (a concrete topic): ``current()`` is
        published over any payload there that cannot be read as ``model`` - anyone on the bus can
        publish there, and garbage retained would stand for the state for everyone who connects -
        and again after a reconnect on which the broker had lost its state."""
        self._owned[topic.name] = (topic, current)
        self.subscribe(topic, model, lambda _t, _m: None, on_invalid=lambda _t, reason: self._republish(topic, reason))

    def _republish(self, topic: Topic, reason: str) -> None:
        """Publish the owned state of ``topic`` (``reason``: why; empty after a lost broker state)."""
        try:
            state = self._owned[topic.name][1]()
        except Exception as exc:  # the owner's bug costs this republication, not the network thread
            self._log_drop(topic.name, "owner's state failed", f"{type(exc).__name__}: {_short(str(exc))}")
            return
        if reason:
            self._drops.warning(("replaced", topic.name), "an unreadable retained message on %s (%s) was replaced by "
                                "the state of its owner %s", _short(topic.name), reason, self.worker_id)
        if state is None:
            self.clear_retained(topic)
        else:
            self.publish(topic, state)

    def subscribe(self, topic: Topic, model: type[E], handler: Callable[[str, E], None],
                  on_invalid: InvalidHandler | None = None) -> None:
        """Call ``handler(concrete_topic, message)`` for every valid payload on ``topic``, and
        ``on_invalid(concrete_topic, reason)`` for every payload dropped as invalid (not JSON,
        not the model): the owner of a retained topic publishes its state over the garbage.

        Both run on the MQTT network thread: keep them short, hand work to a queue.
        """
        sub = _Subscription(topic, model, handler, on_invalid)
        with self._lock:
            self._subscriptions.append(sub)
            if self._connected.is_set():
                self._subscribe_locked(topic.name, topic.qos)

    def _subscribe_locked(self, name: str, qos: int) -> None:
        """Send a SUBSCRIBE and count it pending until its SUBACK (hold ``self._lock``)."""
        result, mid = self.client.subscribe(name, qos=qos)
        if result == mqtt.MQTT_ERR_SUCCESS and mid is not None:
            self._pending_subscriptions.add(mid)
            self._ready.clear()

    def clear_retained(self, topic: Topic) -> None:
        """Remove a retained message (an empty retained payload deletes it)."""
        self.client.publish(topic.name, b"", qos=topic.qos, retain=True)

    # -- paho callbacks ----------------------------------------------------------------------
    def _on_connect(self, client: mqtt.Client, _userdata: Any, flags: Any, reason: Any, _props: Any) -> None:
        if reason.is_failure:
            log.warning("MQTT broker %s refused the connection: %s", self.address.url, reason)
            return
        self.stats.connects += 1
        if self.stats.connects == 1:
            log.info("connected to MQTT broker %s as %s", self.address.url, self.worker_id)
        else:
            closed = f"the broker closed the connection ({self._lost_reason}); " if self._lost_reason else ""
            self._lost_reason = None
            log.info("%sreconnected to MQTT broker %s (session present: %s)", closed, self.address.url, flags.session_present)
            if self._persistent and not flags.session_present:
                self.stats.sessions_lost += 1
                # every time: each loss is news (a broker restarting twice in a minute lost twice)
                log.warning(
                    "the MQTT broker %s lost this client's session (restarted without persistence?): "
                    "QoS 1 messages it held for %s are lost (%d times so far)",
                    self.address.url, self.worker_id, self.stats.sessions_lost,
                )
        with self._lock:
            self._pending_subscriptions.clear()
            self._connected.set()
            for name, qos in sorted({(s.topic.name, s.topic.qos) for s in self._subscriptions}):
                self._subscribe_locked(name, qos)
        state_lost = self.stats.connects > 1 and not flags.session_present
        if state_lost:
            for topic, _current in list(self._owned.values()):
                self._republish(topic, "")
        if self._gate is not None:
            self._gate_on_connect(self._gate, state_lost)
        state = "online" if self._state == "starting" and self._ready_on_connect else self._state
        self.set_status(state, self._detail)
        # ready only now, after the status went out: a worker that failed before the broker
        # answered waits for this, then publishes "offline" on its way out, and that must come
        # after (not before) the status published here, or the retained status stays "error"
        with self._lock:
            if not self._pending_subscriptions:
                self._ready.set()

    def _on_subscribe(self, _client: mqtt.Client, _userdata: Any, mid: int, reasons: Any, _props: Any) -> None:
        for reason in reasons:
            if reason.is_failure:
                self._drops.warning(("suback", self.address.url), "the MQTT broker %s refused a subscription of %s: %s",
                                    self.address.url, self.worker_id, reason)
        with self._lock:
            self._pending_subscriptions.discard(mid)
            if not self._pending_subscriptions and self._connected.is_set():
                self._ready.set()

    # -- holding messages for their reader ------------------------------------------------------
    def _gate_on_connect(self, gate: _ReaderGate, state_lost: bool) -> None:
        """Open the gate at once unless the broker lost its state; then wait for the reader."""
        with gate.lock:
            if gate.timer is not None:
                gate.timer.cancel()
                gate.timer = None
            if not state_lost:
                gate.sent.clear()  # the broker kept them (or paho sends them again into our session)
                held = -1
            else:
                # paho sends the unacknowledged ones again now, maybe before the reader is back
                # (lost then): they go again once it is (its bus drops a copy by envelope id)
                gate.held[:0] = gate.to_resend()
                gate.open = False
                gate.timer = threading.Timer(gate.wait_s, self._reader_late)
                gate.timer.daemon = True
                gate.timer.start()
                held = len(gate.held)
        if held >= 0:
            log.info("the broker lost its state: %d messages wait until %s is back (at most %g s)", held, gate.reader, gate.wait_s)
        else:
            self._open_gate(gate, late=False)

    def _on_reader_status(self, _topic: str, status: Status) -> None:
        """The reader's status arrived on this connection: it has subscribed again."""
        gate = self._gate
        if gate is not None and status.state != "offline" and not gate.open and self._connected.is_set():
            self._open_gate(gate, late=False)

    def _reader_late(self) -> None:
        gate = self._gate
        if gate is not None and not gate.open and self._connected.is_set():
            self._open_gate(gate, late=True)

    def _open_gate(self, gate: _ReaderGate, late: bool) -> None:
        """Publish what was held, in order, and let later messages through."""
        with gate.lock:
            if gate.timer is not None:
                gate.timer.cancel()
                gate.timer = None
            gate.open = True
            held, gate.held = gate.held, []
            for topic, payload in held:
                gate.publish(self.client, topic, payload)
                self.stats.published += 1
        if late and held:
            self.stats.sent_without_reader += len(held)
            log.warning(
                "%s is not back on the MQTT broker %s %g s after the broker lost its state: %d held messages on %s "
                "are published now, and are lost unless it subscribes again", gate.reader, self.address.url, gate.wait_s,
                len(held), ", ".join(sorted({topic.name for topic, _ in held})),
            )
        elif held:
            log.info("%s is back: %d held messages published", gate.reader, len(held))

    def _on_disconnect(self, _client: mqtt.Client, _userdata: Any, _flags: Any, reason: Any, _props: Any) -> None:
        was_connected = self._connected.is_set()
        self._connected.clear()
        self._ready.clear()
        gate = self._gate
        if gate is not None:
            with gate.lock:
                gate.open = False  # until the next connect says whether the broker kept its state
                gate.lost_at = time.monotonic()
        if was_connected and reason.is_failure and self.taken_over is None:
            # said when the reconnection fails: a broker that answers again at once closed the
            # connection on purpose (another client took our id: see _on_own_status)
            self._lost_reason = str(reason)

    def _on_connect_fail(self, _client: mqtt.Client, _userdata: Any) -> None:
        if self._lost_reason is not None:
            log.warning("lost the MQTT broker %s (%s); reconnecting", self.address.url, self._lost_reason)
            self._lost_reason = None

    def _on_own_status(self, _topic: str, status: Status) -> None:
        """Someone else's status on our status topic: our client id is shared.

        The broker lets one connection hold a client id and silently drops the older one, so
        two instances knock each other off for ever. The newest instance keeps the id: an older
        one stops reconnecting (the worker then exits, see :mod:`workers.runtime.worker`); the newer
        one republishes its status over the older one's (and over its last will)."""
        if status.pid == os.getpid() and status.host == socket.gethostname():
            return
        newer = (status.started_at, status.host, status.pid) > (self._started_at, socket.gethostname(), os.getpid())
        if newer and status.state != "offline":
            if self.taken_over is None:
                self.taken_over = status
                log.error(
                    "another %s (host %s, pid %s) took over this client id; this one stops",
                    self.worker_id, status.host, status.pid,
                )
                self.client.disconnect()
            return
        if not newer:
            self.refresh_status()

    def _on_message(self, _client: mqtt.Client, _userdata: Any, msg: mqtt.MQTTMessage) -> None:
        """Never raises: whatever goes wrong drops this one message with one rate-limited line,
        and paho acknowledges it, so a persistent session does not deliver it again."""
        try:
            self._receive(msg)
        except Exception as exc:  # a bug of ours must cost one message, not the network thread
            self.stats.handler_errors += 1
            self._log_drop(msg.topic, "internal error", f"{type(exc).__name__}: {exc}")

    def _receive(self, msg: mqtt.MQTTMessage) -> None:
        self.stats.received += 1
        if not msg.payload:
            return  # empty payload = a retained message being cleared
        with self._lock:
            matching = [s for s in self._subscriptions if s.topic.matches(msg.topic)]
        if not matching:
            self.stats.dropped_unhandled += 1
            if msg.retain:
                # a state we did not ask for: the embedded broker (amqtt 0.12) sends a new client
                # the retained messages of other clients' subscriptions; nothing is lost
                log.debug("ignored a retained message on %s: no subscription of %s matches", msg.topic, self.worker_id)
            else:
                # a persistent session delivers what it queued for us before we subscribe again
                self._log_drop(msg.topic, "no handler", f"no subscription of {self.worker_id} matches (subscribe before start)")
            return
        if len(msg.payload) > self.settings.max_payload_bytes:
            self.stats.dropped_oversized += 1
            self._log_drop(msg.topic, "oversized", f"{len(msg.payload)} bytes > limit {self.settings.max_payload_bytes}")
            return
        try:
            data = strict_loads(msg.payload)
        except StrictJSONError as exc:
            self.stats.dropped_invalid += 1
            self._log_drop(msg.topic, "not JSON", _short(str(exc)))
            for sub in matching:
                self._invalid(sub, msg.topic, f"not JSON: {_short(str(exc))}")
            return
        for sub in matching:
            self._deliver(sub, msg, data)

    def _invalid(self, sub: _Subscription, topic: str, reason: str) -> None:
        """Tell the subscriber a payload was dropped as invalid (its failure costs a line)."""
        if sub.on_invalid is None:
            return
        try:
            sub.on_invalid(topic, reason)
        except Exception as exc:
            self.stats.handler_errors += 1
            self._log_drop(topic, "invalid-payload handler failed", f"{type(exc).__name__}: {_short(str(exc))}")

    def _deliver(self, sub: _Subscription, msg: mqtt.MQTTMessage, data: Any) -> None:
        try:
            message = sub.model.model_validate(data)
        except ValidationError as exc:
            self.stats.dropped_invalid += 1
            reason = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'payload'}: {e['msg']}" for e in exc.errors()[:3])
            self._log_drop(msg.topic, f"invalid {sub.model.__name__}", _short(reason))
            self._invalid(sub, msg.topic, f"invalid {sub.model.__name__}: {_short(reason)}")
            return
        except Exception as exc:  # e.g. RecursionError inside a validator
            self.stats.dropped_invalid += 1
            self._log_drop(msg.topic, f"invalid {sub.model.__name__}", f"{type(exc).__name__}: {_short(str(exc))}")
            self._invalid(sub, msg.topic, f"invalid {sub.model.__name__}: {type(exc).__name__}")
            return
        if msg.qos > 0 and not sub.first_time(message.id):
            self.stats.dropped_duplicate += 1
            return
        try:
            sub.handler(msg.topic, message)
        except Exception as exc:
            self.stats.handler_errors += 1
            log.debug("handler for %s failed", sub.topic.name, exc_info=True)
            self._log_drop(
                msg.topic, "handler failed",
                f"handler for {sub.topic.name} raised {type(exc).__name__}: {_short(str(exc))} on a message from {message.source!r}",
            )

    def _log_drop(self, topic: str, kind: str, reason: str) -> None:
        """One line per kind of dropped payload and topic, summarised when it repeats quickly."""
        self._drops.warning((topic, kind), "dropped a payload on %s: %s: %s", _short(topic), kind, reason)


REASON_MAX_CHARS = 200
"""Longest reason quoted in a log line (a hostile payload's text must not fill the log)."""


def _short(text: str) -> str:
    return text if len(text) <= REASON_MAX_CHARS else text[:REASON_MAX_CHARS] + "..."
