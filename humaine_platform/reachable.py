"""Whether a service listens: a TCP connection to a URL's host and port, nothing sent.

The room waits for the sellers before a round starts (the stand-in's automatic round, the
Avatar Controller's first round by itself) and for a program it started to listen on its port;
an HTTP request would be answered by some agents with an error, or not at all, before they are
set up, so the question asked is only whether the port takes connections.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Final
from urllib.parse import urlsplit

CONNECT_PROBE_S: Final = 0.5
"""A service on this machine or the venue's network takes a connection well within this."""


def host_port(url: str) -> tuple[str, int]:
    """``url``'s host and port (the scheme's own port when none is written)."""
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)


def answers(url: str, timeout: float = CONNECT_PROBE_S) -> bool:
    """True when something accepts TCP connections at ``url``'s host and port."""
    try:
        with socket.create_connection(host_port(url), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


async def answers_soon(url: str, timeout: float = CONNECT_PROBE_S) -> bool:
    """:func:`answers`, off the event loop (which serves the EO meanwhile)."""
    return await asyncio.to_thread(answers, url, timeout)
