"""The Avatar Controller's app as :func:`avatar.app.create_app` assembles it, in-process: every
route of every router answers only with the token but ``/health``, a page opened with
``?token=`` hands out the cookie its files and feed then use, and the routers read what they need
from the app (no lifespan runs here: nothing listens, nothing is spoken)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute, APIWebSocketRoute
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute
from starlette.websockets import WebSocketDisconnect

from avatar import human_side
from avatar.app import PageSources, create_app
from avatar.auth import TOKEN_COOKIE, WS_UNAUTHORIZED
from avatar.controller import AvatarController
from avatar.display import routes as display
from avatar.room_ledger import ledger_in_memory
from avatar.settings import AvatarSettings
from hardware.speaker import Speaker
from hardware.speaker_sinks import open_sink
from tests.support.scripted_bus import ScriptedBroker
from workers.runtime.config import Config

TOKEN = "s3cret"


@pytest.fixture
def make_app(tmp_path: Path) -> Iterator[Any]:
    """``make_app(token)``: the app of a controller on a scripted bus, speaking to the browser
    (so the audio route is there), with the buyer's page and the console."""
    speakers: list[Speaker] = []

    def make(token: str = TOKEN) -> FastAPI:
        config = Config(file_data={}, environ={}, overrides={
            "environment_uuid": "unit", "data_dir": str(tmp_path / "data"), "avatar.token": token,
            "avatar.speaker": "browser", "avatar.speech_process": False})
        bus = ScriptedBroker().bus(config, "avatar")
        settings = config.section(AvatarSettings)
        speaker = Speaker(open_sink(settings.speaker))
        speakers.append(speaker)
        controller = AvatarController(settings, config.core.avatars, bus.as_bus(), speaker, ledger=ledger_in_memory())
        return create_app(controller, PageSources(config, bus, lambda: True))

    yield make
    for speaker in speakers:
        speaker.close()


def routes_of(app: FastAPI) -> Iterator[BaseRoute]:
    """Every route the app answers on, the included routers' too."""
    for route in app.routes:
        included = getattr(route, "original_router", None)  # how this FastAPI keeps an included router
        yield from (included.routes if included is not None else [route])


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


def test_every_route_but_health_needs_the_token(make_app: Any) -> None:
    app = make_app()
    routes = list(routes_of(app))
    paths = {getattr(r, "path", None) for r in routes}
    assert {human_side.HEALTH_PATH, human_side.OPENAPI_PATH, display.DISPLAY_FEED_PATH} <= paths
    client = TestClient(app)
    for route in routes:
        if isinstance(route, APIWebSocketRoute):
            with pytest.raises(WebSocketDisconnect) as closed, client.websocket_connect(concrete(route.path)):
                pass
            assert closed.value.code == WS_UNAUTHORIZED, route.path
            continue
        assert isinstance(route, APIRoute), f"{route!r}: no router dependency reaches it (a mount?)"
        for method in route.methods:
            answer = client.request(method, concrete(route.path), params={"token": "nope"})
            if route.path == human_side.HEALTH_PATH:
                assert answer.status_code == 200
            else:
                assert (answer.status_code, answer.headers.get("www-authenticate")) == (401, "Bearer"), (method, route.path)


def test_a_page_opened_with_the_token_hands_its_files_and_feed_the_cookie(make_app: Any) -> None:
    client = TestClient(make_app())
    page = client.get(display.DISPLAY_PATH, params={"token": TOKEN})
    assert page.status_code == 200 and f'data-feed="{display.DISPLAY_FEED_PATH}"' in page.text
    assert page.headers["set-cookie"].startswith(f"{TOKEN_COOKIE}={TOKEN}; HttpOnly; SameSite=Strict")
    assert client.get(f"{display.DISPLAY_STATIC_PATH}/display.js").status_code == 200
    with client.websocket_connect(display.DISPLAY_FEED_PATH) as feed:
        assert feed.receive_json()["type"] == "snapshot"
    client.cookies.clear()
    assert client.post(human_side.EO_PATHS[0], params={"token": TOKEN}, json={}).status_code == 401  # the query is for pages
    assert client.get(human_side.OPENAPI_PATH, headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    docs = client.get(human_side.DOCS_PATH, params={"token": TOKEN})
    assert docs.status_code == 200 and f"{human_side.OPENAPI_PATH}?token={TOKEN}" in docs.text


def test_without_a_token_everything_is_open_and_the_eo_is_always_acknowledged(make_app: Any) -> None:
    client = TestClient(make_app(""))
    assert client.get(display.DISPLAY_PATH).status_code == 200
    assert "set-cookie" not in client.get(display.DISPLAY_PATH, params={"token": "anything"}).headers
    for path in human_side.EO_PATHS:
        answer = client.post(path, content=b"{not json")
        assert (answer.status_code, answer.json()) == (200, {"status": "Acknowledged"}), path
    schema = client.get(human_side.OPENAPI_PATH).json()
    assert set(human_side.EO_PATHS) | {human_side.HEALTH_PATH} <= set(schema["paths"])
