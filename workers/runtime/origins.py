"""Whether a message on the bus is what the worker it names said.

The broker takes a payload from any client that connects, and a message's ``source`` is a field
like any other: a message that claims ``transcript`` as its source may come from a stray client
(a tool or a test left running, another room's process on a shared broker), be replayed from a
worker's previous run, or be typed by hand into ``mosquitto_pub``. Every bus stamps what it
publishes with its process (:class:`~workers.runtime.messages.Origin`: the host, the pid and when
its bus started), the same three that the retained status it keeps on ``status/{worker}``
carries. A reader that shows a message as a room worker's (the operator console, ``run``'s
terminal) holds the two together (:func:`vouched`), and takes a worker's status only from that
worker's own status topic (:func:`own_status`).

What this cannot stop is a client that reads a worker's retained status and copies it, or
publishes over it: on a broker other machines can reach, give it a password (``[broker]
username`` and ``password``; the embedded broker checks them, :mod:`workers.runtime.broker_auth`),
so that only the room connects at all.
"""

from __future__ import annotations

from typing import Protocol

from workers.runtime.messages import Envelope, Origin, Status
from workers.runtime.topics import Topics


class Published(Protocol):
    """A worker's retained status, as a reader keeps it (:class:`Status` or a view of one);
    read-only, so that a narrower field (``Status.state``, a ``Literal``) still fits."""

    @property
    def worker(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def pid(self) -> int: ...
    @property
    def started_at(self) -> int: ...


def own_status(topics: Topics, topic: str, status: Status) -> bool:
    """Whether ``status`` came on its own worker's status topic: one published on another topic
    (``status/intruder`` saying ``"worker": "transcript"``) speaks for nobody, nor one whose
    worker could not have a topic."""
    try:
        return topic == topics.status(status.worker).name
    except ValueError:
        return False


def vouched(message: Envelope, status: Published | None) -> bool:
    """Whether ``status``, the retained status of the worker ``message`` names as its source,
    says that worker runs (is not offline) in the very process that published ``message``."""
    return (status is not None and message.origin is not None and status.worker == message.source
            and status.state != "offline"
            and message.origin == Origin(host=status.host, pid=status.pid, started_at=status.started_at))
