"""The worker base class: one process (or thread) with a bus, a status and a clean stop.

A worker subclass only writes its ``run`` loop; this module gives every worker the same
start-up (bus connected, retained ``online`` status), the same health reporting and the same
stop: SIGINT/SIGTERM set a stop event, ``run`` returns, the bus publishes ``offline`` — all
within :data:`STOP_DEADLINE_S`.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.instance import DuplicateInstance, check_single_instance
from workers.runtime.logs import NOTICE
from workers.runtime.parent import started_by_run
from workers.runtime.topics import Topics

STOP_DEADLINE_S = 2.0
"""A worker must be gone this long after SIGINT/SIGTERM."""
EXIT_CONFIG = 2
"""Exit code of a command whose configuration or arguments are invalid (said in one line)."""
EXIT_UNAVAILABLE = 3
"""Exit code of a worker that cannot run here (device or model missing) and has said why in
one line; the supervisor does not restart it."""
SIGNAL_POLL_S = 0.2
"""The longest a main thread blocks at once while it waits to be stopped (see :func:`wait_for_stop`)."""
HEALTH_INTERVAL_S = 3.0
"""How often the retained status is refreshed with the worker's health figures: three missed
refreshes mark a hung worker (stopped with SIGSTOP, say) silent on the operator console in about
9 s, within the 10 s a fault may take to show; a status of a few hundred bytes every 3 s is nothing."""
EXIT_BUS_DEAD = 70
"""Exit code of a worker whose MQTT network thread died: it is restarted by the supervisor."""
EXIT_NO_BROKER = 69
"""Exit code of a worker that never reached its MQTT broker within ``[broker] connect_wait_s``
(restarted by the supervisor: the broker may come up later)."""
BROKER_WAIT_NOTICE_S = 2.0
"""A worker still without its broker this long after starting says that it is waiting."""
WATCHDOG_INTERVAL_S = 0.5
"""How often the watchdog looks at the bus's network thread."""


class WorkerUnavailable(Exception):
    """Raised by :meth:`Worker.run` when the worker cannot run here and retrying cannot help (a
    media file that cannot be read): one line, then :data:`EXIT_UNAVAILABLE`."""


class DeviceAbsent(WorkerUnavailable):
    """The worker's device is not here and the room has a documented way on without it (no
    webcam on a laptop: the addressee comes from names only). Not a problem to act on: one
    NOTICE line saying what the room does instead, then :data:`EXIT_UNAVAILABLE` as for any
    worker that cannot run here."""


