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

Each of these jobs is one part in :mod:`workers.runtime.mqtt`; :class:`Bus` composes them on one
paho client and hands each paho callback to the parts it concerns. Every part logs under this
module's logger, so one logging setting covers the whole client.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import paho.mqtt.client as mqtt
from paho.mqtt.reasoncodes import ReasonCode

from workers.runtime.broker import BrokerAddress, parse_broker_url
from workers.runtime.config import Config
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import Envelope, Origin, Status, WorkerState
from workers.runtime.mqtt.dispatch import DROP_LOG_INTERVAL_S, Dispatcher, InvalidHandler, Received, Subscription, short
from workers.runtime.mqtt.gate import READER_WAIT_S, Reader, ReaderGate
from workers.runtime.mqtt.owned import OwnedStates
from workers.runtime.mqtt.paho_client import paho_client
from workers.runtime.mqtt.reconnects import Reconnects
from workers.runtime.mqtt.session import Session
from workers.runtime.mqtt.stats import BusStats
from workers.runtime.mqtt.status import Claim, HealthCheck, StatusKeeper
from workers.runtime.topics import Topic, Topics

log = logging.getLogger(__name__)

E = TypeVar("E", bound=Envelope)

OFFLINE_PUBLISH_WAIT_S = 1.0
"""How long :meth:`Bus.stop` waits for the broker to take the ``offline`` status."""
MAX_INFLIGHT = 100
"""QoS 1 messages paho sends before the broker acknowledges the first of them."""


