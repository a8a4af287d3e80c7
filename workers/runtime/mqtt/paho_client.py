"""The one place a paho client is made: credentials, TLS and paho's logging for every client of
the suite (a worker's bus and the one-instance probe)."""

from __future__ import annotations

import logging
import ssl

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from workers.runtime.broker import BrokerAddress
from workers.runtime.config import BrokerSettings


class _ReconnectNoise(logging.Filter):
    """paho logs an ERROR when the broker's socket closes under it and on every loop turn while
    it waits to reconnect. The bus's own warning says the broker is gone once reconnecting fails
    (:class:`~workers.runtime.mqtt.reconnects.Reconnects`), and says nothing when the broker is
    back at once or the room is stopping (Ctrl-C ends the embedded broker and the workers
    together), so those lines are dropped."""

    NOISE = ("Client is not connected", "failed to receive on socket")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(noise in message for noise in self.NOISE)


PAHO_LOG = logging.getLogger("paho")
PAHO_LOG.addFilter(_ReconnectNoise())


def paho_client(settings: BrokerSettings, address: BrokerAddress, client_id: str, clean_session: bool) -> mqtt.Client:
    """A paho client with the configured credentials, TLS and logging (not connected)."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean_session,
                         protocol=mqtt.MQTTv311)
    client.enable_logger(PAHO_LOG)
    # our callbacks catch their own failures; this only guards against a bug of ours
    # killing the network thread (paho then logs the error in one line)
    client.suppress_exceptions = True
    if settings.username:
        client.username_pw_set(settings.username, settings.password or None)
    if address.tls:
        client.tls_set(
            ca_certs=settings.tls_ca or None,
            certfile=settings.tls_cert or None,
            keyfile=settings.tls_key or None,
            cert_reqs=ssl.CERT_NONE if settings.tls_insecure else ssl.CERT_REQUIRED,
        )
        client.tls_insecure_set(settings.tls_insecure)
    return client
