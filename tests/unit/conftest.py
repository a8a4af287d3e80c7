"""The unit tier: pure logic, and workers in-process on a scripted bus and a virtual clock.

What makes a test slow or machine-dependent is refused here outright: a network socket, a child
process or a real sleep fails the test that tries it, so a test that needs one belongs to
``tests/integration`` (which keeps the real component)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

NETWORK_FAMILIES = (socket.AF_INET, socket.AF_INET6)


class UnitTierViolation(AssertionError):
    """A unit test reached for the network, a process or the wall clock's sleep."""


def _refuse(what: str) -> Any:
    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise UnitTierViolation(f"{what} in the unit tier: move the test to tests/integration")

    return refused


@pytest.fixture(autouse=True)
def _no_network_processes_or_sleeps(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real_connect, real_bind = socket.socket.connect, socket.socket.bind

    def connect(sock: socket.socket, address: Any) -> Any:
        if sock.family in NETWORK_FAMILIES:
            raise UnitTierViolation(f"a network connection to {address!r} in the unit tier: move the test to tests/integration")
        return real_connect(sock, address)

    def bind(sock: socket.socket, address: Any) -> Any:
        if sock.family in NETWORK_FAMILIES:
            raise UnitTierViolation(f"listening on {address!r} in the unit tier: move the test to tests/integration")
        return real_bind(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "bind", bind)
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("a child process"))
    monkeypatch.setattr(time, "sleep", _refuse("time.sleep (wait on a virtual clock or an event)"))
    yield
