"""One way to start Avatar Controllers in a test and speak to them as the EO does: the bodies
the real EO sent (recorded in ``tests/fixtures/eo-observed-traffic.json``) and a runner that starts
controllers in-process, each with its own environment id and an MQTT observer."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from avatar.harness import LocalAvatar, Observer
from humaine_platform import endpoints as ep
from tests.support.paths import FIXTURES
from workers.runtime.messages import RoundState

TRAFFIC: dict[str, Any] = json.loads((FIXTURES / "eo-observed-traffic.json").read_text())["human-ui"]
HTTP_TIMEOUT = 10.0
"""Seconds any one HTTP request of a test may take."""
SPEECH_TIMEOUT = 30.0
"""Seconds a test waits for an avatar to finish speaking."""


def captured(key: str) -> dict[str, Any]:
    return copy.deepcopy(TRAFFIC[key]["body"])


def path_of(key: str) -> str:
    return key.split(" ")[0]


def agent(speaker: str, text: str, **extra: Any) -> dict[str, Any]:
    body = captured("/receiveMessage (from agent)")
    body.update(speaker=speaker, text=text, **extra)
    return body


def ready(http: httpx.Client, observer: Any) -> None:
    """Wait until the observer's subscriptions are live (a retained round state comes back)."""
    assert http.post(ep.SEND_ROUND_METADATA, json=captured("/sendRoundMetadata")).status_code == 200
    observer.wait(RoundState, phase="warmup")


class AvatarRunner:
    """Starts controllers (each with its own environment id and an MQTT observer) and stops
    them all at the end of a test; shared by the avatar test modules."""

    def __init__(self, broker_url: str, make_config: Callable[..., Any], wav_dir: Path) -> None:
        self.broker_url = broker_url
        self.make_config = make_config
        self.wav_dir = wav_dir
        self.running: list[tuple[LocalAvatar, Observer]] = []

    def __call__(self, **overrides: Any) -> tuple[LocalAvatar, Observer]:
        values = {"avatar.port": 0, "avatar.speaker": f"wav:{self.wav_dir}", **overrides}
        config = self.make_config(self.broker_url, **values)
        observer = Observer(config).start()
        local = LocalAvatar(config).start()
        self.running.append((local, observer))
        return local, observer

    def close(self) -> None:
        for local, observer in self.running:
            local.stop()
            observer.stop()
