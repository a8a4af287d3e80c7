"""What the routes of the Avatar Controller's app read, kept on ``app.state`` when the app is made.

A resource's router declares what it needs as an ``Annotated[X, Depends(KEY)]`` alias of its own
(the controller, the console, the buyer's desk, the token), and :func:`avatar.app.create_app`
puts each one there with :meth:`StateKey.put`: no route captures it in a closure, and a test can
make an app with any of them.

No ``from __future__ import annotations`` here: FastAPI reads the type of
:meth:`StateKey.__call__`'s parameter from the live annotation (a callable object has no module
globals to resolve a string against).
"""

from typing import Generic, TypeVar

from starlette.applications import Starlette
from starlette.requests import HTTPConnection

T = TypeVar("T")


class StateKey(Generic[T]):
    """One thing an app keeps for its routes under ``app.state.<name>``; the key itself is the
    dependency that reads it (for a request or a WebSocket alike, on the event loop: no thread)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def put(self, app: Starlette, value: T) -> None:
        setattr(app.state, self.name, value)

    def of(self, app: Starlette) -> T:
        value: T = getattr(app.state, self.name)
        return value

    def present(self, app: Starlette) -> bool:
        """Whether the app keeps one (a key some apps go without)."""
        return hasattr(app.state, self.name)

    async def __call__(self, connection: HTTPConnection) -> T:
        return self.of(connection.app)

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"