class Worker:
    """Base of every worker. Subclasses set :attr:`name` and implement :meth:`run`."""

    name: ClassVar[str] = "worker"
    serves_http: ClassVar[bool] = False
    """A worker the platform calls over HTTP (the Avatar Controller, the stand-ins):
    - its status stays ``starting`` until :meth:`run` has the port listening and calls
      :meth:`report_ok`, so nobody who waits for ``online`` finds the port closed;
    - it keeps waiting for a broker it never reached instead of exiting after ``[broker]
      connect_wait_s``: the EO exits when a service it calls is down, so answering without the
      bus beats not answering."""

    def __init__(self, config: Config, worker_id: str | None = None, bus: Bus | None = None) -> None:
        self.config = config
        self.worker_id = worker_id or self.name
        self.log = logging.getLogger(f"humaine.{self.worker_id}")
        self.bus = bus or Bus(config, self.worker_id, health=self.health, ready=not self.serves_http, refresh_s=HEALTH_INTERVAL_S)
        self.topics: Topics = self.bus.topics
        self.stop_event = threading.Event()
        self.exit_code = 0
        """What :func:`run_worker` returns; set non-zero by the watchdog and by failures."""
        self.failure = ""
        """The one line that said why the worker stopped on a failure (empty: it did not)."""
        self._health_thread: threading.Thread | None = None

    # -- to override -------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """The worker's main loop; return soon after ``stop`` is set."""
        wait_for_stop(stop)

    def health(self) -> dict[str, Any]:
        """Figures published in the retained status (counters, rates, device state)."""
        stats = self.bus.stats
        return {"mqtt_connected": self.bus.connected, "published": stats.published, "received": stats.received}

    # -- status helpers ----------------------------------------------------------------------
    def report_error(self, detail: str) -> None:
        """Retained ``error`` status with a readable reason (device lost, model missing...)."""
        self.log.error("%s", detail)
        self.bus.set_status("error", detail)

    def report_ok(self, detail: str = "") -> None:
        self.bus.set_status("online", detail)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Connect the bus, unless another instance of this worker runs (raises
        :class:`~workers.runtime.instance.DuplicateInstance`). Subscribe in the constructor: the
        persistent session delivers what the broker queued for this worker as soon as it connects."""
        check_single_instance(self.bus, self.config.broker.takeover)
        self.bus.start()
        self._health_thread = threading.Thread(target=self._watch, name=f"{self.worker_id}-watchdog", daemon=True)
        self._health_thread.start()

    def stop(self) -> None:
        self.stop_event.set()

    def close(self) -> None:
        """Stop; the retained ``offline`` status keeps why when the worker failed (a console
        opened later still sees "cannot run: no camera ...", not only "stopped")."""
        self.stop_event.set()
        self.bus.stop(self.failure or "stopped")

    def fail(self, code: int, detail: str) -> None:
        """Stop with exit ``code`` after one error line (the supervisor restarts the worker
        unless ``code`` says a restart cannot help)."""
        self.log.error("%s", detail)
        self.exit_code = code
        self.failure = detail
        self.stop_event.set()

    def _watch(self) -> None:
        """Refresh the health figures, and turn a dead bus thread into a non-zero exit: such a
        worker would go on looking online while hearing and saying nothing."""
        started = time.monotonic()
        next_health = started + HEALTH_INTERVAL_S
        said_waiting = False
        while not self.stop_event.wait(WATCHDOG_INTERVAL_S):
            if self.bus.stats.connects == 0:
                waited = time.monotonic() - started
                limit = self.config.broker.connect_wait_s
                if waited >= limit and not self.serves_http:
                    self.fail(EXIT_NO_BROKER, f"no MQTT broker answered at {self.bus.address.url} within {limit:.0f} s; "
                                              "start one (mosquitto, or humaine-env broker) or set [broker] url")
                    _exit_if_still_running(self.exit_code)
                    return
                if not said_waiting and waited >= BROKER_WAIT_NOTICE_S:
                    said_waiting = True
                    self.log.warning("waiting for the MQTT broker at %s (nothing answers there yet%s)", self.bus.address.url,
                                     "" if self.serves_http else f"; giving up after {limit:.0f} s")
            if self.bus.taken_over is not None:
                other = self.bus.taken_over
                self.fail(EXIT_UNAVAILABLE, f"stopped: host {other.host}, pid {other.pid} runs this worker now")
                _exit_if_still_running(self.exit_code)
                return
            if not self.bus.alive:
                self.fail(EXIT_BUS_DEAD, "the MQTT network thread died; exiting so that the worker is restarted")
                _exit_if_still_running(self.exit_code)
                return
            if time.monotonic() >= next_health:
                next_health += HEALTH_INTERVAL_S
                if self.bus.connected:
                    self.bus.refresh_status()


def _exit_if_still_running(code: int) -> None:
    """Give the main thread its stop deadline to return, then end the process with ``code``."""
    time.sleep(STOP_DEADLINE_S)
    logging.getLogger(__name__).error("the worker did not stop in %.0f s; exiting", STOP_DEADLINE_S)
    logging.shutdown()
    os._exit(code)


def wait_for_stop(stop: threading.Event) -> None:
    """Block until ``stop`` is set, waking every :data:`SIGNAL_POLL_S`.

    The kernel may hand SIGINT/SIGTERM to any thread of the process (the MQTT, HTTP and speech
    threads included); CPython then runs the Python handler only when the main thread next
    executes, which a main thread blocked in an untimed wait never does. Seen: a worker that
    ignored Ctrl-C and SIGTERM until killed."""
    while not stop.wait(SIGNAL_POLL_S):
        pass


def install_stop_signals(on_stop: Callable[[], None]) -> None:
    """SIGINT and SIGTERM call ``on_stop``; a second SIGINT is left to abort the process.

    A child of ``run`` leaves the terminal's Ctrl-C to ``run``: the terminal hands SIGINT to its
    whole process group at once, and workers that stopped together cut the calls in flight
    between them (the stand-in EO's rejection to a seller that was already gone). ``run`` stops
    them with SIGTERM in an order that lets each call finish (``humaine_env.supervisor``).

    ``on_stop`` runs on a thread of its own: the Python handler runs in the main thread between
    any two bytecodes, possibly while that thread holds the lock ``on_stop`` needs (inside
    ``Event.wait``, or inside the ``Event.set`` of a signal handled a moment earlier), and that
    lock is not reentrant."""

    def handler(signum: int, _frame: object) -> None:
        logging.getLogger(__name__).info("received %s, stopping", signal.Signals(signum).name)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Thread(target=on_stop, name="stop-signal", daemon=True).start()

    signal.signal(signal.SIGINT, _left_to_run if started_by_run() else handler)
    signal.signal(signal.SIGTERM, handler)


def _left_to_run(_signum: int, _frame: object) -> None:
    """The terminal's Ctrl-C in a child of ``run``: ``run`` got it too and sends SIGTERM in turn.
    (A handler, not ``SIG_IGN``: an ignored signal would stay ignored in the programs a worker
    starts.)"""
    logging.getLogger(__name__).debug("Ctrl-C: run stops this worker in its turn")


FAILURE_STATUS_WAIT_S = 3.0
"""How long a worker that failed before reaching its broker waits for it, so that its retained
``error`` status (the reason) is published before it exits."""


def run_worker(worker: Worker, install_signals: bool = True, say_failure: bool = True) -> int:
    """Start ``worker``, run it until stopped, then stop the bus; returns an exit code.
    ``say_failure=False``: a caller that runs workers inside its own command (``replay``)
    says a worker's failure itself, in its own one line; the status still carries it."""
    if install_signals:
        install_stop_signals(worker.stop)
    try:
        worker.start()
    except DuplicateInstance as exc:
        print(f"humaine-env {worker.worker_id}: {exc}", file=sys.stderr, flush=True)
        return EXIT_UNAVAILABLE
    started = time.monotonic()
    code = 0
    try:
        worker.run(worker.stop_event)
    except KeyboardInterrupt:
        pass
    except DeviceAbsent as exc:
        worker.failure = str(exc)
        if say_failure:
            worker.log.log(NOTICE, "%s", worker.failure)  # the documented fallback: a notice, not an error
        worker.bus.set_status("error", worker.failure, fallback=True)
        code = EXIT_UNAVAILABLE
        worker.bus.wait_connected(FAILURE_STATUS_WAIT_S)
    except WorkerUnavailable as exc:
        worker.failure = f"cannot run: {exc}"
        if say_failure:
            worker.report_error(worker.failure)  # the one line (report_error logs it)
        else:
            worker.bus.set_status("error", worker.failure)
        code = EXIT_UNAVAILABLE
        # failed before the broker answered, or while its connect is being handled on the
        # network thread: the error status goes out on connect, and "offline" must follow it
        # (or nobody but this console learns why we stopped); at once when already ready
        worker.bus.wait_connected(FAILURE_STATUS_WAIT_S)
    finally:
        worker.close()
    worker.log.debug("stopped after %.1f s", time.monotonic() - started)
    worker.exit_code = code or worker.exit_code
    return worker.exit_code
