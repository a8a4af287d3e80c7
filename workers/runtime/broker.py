"""Finding a broker, and the one started here when none answers.

The venue runs mosquitto; a laptop demo or a fresh checkout has none. With ``mode = "auto"``
the suite probes the configured address and, when nothing answers there and the address is
on this machine, starts one on 127.0.0.1 — one log line says so: mosquitto with a persistence
configuration when it is installed (queued QoS 1 messages and sessions survive even its
``kill -9``), else the embedded amqtt broker, which keeps nothing across its own restart (one
warning line says that too).
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from workers.runtime.config import BrokerSettings, Config, ConfigError

log = logging.getLogger(__name__)

DEFAULT_MQTT_PORT = 1883
DEFAULT_MQTTS_PORT = 8883
PROBE_TIMEOUT_S = 0.5
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0", ""})
MOSQUITTO_PATHS = ("mosquitto", "/usr/sbin/mosquitto")
MOSQUITTO_START_S = 10.0
NOT_PERSISTENT = (
    "the embedded MQTT broker keeps no sessions or queued messages across its own restart "
    "(no persistence): install mosquitto, which the suite then starts with persistence"
)


class BrokerUnavailable(RuntimeError):
    """No broker can be started here, and waiting will not help (its store cannot be written):
    the command says so in one line and exits with status 3."""


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


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach."""
    return host in ("localhost", "::1") or host.startswith("127.")


class EmbeddedBroker:
    """amqtt serving MQTT 3.1.1 from a background thread of this process.

    Bound beyond loopback it requires ``username`` and ``password`` (refused without): anyone
    on the network could otherwise publish on the suite's topics."""

    persistent = False
    description = "embedded, not persistent"

    def check(self) -> None:
        """Nothing to watch: it lives and dies with this process."""

    def __init__(self, port: int = DEFAULT_MQTT_PORT, host: str = "127.0.0.1", username: str = "", password: str = "") -> None:
        if not is_loopback(host) and not (username and password):
            raise ConfigError(
                f"the embedded MQTT broker on {host} would be open to the network: set [broker] username and password"
            )
        self.username, self.password = username, password
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
            "plugins": (
                {"workers.runtime.broker_auth.PasswordAuth": {"username": self.username, "password": self.password}}
                if self.username
                else {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}}
            ),
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


def mosquitto_binary() -> str | None:
    for candidate in MOSQUITTO_PATHS:
        found = shutil.which(candidate)
        if found:
            return found
    return None


class MosquittoServer:
    """mosquitto on 127.0.0.1, persisting every change under ``directory``: a ``kill -9`` of
    the broker loses no session and no queued QoS 1 message. It ends with this process (see
    :mod:`workers.runtime.parent`): start and check it from the main thread, since the kernel's
    parent-death signal follows the thread that started the process."""

    persistent = True

    def __init__(self, binary: str, port: int, directory: Path, host: str = "127.0.0.1") -> None:
        self.binary = binary
        self.address = BrokerAddress(host, port, False)
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    description = "started here: mosquitto, persistent"

    def start(self, fresh: bool = True) -> BrokerAddress:
        """Start mosquitto; ``fresh`` forgets what an earlier run left in its store (the
        sessions of workers that are gone, messages for a round long over)."""
        from workers.runtime.parent import die_with_parent_preexec

        self.directory.mkdir(parents=True, exist_ok=True)
        if fresh:
            (self.directory / "mosquitto.db").unlink(missing_ok=True)
        conf = self.directory / "mosquitto.conf"
        conf.write_text(
            f"listener {self.address.port} {self.address.host}\n"
            "allow_anonymous true\n"
            "persistence true\n"
            f"persistence_location {self.directory.resolve()}/\n"
            "autosave_interval 1\n"
            "autosave_on_changes true\n"
            "max_queued_messages 100000\n"
            "log_dest none\n"
            # as root mosquitto would drop to a 'mosquitto' user that cannot write the directory
            f"user {getpass.getuser()}\n"
        )
        # a session of its own: Ctrl-C reaches the whole terminal's process group, and a broker
        # gone before the workers have stopped costs every one of them an error line; this
        # process stops it last (and it dies with this process however that ends)
        self.process = subprocess.Popen(
            [self.binary, "-c", str(conf)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, preexec_fn=die_with_parent_preexec(), start_new_session=True,
        )
        deadline = time.monotonic() + MOSQUITTO_START_S
        while not broker_answers(self.address, 0.2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"mosquitto did not start on port {self.address.port}")
            time.sleep(0.05)
        return self.address

    def check(self) -> None:
        """Start mosquitto again if it died: its store gives every worker its session back."""
        if self.process is None or self.process.poll() is None:
            return
        self.restarts += 1
        log.warning("mosquitto died (exit code %s); restarting it from its store", self.process.returncode)
        try:
            self.start(fresh=False)
        except RuntimeError as exc:
            log.error("%s", exc)

    def stop(self, timeout: float = 5.0) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


StartedBroker = EmbeddedBroker | MosquittoServer


def ensure_broker(settings: BrokerSettings, data_dir: Path | None = None) -> tuple[BrokerAddress, StartedBroker | None]:
    """Resolve the broker to use, starting one when the mode asks for it.

    Returns the address clients should connect to and the broker started here (to stop later),
    or ``None`` when an external broker is used. With ``data_dir`` and mosquitto installed,
    ``auto`` starts mosquitto with persistence under ``data_dir``; otherwise the embedded one.
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
    binary = mosquitto_binary() if settings.mode == "auto" and data_dir is not None else None
    started: StartedBroker
    if binary is not None and data_dir is not None:
        started = MosquittoServer(binary, address.port, data_dir / "mosquitto")
        what = "mosquitto (persistent)"
    else:
        started = EmbeddedBroker(address.port, username=settings.username, password=settings.password)
        what = "the embedded broker"
    try:
        started.start()
    except OSError as exc:  # mosquitto's store under data_dir: a read-only or full disk
        raise BrokerUnavailable(
            f"no MQTT broker answers at {address.url}, and the one started here cannot keep its store in "
            f"{getattr(started, 'directory', data_dir)}: {exc.strerror or exc}; set data_dir to a folder that can be "
            "written, or start a broker (mosquitto, or humaine-env broker)"
        ) from None
    except RuntimeError as exc:
        raise ConfigError(f"{exc} (is port {address.port} taken? set [broker] url)") from None
    log.info("no MQTT broker at %s: started %s on %s", address.url, what, started.address.url)
    if not started.persistent:
        log.warning("%s", NOT_PERSISTENT)
    return started.address, started


@contextmanager
def broker_for(config: Config) -> Iterator[tuple[Config, StartedBroker | None]]:
    """``config`` pointed at the broker :func:`ensure_broker` resolves, and the one started for
    this block (``None`` when an external one is used), stopped when it ends (``run``,
    ``replay``, ``eval``: commands whose workers must all use one broker)."""
    address, started = ensure_broker(config.broker, config.core.data_dir)
    try:
        yield config.with_overrides({"broker.url": address.url, "broker.mode": "external"}), started
    finally:
        if started is not None:
            started.stop()