class Bus:
    """One MQTT connection of one worker: its parts (:mod:`workers.runtime.mqtt`) composed on
    one paho client, whose callbacks this class receives and hands on."""

    def __init__(
        self,
        config: Config,
        worker_id: str,
        *,
        persistent: bool = True,
        health: HealthCheck | None = None,
        address: BrokerAddress | None = None,
        ready: bool = True,
        refresh_s: float | None = None,
    ) -> None:
        """``ready=False``: the retained status stays ``starting`` after connecting, until the
        owner says ``online`` (:meth:`set_status`) once it really serves, e.g. its HTTP port
        listens; whoever waits for ``online`` can then use it at once. ``refresh_s``: how often
        the owner refreshes its status (:meth:`refresh_status`), said in every status so that
        others can tell a silent worker from a client that never refreshes."""
        self.settings = config.broker
        self.topics = Topics(config.core.environment_uuid)
        self.worker_id = worker_id
        self.address = address or parse_broker_url(self.settings.url)
        self.stats = BusStats()
        url = self.address.url
        self._ready_on_connect = ready
        self._loop_started = False
        self._lines = RateLimitedLog(log, DROP_LOG_INTERVAL_S)
        """The rate-limited lines of every part (each keys its own kinds of problem)."""
        self._status_topic = self.topics.status(worker_id)
        self._status = StatusKeeper(worker_id, health, refresh_s)
        self._status_lock = threading.Lock()
        """One status is made and published at a time: the watchdog's refresh, made a moment
        before the worker's ``error`` and published after it (a loaded machine), would otherwise
        leave the stale ``online`` as the retained status."""
        self.client = self.new_client(f"humaine-{config.core.environment_uuid}-{worker_id}", clean_session=not persistent)
        """The paho client every part shares (a test may drop the connection under it)."""
        self._dispatcher = Dispatcher(worker_id, self.settings.max_payload_bytes, self.stats, self._lines)
        self._session = Session(self.client, self._dispatcher.filters, self._lines, url, worker_id)
        self._reconnects = Reconnects(log, url, worker_id, persistent, self.stats)
        self._owned = OwnedStates(worker_id, self._lines, self.publish, self.clear_retained)
        self._gate: ReaderGate | None = None
        self._configure_client()
        # garbage on our own status topic is covered by our status at once
        self.subscribe(self._status_topic, Status, self._on_own_status, on_invalid=lambda _t, _r: self.refresh_status())

    def _configure_client(self) -> None:
        """Backoff, queue limits, the last will and the callbacks of the paho client."""
        client = self.client
        # paho annotates the delays as int but sleeps any number of seconds (0.5 s by default here)
        client.reconnect_delay_set(self.settings.reconnect_min_s, self.settings.reconnect_max_s)  # type: ignore[arg-type]
        client.max_queued_messages_set(0)
        client.max_inflight_messages_set(MAX_INFLIGHT)
        client.will_set(self._status_topic.name, self._status.offline("connection lost").model_dump_json(),
                        qos=self._status_topic.qos, retain=True)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_connect_fail = self._on_connect_fail
        client.on_message = self._on_message
        client.on_subscribe = self._on_subscribe

    def new_client(self, client_id: str, clean_session: bool) -> mqtt.Client:
        """A paho client with this bus's credentials, TLS and logging (also for probes)."""
        return paho_client(self.settings, self.address, client_id, clean_session)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Connect in the background; paho retries with backoff until the broker answers."""
        self.client.connect_async(self.address.host, self.address.port, self.settings.keepalive_s)
        self.client.loop_start()
        self._loop_started = True

    def wait_connected(self, timeout: float | None = None) -> bool:
        """Wait until connected *and* subscribed: a CONNACK alone does not mean the broker has
        our subscriptions yet, so a message published at once could pass us by."""
        return self._session.wait_ready(timeout)

    @property
    def connected(self) -> bool:
        return self._session.connected

    @property
    def alive(self) -> bool:
        """False once :meth:`start` ran and paho's network thread has died (a worker whose bus
        thread is dead still looks online to everyone but hears and says nothing)."""
        if not self._loop_started:
            return True
        thread = getattr(self.client, "_thread", None)
        return isinstance(thread, threading.Thread) and thread.is_alive()

    def stop(self, reason: str = "stopped") -> None:
        """Publish the retained ``offline`` status with ``reason`` (unless another instance owns
        it now), then disconnect cleanly."""
        if self._session.connected and self.taken_over is None:
            info = self.client.publish(self._status_topic.name, self._status.offline(reason).model_dump_json(),
                                        qos=self._status_topic.qos, retain=True)
            try:
                info.wait_for_publish(OFFLINE_PUBLISH_WAIT_S)
            except (RuntimeError, ValueError):
                pass
        self.client.disconnect()
        self.client.loop_stop()
        self._loop_started = False
        self._session.lost()
        if self._gate is not None:
            self._gate.stop()

    # -- status ------------------------------------------------------------------------------
    @property
    def origin(self) -> Origin:
        """This process as its retained status names it: every envelope it publishes carries it."""
        return self._status.origin

    @property
    def taken_over(self) -> Status | None:
        """The newer instance of this worker that took our client id over (we then stop)."""
        return self._status.taken_over

    def set_reads(self, reads: Sequence[str]) -> None:
        """What this client's owner reads of others' messages, said in its status
        (:attr:`~workers.runtime.messages.Status.reads`); call before :meth:`start`."""
        self._status.set_reads(reads)

    def set_status(self, state: WorkerState, detail: str = "", fallback: bool = False) -> None:
        """Publish the retained status (``online`` or ``error`` with a readable detail; with
        ``fallback``, this and the ``offline`` that follows say the room goes on without it by design)."""
        self._publish_status(lambda: self._status.set(state, detail, fallback))

    def refresh_status(self) -> None:
        """Publish the current state again, with fresh health figures."""
        self._publish_status(self._status.current)

    def _publish_status(self, make: Callable[[], Status]) -> None:
        with self._status_lock:
            status = make()
            if self._session.connected and self.taken_over is None:
                self.publish(self._status_topic, status)

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
            self._lines.error(("unpublishable", topic.name), "could not publish a %s on %s: %s",
                              type(message).__name__, short(topic.name), short(str(exc)))
            return
        self.publish_raw(topic, payload)

    def publish_raw(self, topic: Topic, payload: bytes) -> None:
        """Publish ``payload`` as it is (through the reader's gate when it is for that reader)."""
        gate = self._gate
        if gate is not None and gate.takes(topic):
            gate.publish(topic, payload)
            return
        self.client.publish(topic.name, payload, qos=topic.qos, retain=topic.retain)
        self.stats.published += 1

    def clear_retained(self, topic: Topic) -> None:
        """Remove a retained message (an empty retained payload deletes it)."""
        self.client.publish(topic.name, b"", qos=topic.qos, retain=True)

    def hold_for_reader(self, topics: list[Topic], reader: str, wait_s: float = READER_WAIT_S) -> None:
        """QoS 1 messages on ``topics`` are read by the worker ``reader`` (the microphone's finals
        by the transcript worker). After a reconnect on which the broker had lost our session
        (restarted without persistence: it lost every reader's subscriptions too), they are held
        until ``reader``'s retained status - published after its subscriptions - says it is
        connected again, or ``wait_s`` has passed (then they go, with one warning line). Those
        the broker had not acknowledged before it went are sent again after it. Call before
        :meth:`start`."""
        gate = ReaderGate(self.client, self.worker_id, Reader(reader, frozenset(t.name for t in topics), wait_s),
                          lambda: self._session.connected, self.stats, log, self.address.url)
        self._gate = gate
        self.subscribe(self.topics.status(reader), Status, lambda _t, status: gate.reader_status(status))

    def own(self, topic: Topic, model: type[E], current: Callable[[], E | None]) -> None:
        """This client owns the retained state on ``topic`` (a concrete topic): ``current()`` is
        published over any payload there that cannot be read as ``model`` - anyone on the bus can
        publish there, and garbage retained would stand for the state for everyone who connects -
        and again after a reconnect on which the broker had lost its state."""
        self._owned.own(topic, current)
        self.subscribe(topic, model, lambda _t, _m: None, on_invalid=lambda _t, reason: self._owned.republish(topic, reason))

    def subscribe(self, topic: Topic, model: type[E], handler: Callable[[str, E], None],
                  on_invalid: InvalidHandler | None = None) -> None:
        """Call ``handler(concrete_topic, message)`` for every valid payload on ``topic``, and
        ``on_invalid(concrete_topic, reason)`` for every payload dropped as invalid (not JSON,
        not the model): the owner of a retained topic publishes its state over the garbage.

        Both run on the MQTT network thread: keep them short, hand work to a queue.
        """
        self._dispatcher.add(Subscription(topic, model, handler, on_invalid))
        self._session.subscribe(topic.name, topic.qos)

    # -- paho callbacks (the network thread) -------------------------------------------------
    def _on_connect(self, _client: mqtt.Client, _userdata: Any, flags: mqtt.ConnectFlags, reason: ReasonCode,
                    _props: Any) -> None:
        if reason.is_failure:
            self._reconnects.refused(reason)
            return
        state_lost = self._reconnects.connected(flags.session_present)
        self._session.connected_again()
        if state_lost:
            self._owned.republish_all()
        if self._gate is not None:
            self._gate.connected_again(state_lost)
        self._publish_status(lambda: self._status.on_connect(self._ready_on_connect))
        self._session.settle()  # ready only now, after the status went out

    def _on_subscribe(self, _client: mqtt.Client, _userdata: Any, mid: int, reasons: list[ReasonCode], _props: Any) -> None:
        self._session.acknowledged(mid, reasons)

    def _on_disconnect(self, _client: mqtt.Client, _userdata: Any, _flags: mqtt.DisconnectFlags, reason: ReasonCode,
                       _props: Any) -> None:
        was_connected = self._session.lost()
        if self._gate is not None:
            self._gate.disconnected()
        if was_connected and reason.is_failure and self.taken_over is None:
            self._reconnects.lost(str(reason))

    def _on_connect_fail(self, _client: mqtt.Client, _userdata: Any) -> None:
        self._reconnects.failed()

    def _on_own_status(self, _topic: str, status: Status) -> None:
        """Someone else's status on our status topic: our client id is shared (see
        :meth:`StatusKeeper.claim <workers.runtime.mqtt.status.StatusKeeper.claim>`)."""
        claim = self._status.claim(status)
        if claim is Claim.YIELD:
            log.error("another %s (host %s, pid %s) took over this client id; this one stops",
                      self.worker_id, status.host, status.pid)
            self.client.disconnect()
        elif claim is Claim.REASSERT:
            self.refresh_status()

    def _on_message(self, _client: mqtt.Client, _userdata: Any, msg: mqtt.MQTTMessage) -> None:
        """Never raises: whatever goes wrong drops this one message with one rate-limited line,
        and paho acknowledges it, so a persistent session does not deliver it again."""
        self._dispatcher.receive(Received(msg.topic, msg.payload, msg.qos, msg.retain))
