"""What the broker holds of one client's subscriptions, and whether it has acknowledged them all.

A CONNACK alone does not mean the broker has our subscriptions yet, so a message published at
once could pass us by: a client is *ready* once connected and every SUBSCRIBE acknowledged
(SUBACK). Every connect sends the subscriptions again (a broker that lost our session lost them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import paho.mqtt.client as mqtt
from paho.mqtt.reasoncodes import ReasonCode

from workers.runtime.logs import RateLimitedLog


class Session:
    """The subscriptions one paho client keeps at its broker, and its connected/ready state."""

    def __init__(self, client: mqtt.Client, filters: Callable[[], list[tuple[str, int]]], lines: RateLimitedLog,
                 url: str, worker_id: str) -> None:
        """``filters()``: every (filter, QoS) subscribed, sent again on each connect (the
        dispatcher's subscriptions say it)."""
        self._client = client
        self._filters = filters
        self._url = url
        self._worker_id = worker_id
        self._lines = lines
        self._lock = threading.Lock()
        self._pending: set[int] = set()
        """Message ids of SUBSCRIBEs the broker has not acknowledged yet."""
        self._connected = threading.Event()
        self._ready = threading.Event()
        """Connected and every subscription acknowledged by the broker (SUBACK): from then on
        nothing published to a subscribed topic can miss this client."""

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def subscribe(self, name: str, qos: int) -> None:
        """A filter just added to the subscriptions: sent at once when connected, else on the next connect."""
        with self._lock:
            if self._connected.is_set():
                self._send(name, qos)

    def connected_again(self) -> None:
        """A CONNACK: send every subscription again (ready once all are acknowledged and
        :meth:`settle` was called)."""
        with self._lock:
            self._pending.clear()
            self._connected.set()
            for name, qos in self._filters():
                self._send(name, qos)

    def settle(self) -> None:
        """Ready now, unless a subscription still waits for its SUBACK. Called after the connect
        was handled: a worker that failed before the broker answered waits for readiness, then
        publishes ``offline`` on its way out, and that must come after the status sent on connect."""
        with self._lock:
            if not self._pending:
                self._ready.set()

    def acknowledged(self, mid: int, reasons: Sequence[ReasonCode]) -> None:
        """A SUBACK: a refused subscription is said in a (rate-limited) line."""
        for reason in reasons:
            if reason.is_failure:
                self._lines.warning(("suback", self._url), "the MQTT broker %s refused a subscription of %s: %s",
                                       self._url, self._worker_id, reason)
        with self._lock:
            self._pending.discard(mid)
            if not self._pending and self._connected.is_set():
                self._ready.set()

    def lost(self) -> bool:
        """The connection is gone (or closed by us); True if it was up."""
        was_connected = self._connected.is_set()
        self._connected.clear()
        self._ready.clear()
        return was_connected

    def _send(self, name: str, qos: int) -> None:
        """Send a SUBSCRIBE and count it pending until its SUBACK (hold :attr:`_lock`)."""
        result, mid = self._client.subscribe(name, qos=qos)
        if result == mqtt.MQTT_ERR_SUCCESS and mid is not None:
            self._pending.add(mid)
            self._ready.clear()
