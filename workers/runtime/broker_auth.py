"""Username/password check of the embedded broker (an amqtt plugin, loaded by amqtt by name).

A broker bound beyond loopback is reachable by anyone on the venue's network; without a
password anyone could publish on the suite's topics (a retained round state, a transcript).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from amqtt.plugins.base import BaseAuthPlugin
from amqtt.session import Session


# amqtt ships no py.typed marker, so its base is Any to mypy; amqtt loads only its subclasses
class PasswordAuth(BaseAuthPlugin):  # type: ignore[misc]
    """Accepts a client only with the configured username and password."""

    @dataclass
    class Config:
        username: str = ""
        password: str = ""

    async def authenticate(self, *, session: Session) -> bool:
        expected: PasswordAuth.Config = self.config
        given_user = (session.username or "").encode()
        given_password = (session.password or "").encode() if isinstance(session.password, str) else bytes(session.password or b"")
        user_ok = hmac.compare_digest(given_user, expected.username.encode())
        password_ok = hmac.compare_digest(given_password, expected.password.encode())
        return bool(expected.username) and user_ok and password_ok
