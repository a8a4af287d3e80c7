"""No input is a 5xx: the three FastAPI apps (Avatar Controller, stand-in EO, demo seller) under
schemathesis on their own OpenAPI schemas, and under the hostile bodies that once broke them.

All three run for real on 127.0.0.1 (the avatar with its broker and WAV speaker, the seller
replying to the stand-in). schemathesis runs as its CLI (the stable interface), with a fixed
seed and a bounded number of examples per operation, so the whole module stays well under a
minute on two cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from humaine_platform import endpoints as ep
from standins.demo_agents.runner import DemoAgents
from standins.demo_agents.settings import DemoAgentsSettings
from standins.eo.app import create_app as create_standin
from standins.eo.settings import StandinSettings
from tests.support import loopback
from tests.support.avatar import AvatarRunner, captured
from workers.runtime.http.edge import MAX_MAGNITUDE
from workers.runtime.http.serving import AppServer

EXAMPLES = 50
"""Examples per operation and phase (schemathesis ``-n``), on a fixed seed; the coverage phase's
boundary values come on top. 100 took 40 s to 2 minutes of one test worker on two busy cores."""
SEED = 20261122
HTTP_TIMEOUT = 10.0
FUZZ_TIMEOUT_S = 120


@pytest.fixture
def apps(mosquitto: Any, make_config: Any, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The base URL of each app, all three running."""
    avatars = AvatarRunner(mosquitto.url, make_config, tmp_path / "wav")
    standin = AppServer(create_standin(StandinSettings()), "127.0.0.1", 0, "stand-in EO").start()
    sellers = DemoAgents(DemoAgentsSettings(agents={"Celia": 0}), standin.url).start()
    try:
        local, _ = avatars()
        yield {"avatar": local.url, "standin": standin.url, "seller": sellers.urls["Celia"]}
    finally:
        sellers.stop()
        standin.stop()
        avatars.close()


def schemathesis_run(base_url: str, report: Path) -> dict[str, Any]:
    """Run schemathesis against ``base_url``'s schema; its JSON report."""
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{base_url}/openapi.json",
        "--mode", "all", "--phases", "examples,coverage,fuzzing", "-n", str(EXAMPLES), "--seed", str(SEED),
        "--checks", "not_a_server_error", "--generation-database", "none", "--workers", "1", "--no-color",
        "--request-timeout", str(HTTP_TIMEOUT), "--report", "json", "--report-json-path", str(report),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=FUZZ_TIMEOUT_S, cwd=report.parent)  # its cache stays there
    assert report.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads(report.read_text())
    data["_output"] = done.stdout[-4000:]
    data["_returncode"] = done.returncode
    return data


def test_schemathesis_finds_no_5xx_in_any_app(apps: dict[str, str], tmp_path: Path) -> None:
    figures = {}
    for name, url in apps.items():
        report = schemathesis_run(url, tmp_path / f"{name}.json")
        assert report["_returncode"] == 0 and not report["failures"], f"{name}: {report['_output']}"
        assert report["operations"]["tested"] >= 3, report["operations"]
        figures[name] = {"examples": report["test_cases"]["generated"], "failures": len(report["failures"]),
                         "seconds": round(report["running_time"], 1)}
    print("schemathesis:", json.dumps(figures))  # the figures, with -s


HOSTILE_BODIES: list[tuple[str, bytes]] = [
    ("NaN", b'{"roundId": "r1", "roundDuration": NaN}'),
    ("Infinity", b'{"roundId": "r1", "roundDuration": Infinity, "price": -Infinity}'),
    ("1.8e308", b'{"roundId": "r1", "roundDuration": 1.8e308}'),
    ("1e400", b'{"roundId": "r1", "roundDuration": 1e400}'),
    ("beyond 2^53", json.dumps({"roundId": "r1", "roundDuration": MAX_MAGNITUDE * 4}).encode()),
    ("5000 digits", b'{"roundId": "r1", "roundDuration": ' + b"9" * 5000 + b"}"),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000),
    ("deep objects", b'{"a":' * 2000 + b"1" + b"}" * 2000),
    ("lone surrogate", b'{"roundId": "\\ud800", "text": "\\udfff", "speaker": "\\ud83d"}'),
    ("not UTF-8", b'{"roundId": "\xff\xfe"}'),
    ("not JSON", b"{roundId: r1"),
    ("empty", b""),
    ("a string", b'"hello"'),
    ("null", b"null"),
]


def post_paths(base_url: str) -> list[str]:
    schema = loopback.get(f"{base_url}/openapi.json", timeout=HTTP_TIMEOUT).json()
    return [path for path, methods in schema["paths"].items() if "post" in methods]


def test_hostile_bodies_are_refused_in_one_answer_never_a_5xx(apps: dict[str, str]) -> None:
    with loopback.client(timeout=HTTP_TIMEOUT) as http:
        for name, url in apps.items():
            for path in post_paths(url):
                for label, body in HOSTILE_BODIES:
                    response = http.post(url + path, content=body, headers={"content-type": "application/json"})
                    assert response.status_code < 500, (name, path, label, response.text)
                    answer = response.json()  # always JSON, strictly
                    assert json.loads(response.content, parse_constant=pytest.fail) == answer
                    if name == "avatar":  # the EO calls these and exits on an error answer
                        eo_answers = ({"status": "acknowledged"}, {"status": "rejected"}) if path == ep.CONFIRM_ACCEPT else (
                            {"status": "Acknowledged"},)
                        assert response.status_code == 200 and answer in eo_answers, (path, label, answer)
                    elif label not in ("lone surrogate", "empty", "null"):
                        assert 400 <= response.status_code < 500, (name, path, label, response.text)
            assert http.get(f"{url}/health").status_code == 200, name


def test_lone_surrogates_are_replaced_not_lost(apps: dict[str, str]) -> None:
    """An agent's half emoji must not cost its whole message: the avatar takes the message."""
    message = {**captured("/receiveMessage (from agent)"), "text": "Deal \ud83d!"}
    body = json.dumps(message).encode()  # ensure_ascii: the surrogate travels as \\ud83d
    assert b"\\ud83d" in body
    with loopback.client(timeout=HTTP_TIMEOUT) as http:
        response = http.post(apps["avatar"] + ep.RECEIVE_MESSAGE, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text


def test_a_non_ascii_bearer_token_is_a_401(mosquitto: Any, make_config: Any, tmp_path: Path) -> None:
    avatars = AvatarRunner(mosquitto.url, make_config, tmp_path / "wav")
    try:
        local, _ = avatars(**{"avatar.token": "s3cret"})
        with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
            for token in ("Bearer é€", "Bearer \xff", "bearer"):
                headers = [(b"authorization", token.encode("utf-8"))]
                assert http.post(ep.START_ROUND, json=captured("/startRound"), headers=headers).status_code == 401
    finally:
        avatars.close()
