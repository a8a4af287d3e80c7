"""QoS 1 messages held for their reader after the broker lost its state.

A broker restarted without persistence has forgotten every client's subscriptions, so a QoS 1
message published the moment we are back reaches nobody until its reader has subscribed again
(seen: 9 of 12 typed finals lost, without a trace, because the microphone was back before the
transcript worker). After a reconnect without a session the messages for one reader wait until
the reader's retained status says it is connected - it publishes that status after its
subscriptions, on the same connection, so they are in place - or, at most ``wait_s``, and then
go with one warning line. Messages the broker had not yet acknowledged are sent again too (at
least once; subscribers drop the copy by its envelope id).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import paho.mqtt.client as mqtt

from workers.runtime.messages import Status
from workers.runtime.mqtt.stats import BusStats
from workers.runtime.topics import Topic

HELD_MAX = 10_000
"""Messages a publisher holds for its reader; beyond it they go at once."""
READER_WAIT_S = 10.0
"""How long held messages wait for their reader after a reconnect that lost the broker's state."""
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
        :attr:`ReaderGate._sent` (into the held messages when the broker lost its state)."""
        try:
            return self.info.is_published()
        except (RuntimeError, ValueError):  # not connected, or not queued: not acknowledged
            return False


@dataclass(frozen=True)
class Reader:
    """Who reads the gated topics and how long its messages wait for it."""

    worker_id: str
    topics: frozenset[str]
    wait_s: float


class ReaderGate:
    """QoS 1 messages on the :class:`Reader`'s topics, held after a reconnect that lost the
    broker's state until the reader is back (see the module)."""

    def __init__(self, client: mqtt.Client, publisher: str, reader: Reader, connected: Callable[[], bool],
                 stats: BusStats, log: logging.Logger, url: str) -> None:
        """``publisher``: the worker whose bus this gate is part of (named when it stops)."""
        self._client = client
        self._publisher = publisher
        self._reader = reader
        self._connected = connected
        self._stats = stats
        self._log = log
        self._url = url
        self._lock = threading.Lock()
        """Never held while paho holds one of its own (no paho callback takes it but the message's)."""
        self._open = True
        self._held: list[tuple[Topic, bytes]] = []
        self._sent: deque[_Sent] = deque()
        """Handed to paho recently or not yet acknowledged by the broker, oldest first."""
        self._lost_at = 0.0
        """``time.monotonic()`` when the connection was last lost."""
        self._timer: threading.Timer | None = None
        """Opens the gate when the reader is late."""

    def takes(self, topic: Topic) -> bool:
        """Messages on ``topic`` go through this gate."""
        return topic.qos > 0 and topic.name in self._reader.topics

    def publish(self, topic: Topic, payload: bytes) -> None:
        """Hold the message while the gate is shut, else hand it to paho (a topic it :meth:`takes`)."""
        with self._lock:
            if not self._open and len(self._held) < HELD_MAX:
                self._held.append((topic, payload))
                self._stats.held_for_reader += 1
                return
            self._hand_over(topic, payload)

    def reader_status(self, status: Status) -> None:
        """The reader's status arrived on this connection: it has subscribed again."""
        if status.state != "offline" and not self._is_open() and self._connected():
            self._release(late=False)

    def connected_again(self, state_lost: bool) -> None:
        """Open the gate at once unless the broker lost its state; then wait for the reader."""
        with self._lock:
            self._cancel_timer()
            if not state_lost:
                self._sent.clear()  # the broker kept them (or paho sends them again into our session)
                held = -1
            else:
                # paho sends the unacknowledged ones again now, maybe before the reader is back
                # (lost then): they go again once it is (its bus drops a copy by envelope id)
                self._held[:0] = self._to_resend()
                self._open = False
                self._timer = threading.Timer(self._reader.wait_s, self._reader_late)
                self._timer.daemon = True
                self._timer.start()
                held = len(self._held)
        if held >= 0:
            self._log.info("the broker lost its state: %d messages wait until %s is back (at most %g s)", held,
                           self._reader.worker_id, self._reader.wait_s)
        else:
            self._release(late=False)

    def disconnected(self) -> None:
        """Shut until the next connect says whether the broker kept its state."""
        with self._lock:
            self._open = False
            self._lost_at = time.monotonic()

    def stop(self) -> None:
        """The bus stops: what is still held is dropped, in one line."""
        with self._lock:
            self._cancel_timer()
            held, self._held = self._held, []
        if held:
            self._log.warning("%d messages held for %s were not published: %s stopped before it came back",
                              len(held), self._reader.worker_id, self._publisher)

    def _is_open(self) -> bool:
        with self._lock:
            return self._open

    def _reader_late(self) -> None:
        if not self._is_open() and self._connected():
            self._release(late=True)

    def _release(self, late: bool) -> None:
        """Publish what was held, in order, and let later messages through."""
        with self._lock:
            self._cancel_timer()
            self._open = True
            held, self._held = self._held, []
            for topic, payload in held:
                self._hand_over(topic, payload)
        if late and held:
            self._stats.sent_without_reader += len(held)
            self._log.warning(
                "%s is not back on the MQTT broker %s %g s after the broker lost its state: %d held messages on %s "
                "are published now, and are lost unless it subscribes again", self._reader.worker_id, self._url,
                self._reader.wait_s, len(held), ", ".join(sorted({topic.name for topic, _ in held})),
            )
        elif held:
            self._log.info("%s is back: %d held messages published", self._reader.worker_id, len(held))

    def _cancel_timer(self) -> None:
        """(hold :attr:`_lock`)"""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _hand_over(self, topic: Topic, payload: bytes) -> None:
        """Hand one message to paho and remember it (hold :attr:`_lock`)."""
        now = time.monotonic()
        info = self._client.publish(topic.name, payload, qos=topic.qos, retain=topic.retain)
        self._stats.published += 1
        self._sent.append(_Sent(topic, payload, info, now))
        while self._sent and (len(self._sent) > HELD_MAX or (
                self._sent[0].acknowledged() and now - self._sent[0].at > RESEND_WINDOW_S)):
            self._sent.popleft()

    def _to_resend(self) -> list[tuple[Topic, bytes]]:
        """What the broker may have lost with its state (hold :attr:`_lock`)."""
        since = self._lost_at - RESEND_WINDOW_S
        again = [(m.topic, m.payload) for m in self._sent if not m.acknowledged() or m.at >= since]
        self._sent.clear()
        return again
