"""One worker instance per environment and role.

Two instances of a worker on one broker (``run`` started twice, two laptops configured alike)
share the client id ``humaine-{env}-{worker}``: the broker hands the id to whichever connected
last, so they knock each other off about once a second and split the messages between them.
Before connecting, a worker reads the retained status of its role with a probe connection of
its own; a live one means another instance runs, and this one refuses in one line unless
``[broker] takeover`` is set.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any

from pydantic import ValidationError

from workers.runtime.bus import Bus
from workers.runtime.messages import Status, new_id
from workers.runtime.strict_json import StrictJSONError
from workers.runtime.strict_json import loads as strict_loads

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 2.0
"""How long the probe may take; a broker that does not answer by then is not waited for (the
worker's own connection keeps retrying, and a duplicate is still caught once both connect)."""


class DuplicateInstance(RuntimeError):
    """Another instance of this worker is online; the message says where."""


def pid_running(pid: int) -> bool:
    """True when a process with ``pid`` runs on this machine (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def running_instance(bus: Bus, timeout: float = PROBE_TIMEOUT_S) -> Status | None:
    """The retained status of another live instance of ``bus``'s worker, or ``None``."""
    status = _read_retained_status(bus, timeout)
    if status is None or status.state == "offline":
        return None
    if status.host == socket.gethostname() and (status.pid == os.getpid() or not pid_running(status.pid)):
        return None  # ours, or left by a process of this machine that is gone
    return status


def check_single_instance(bus: Bus, takeover: bool, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Raise :class:`DuplicateInstance` when another instance runs (unless ``takeover``)."""
    other = running_instance(bus, timeout)
    if other is None:
        return
    where = f"host {other.host}, pid {other.pid}, state {other.state}"
    if takeover:
        log.warning("taking over from the running %s (%s)", bus.worker_id, where)
        return
    raise DuplicateInstance(
        f"another {bus.worker_id} is running for environment {bus.topics.env} ({where}); "
        "stop it, or start this one with --set broker.takeover=true"
    )


def _read_retained_status(bus: Bus, timeout: float) -> Status | None:
    status_topic = bus.topics.status(bus.worker_id)
    echo = bus.topics.probe(new_id())
    found: list[Status] = []
    done = threading.Event()
    probe = bus.new_client(f"humaine-probe-{new_id()[:16]}", clean_session=True)

    def on_connect(client: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if not reason.is_failure:
            client.subscribe([(status_topic.name, status_topic.qos), (echo.name, echo.qos)])

    def on_subscribe(client: Any, _u: Any, _mid: Any, _codes: Any, _p: Any) -> None:
        client.publish(echo.name, b"probe", qos=echo.qos)

    def on_message(_c: Any, _u: Any, msg: Any) -> None:
        if msg.topic == echo.name:
            done.set()
            return
        if msg.topic != status_topic.name or not msg.payload:
            return  # amqtt 0.12 also sends other clients' retained messages
        try:
            found.append(Status.model_validate(strict_loads(msg.payload)))
        except (StrictJSONError, ValidationError):
            pass  # the bus itself names a bad status when it sees it

    probe.on_connect, probe.on_subscribe, probe.on_message = on_connect, on_subscribe, on_message
    try:
        probe.connect_async(bus.address.host, bus.address.port, bus.settings.keepalive_s)
        probe.loop_start()
        if not done.wait(timeout):
            log.debug("no answer from the MQTT broker within %.1f s; not checking for another %s", timeout, bus.worker_id)
    finally:
        probe.disconnect()
        probe.loop_stop()
    return found[-1] if found else None
