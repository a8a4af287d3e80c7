"""Finding a broker, and the embedded one that stands in when none answers.

The venue runs mosquitto; a laptop demo or a fresh checkout has none. With ``mode = "auto"``
the suite probes the configured address and, when nothing answers there and the address is
on this machine, serves MQTT itself with amqtt on 127.0.0.1 — one log line says so.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from workers.config import BrokerSettings, Config, ConfigError

log = logging.getLogger(__name__)

DEFAULT_MQTT_PORT = 1883
DEFAULT_MQTTS_PORT = 8883
PROBE_TIMEOUT_S = 0.5
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0", ""})


@dataclass(frozen=True)
class BrokerAddress:
    host: str
    port: int
    tls: bool

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"

    @property
    def is_local(self) -> bool:
        return self.host in LOCAL_HOSTS


def parse_broker_url(url: str) -> BrokerAddress:
    """``mqtt://host:port`` / ``mqtts://host:port`` / ``host:port`` → address."""
    text = url if "://" in url else f"mqtt://{url}"
    parts = urlsplit(text)
    if parts.scheme not in ("mqtt", "mqtts", "tcp", "ssl"):
        raise ConfigError(f"broker url {url!r}: scheme must be mqtt:// or mqtts://")
    tls = parts.scheme in ("mqtts", "ssl")
    try:
        port = parts.port or (DEFAULT_MQTTS_PORT if tls else DEFAULT_MQTT_PORT)
    except ValueError:
        raise ConfigError(f"broker url {url!r}: the port is not a number") from None
    return BrokerAddress(parts.hostname or "127.0.0.1", port, tls)


def broker_answers(address: BrokerAddress, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """True when something accepts TCP connections at the broker address."""
    try:
        with socket.create_connection((address.host, address.port), timeout=timeout):
            return True
    except OSError:
        return False


class EmbeddedBroker:
    """amqtt serving MQTT 3.1.1 on 127.0.0.1 from a background thread of this process."""

    def __init__(self, port: int = DEFAULT_MQTT_PORT, host: str = "127.0.0.1") -> None:
        self.address = BrokerAddress(host, port, False)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._stop_requested: asyncio.Event | None = None

    def start(self, timeout: float = 10.0) -> BrokerAddress:
        # amqtt logs a failed start as a traceback; it is reported below, in one line
        for name in ("amqtt", "transitions"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        self._thread = threading.Thread(target=self._serve, name="embedded-broker", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise RuntimeError("the embedded MQTT broker did not start in time")
        if self._error is not None:
            raise RuntimeError(f"the embedded MQTT broker could not start: {self._error}")
        for name in ("amqtt", "transitions"):
            logging.getLogger(name).setLevel(logging.WARNING)
        return self.address

    def _serve(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to the thread that called start()
            self._error = exc
            self._started.set()

    async def _main(self) -> None:
        from amqtt.broker import Broker

        self._loop = asyncio.get_running_loop()
        self._loop.set_exception_handler(_report_broker_error)
        self._stop_requested = asyncio.Event()
        config = {
            "listeners": {
                "default": {"type": "tcp", "bind": f"{self.address.host}:{self.address.port}"}
            },
            "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
        }
        broker = Broker(config)
        await broker.start()
        self._started.set()
        await self._stop_requested.wait()
        await broker.shutdown()

    def stop(self, timeout: float = 5.0) -> None:
        if self._loop is not None and self._stop_requested is not None:
            self._loop.call_soon_threadsafe(self._stop_requested.set)
        if self._thread is not None:
            self._thread.join(timeout)


def _report_broker_error(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """One line for a failure inside amqtt's own tasks, instead of asyncio's traceback.

    amqtt 0.12 can fail one client's connection handler, e.g. "dictionary changed size during
    iteration" when another client subscribes while it sends retained messages. That client is
    dropped and our bus reconnects with its persistent session, so nothing is lost; the user
    needs to know it happened, not to read amqtt's stack."""
    exc = context.get("exception")
    detail = f"{type(exc).__name__}: {exc}" if exc is not None else "no exception"
    log.warning("embedded MQTT broker: %s (%s); the client reconnects", context.get("message", "internal error"), detail)


def ensure_broker(settings: BrokerSettings) -> tuple[BrokerAddress, EmbeddedBroker | None]:
    """Resolve the broker to use, starting the embedded one when the mode asks for it.

    Returns the address clients should connect to and the embedded broker (to stop later),
    or ``None`` when an external broker is used.
    """
    address = parse_broker_url(settings.url)
    if settings.mode == "external":
        return address, None
    if settings.mode == "auto" and broker_answers(address):
        return address, None
    if settings.mode == "auto" and not address.is_local:
        # A remote broker that is down: wait for it (the bus retries) rather than start a
        # local one that the other machines of the venue would never see.
        log.warning("no MQTT broker answers at %s yet; will keep trying", address.url)
        return address, None
    embedded = EmbeddedBroker(address.port)
    try:
        embedded.start()
    except RuntimeError as exc:
        raise ConfigError(f"{exc} (is port {address.port} taken? set [broker] url)") from None
    log.info(
        "no MQTT broker at %s: started the embedded broker on %s",
        address.url,
        embedded.address.url,
    )
    return embedded.address, embedded


@contextmanager
def broker_for(config: Config) -> Iterator[tuple[Config, bool]]:
    """``config`` pointed at the broker :func:`ensure_broker` resolves, and whether that is the
    embedded one, started for this block and stopped when it ends (``run``, ``replay``,
    ``eval``: commands whose workers must all use one broker)."""
    address, embedded = ensure_broker(config.broker)
    try:
        yield config.with_overrides({"broker.url": address.url, "broker.mode": "external"}), embedded is not None
    finally:
        if embedded is not None:
            embedded.stop()
