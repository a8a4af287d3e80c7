"""A client that never finishes sending its request is answered 408 and disconnected; one that
sends it whole is served however long our answer takes. Real sockets on 127.0.0.1, against the
stand-in EO and a service of our own served the same way (all three of the suite's HTTP apps are
served by :class:`AppServer`)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator

import pytest
from fastapi import Request

from humaine_platform import endpoints as ep
from standins.eo import StandinServer, StandinSettings
from tests.support import loopback
from workers.runtime.http.deadline import DeadlineH11Protocol
from workers.runtime.http.edge import edge_app
from workers.runtime.http.serving import AppServer

READ_TIMEOUT_S = 1.0
HELD = 50
SLOW_ANSWER_S = 2 * READ_TIMEOUT_S


@pytest.fixture(autouse=True)
def short_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DeadlineH11Protocol, "read_timeout_s", READ_TIMEOUT_S)


@pytest.fixture
def slow_service() -> Iterator[AppServer]:
    app = edge_app(title="a service served as ours are")

    @app.post("/answer-late")
    async def answer_late(request: Request) -> dict[str, object]:
        body = await request.json()
        await asyncio.sleep(SLOW_ANSWER_S)  # our own answer may take long (the EO waits for it)
        return {"got": body}

    with AppServer(app, "127.0.0.1", 0, "test service") as server:
        yield server


def _half_sent(port: int, path: str, index: int) -> socket.socket:
    """Half the clients stop in their headers, half in their body."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    request = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
    if index % 2:
        sock.sendall(request + b"Content-Ty")
    else:
        sock.sendall(request + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\": ")
    return sock


def _closed_with(sock: socket.socket) -> bytes:
    """Everything the server sent until it closed the connection (waits at most the socket's timeout)."""
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


@pytest.mark.parametrize("service", ["ours", "standin"])
def test_half_sent_requests_are_timed_out_and_whole_ones_served(slow_service: AppServer, service: str,
                                                                capfd: pytest.CaptureFixture[str]) -> None:
    server: AppServer = slow_service if service == "ours" else StandinServer(StandinSettings(port=0)).start()
    try:
        started = time.monotonic()
        path = "/answer-late" if service == "ours" else ep.RELAY_MESSAGE  # an endpoint that reads its body
        held = [_half_sent(server.port, path, i) for i in range(HELD)]
        answers = [_closed_with(sock) for sock in held]
        took = time.monotonic() - started
        for sock in held:
            sock.close()
        assert all(a.startswith(b"HTTP/1.1 408 ") for a in answers), {a[:40] for a in answers}
        assert took < READ_TIMEOUT_S + 8, took  # each closed about READ_TIMEOUT_S after it began
        with loopback.client(base_url=server.url, timeout=30) as http:  # the service still serves
            assert http.get("/openapi.json").status_code in (200, 404)
            if service == "ours":
                begun = time.monotonic()
                answer = http.post("/answer-late", json={"deal": 1})
                assert answer.status_code == 200 and answer.json() == {"got": {"deal": 1}}
                assert time.monotonic() - begun >= SLOW_ANSWER_S  # a slow answer is never cut
    finally:
        if service == "standin":
            server.stop()
    assert "Traceback" not in capfd.readouterr().err  # one line said, no traceback wall


def test_a_request_sent_slowly_but_within_the_deadline_is_served(slow_service: AppServer) -> None:
    body = b'{"deal": 2}'
    with socket.create_connection(("127.0.0.1", slow_service.port), timeout=30) as sock:
        sock.sendall(b"POST /answer-late HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
        time.sleep(READ_TIMEOUT_S / 4)  # a slow client, well within the deadline
        sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body))
        time.sleep(READ_TIMEOUT_S / 4)
        sock.sendall(body)
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:80]
