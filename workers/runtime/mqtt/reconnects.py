"""What a bus says about its connection: the first connect, each reconnect, a broker that lost
our session (restarted without persistence: what it held for us is lost, one warning line each
time) and a broker that stays away."""

from __future__ import annotations

import logging

from workers.runtime.mqtt.stats import BusStats


class Reconnects:
    """Counts connects and lost sessions, and says each in a line."""

    def __init__(self, log: logging.Logger, url: str, worker_id: str, persistent: bool, stats: BusStats) -> None:
        self._log = log
        self._url = url
        self._worker_id = worker_id
        self._persistent = persistent
        self._stats = stats
        self._lost_reason: str | None = None
        """Why the broker closed the connection, until a reconnect or a failed one says it."""

    def connected(self, session_present: bool) -> bool:
        """A CONNACK; True when the broker lost its state (a reconnect without our session:
        it lost every retained message and every client's subscriptions with it)."""
        self._stats.connects += 1
        if self._stats.connects == 1:
            self._log.info("connected to MQTT broker %s as %s", self._url, self._worker_id)
            return False
        closed = f"the broker closed the connection ({self._lost_reason}); " if self._lost_reason else ""
        self._lost_reason = None
        self._log.info("%sreconnected to MQTT broker %s (session present: %s)", closed, self._url, session_present)
        if self._persistent and not session_present:
            self._stats.sessions_lost += 1
            # every time: each loss is news (a broker restarting twice in a minute lost twice)
            self._log.warning(
                "the MQTT broker %s lost this client's session (restarted without persistence?): "
                "QoS 1 messages it held for %s are lost (%d times so far)",
                self._url, self._worker_id, self._stats.sessions_lost,
            )
        return not session_present

    def refused(self, reason: object) -> None:
        self._log.warning("MQTT broker %s refused the connection: %s", self._url, reason)

    def lost(self, reason: str) -> None:
        """The broker closed a connection that was up. Said when reconnecting fails
        (:meth:`failed`): a broker that answers again at once closed it on purpose (another
        client took our id)."""
        self._lost_reason = reason

    def failed(self) -> None:
        """Reconnecting failed: the broker is gone (said once per loss)."""
        if self._lost_reason is not None:
            self._log.warning("lost the MQTT broker %s (%s); reconnecting", self._url, self._lost_reason)
            self._lost_reason = None
