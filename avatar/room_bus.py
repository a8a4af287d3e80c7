"""The part of the bus (:class:`workers.runtime.bus.Bus`) the Avatar Controller's rooms use: a
seam, so that tests hand them a recording fake."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from workers.runtime.messages import Envelope
from workers.runtime.topics import Topic, Topics

E = TypeVar("E", bound=Envelope)


class Publisher(Protocol):
    """Publishes, subscribes and owns retained state on the room's topics."""

    @property
    def topics(self) -> Topics: ...

    def publish(self, topic: Topic, message: Envelope) -> None: ...

    def subscribe(self, topic: Topic, model: type[E], handler: Callable[[str, E], None]) -> None: ...

    def own(self, topic: Topic, model: type[E], current: Callable[[], E | None]) -> None: ...
