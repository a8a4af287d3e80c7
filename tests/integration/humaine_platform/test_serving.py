"""A stop of :class:`AppServer` that outlasts its deadline is forced, and what the console gets is
one line, not uvicorn's traceback of the app's cancelled lifespan (seen on a loaded machine: a
``run`` stopped with SIGTERM printed it). The deadline is shortened here to what a starved
server thread gets on a busy machine."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from fastapi import FastAPI

from tests.support import loopback
from tests.support.helpers import wait_for
from workers.runtime.http import serving
from workers.runtime.http.serving import AppServer

STARVED_S = 0.01
"""The stop deadline of a server thread that does not get the CPU in time."""


def app_with_lifespan(stopped: list[bool]) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        stopped.append(True)

    app = FastAPI(lifespan=lifespan)

    @app.get("/ping")
    def ping() -> dict[str, bool]:
        return {"ok": True}

    return app


def test_a_forced_stop_is_one_line_without_a_traceback(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(serving, "STOP_TIMEOUT_S", STARVED_S)
    stopped: list[bool] = []
    server = AppServer(app_with_lifespan(stopped), "127.0.0.1", 0, "slow app").start()
    assert loopback.get(server.url + "/ping", timeout=5).json() == {"ok": True}
    server.stop()
    assert wait_for(lambda: not server.running, timeout=10)
    said = [r for r in caplog.records if r.name.startswith(("uvicorn", "workers.runtime.http.serving"))]
    assert not any(r.exc_info or "Traceback" in r.getMessage() or "CancelledError" in r.getMessage() for r in said), [
        r.getMessage() for r in said]
    assert [r.getMessage() for r in said if "did not finish stopping" in r.getMessage()] == [
        f"slow app: its HTTP service did not finish stopping in {STARVED_S:.1f} s; ending it"]
    assert not stopped  # forced: uvicorn skipped the app's shutdown, which is why it was cancelled


def test_a_stop_in_time_runs_the_app_s_shutdown_and_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    stopped: list[bool] = []
    server = AppServer(app_with_lifespan(stopped), "127.0.0.1", 0, "quick app").start()
    server.stop()
    assert not server.running and stopped == [True]
    assert not [r for r in caplog.records if "did not finish stopping" in r.getMessage()]
