"""The Avatar Controller over real HTTP with the bodies captured from the real EO, and MQTT."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect as ws_connect

from avatar.display.routes import DISPLAY_FEED_PATH
from avatar.harness import LocalAvatar, Observer, utterance
from avatar.settings import AvatarSettings
from humaine_platform import endpoints as ep
from tests.support import loopback
from tests.support.avatar import HTTP_TIMEOUT, TRAFFIC, AvatarRunner, captured, path_of
from tests.support.helpers import wait_for
from workers.runtime.messages import AgentMessageSeen, EOVerdict, RoundState, Speaking


def test_captured_eo_round_is_answered_spoken_and_published(start_avatar: AvatarRunner, tmp_path: Path, mosquitto: Any) -> None:
    local, observer = start_avatar()
    answers = {}
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        for key in TRAFFIC:
            response = http.post(path_of(key), json=captured(key))
            assert response.status_code == 200, (key, response.text)
            answers[key] = response.json()
            if key == "/sendRoundMetadata":
                observer.wait(RoundState, phase="warmup")  # the observer's subscriptions are live
    # the only answer the EO takes as a yes, exactly
    assert answers["/confirmAccept"] == {"status": "acknowledged"}
    assert all(a["status"].lower() == "acknowledged" for a in answers.values())

    phases = [s.phase for s in observer.wait(RoundState, 4)]
    assert phases == ["warmup", "round", "post", "ended"]
    warmup, negotiation, post, ended = observer.of(RoundState)
    assert {s.round_id for s in (warmup, negotiation, post, ended)} == {"r1"}
    assert warmup.durations == {"warmUp": 1.0, "round": 60.0, "post": 5.0}
    assert warmup.phase_deadline - warmup.phase_started == 1000
    assert negotiation.phase_deadline - negotiation.phase_started == 60_000 and negotiation.active
    assert post.phase_deadline - post.phase_started == 5_000
    assert ended.phase_deadline is None and not ended.active

    # both permitted messages are published; only Celia's is spoken, after the answer
    seen = observer.wait(AgentMessageSeen, 2)
    assert [m.message["speaker"] for m in seen] == ["Human", "Celia"]
    assert seen[1].message["bid"]["price"] == {"unit": "USD", "value": 3.5}
    resets = observer.wait(Speaking, 2, where=lambda e: not utterance(e))
    assert {(r.avatar, r.state) for r in resets} == {("Celia", "end"), ("Watson", "end")}
    begin, end = observer.wait(Speaking, 2, timeout=15, where=utterance)
    assert (begin.avatar, begin.state, end.state) == ("Celia", "begin", "end")
    assert begin.text == "How about if I sell you 2 eggs for 3.5 USD. (Celia)"
    assert begin.message_id == end.message_id and begin.at <= end.at
    assert not observer.of(Speaking, avatar="Human")
    wavs = list((tmp_path / "wav").glob(f"*Celia-{begin.message_id}.wav"))
    assert len(wavs) == 1

    # a worker that subscribes later still learns the round's state (retained)
    late = Observer(local.worker.config, "late").start()
    try:
        assert late.wait(RoundState)[0].phase == "ended"
        assert late.wait(Speaking)[0].state == "end"  # retained speaking state too
    finally:
        late.stop()


def _without(body: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in keys}


ODD: list[tuple[str, Any]] = [
    # what the EO may send: it needs neither timeStamp nor environmentUUID of an agent
    (ep.RECEIVE_MESSAGE, _without(captured("/receiveMessage (from agent)"), "timeStamp", "environmentUUID")),
    (ep.RECEIVE_MESSAGE, {**captured("/receiveMessage (from agent)"), "timeStamp": "soon", "role": None}),
    (ep.RECEIVE_MESSAGE, {**captured("/receiveMessage (from Human)"), "timestamp": "yesterday"}),
    (ep.CONFIRM_ACCEPT, _without(captured("/confirmAccept"), "timeStamp", "environmentUUID")),
    (ep.RECEIVE_LOG, {**_without(captured("/receiveLog"), "environmentUUID"), "role": None, "permitted": False,
                      "rationale": None}),
    (ep.RECEIVE_REJECTION, {**captured("/receiveMessage (from Human)"), "role": None, "rationale": None}),
    (ep.RECEIVE_ROUND_TOTALS, {"roundId": "r1", "roundTotals": None}),
    (ep.SET_UTILITY, {"roundId": "r1", "name": "competition-ui"}),
    # what it should never send: still one acknowledgement, never an error
    (ep.START_ROUND, {"roundDuration": 60}),
    (ep.START_ROUND, b'{"roundId": "r1", "roundDuration": 1.8e308}'),  # a handler that fails: still acknowledged
    (ep.SEND_ROUND_METADATA, {**captured("/sendRoundMetadata"), "durations": {"warmUp": 1}}),
    (ep.CONFIRM_ACCEPT, _without(captured("/confirmAccept"), "bid")),
    (ep.CONFIRM_ACCEPT, b"{not json"),
    (ep.RECEIVE_LOG, [1, 2]),
    (ep.SET_UTILITY, b"{not json"),
    (ep.RECEIVE_MESSAGE, b'{"speaker": "Celia", "text": NaN}'),  # not strict JSON
    (ep.CONFIRM_ACCEPT, b"[" * 5000),  # nested beyond the edge's bound
]


def test_whatever_the_eo_sends_is_acknowledged_and_confirm_accept_always_says_yes(start_avatar: AvatarRunner) -> None:
    """The EO exits when its human-side service answers with an error (and on anything but
    the exact yes to /confirmAccept): odd bodies are filled in and logged once, never refused."""
    local, observer = start_avatar()
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        for path, body in ODD:
            if isinstance(body, bytes):
                response = http.post(path, content=body, headers={"content-type": "application/json"})
            else:
                response = http.post(path, json=body)
            assert response.status_code == 200, (path, response.text)
            expected = {"status": "acknowledged"} if path == ep.CONFIRM_ACCEPT else {"status": "Acknowledged"}
            assert response.json() == expected, (path, response.text)
        assert http.get("/health").json()["status"] == "ok"
    # both agent messages are spoken although they lacked timeStamp / had role null
    seen = observer.wait(AgentMessageSeen, 3)
    assert sorted(m.message["speaker"] for m in seen) == ["Celia", "Celia", "Human"]
    assert all(m.message.get("environmentUUID") is not None for m in seen)
    assert local.controller.wait_spoken(2, timeout=20)
    assert all(s.result for s in local.controller.speech.spoken())
    verdicts = observer.wait(EOVerdict, 2)
    assert {(v.via, v.permitted, v.rationale) for v in verdicts} == {("log", False, None), ("rejection", False, "")}


HOSTILE_ROUND_IDS = ("r1\u0000x", "r1\nr2", "", "x" * 500, True)
"""Round ids no round has: a NUL, a newline (a folder name, a CSV row), nothing, too long, a bool."""


@pytest.mark.parametrize("path", [ep.SET_UTILITY, ep.SEND_ROUND_METADATA, ep.START_ROUND, ep.RECEIVE_ROUND_TOTALS])
def test_a_round_id_that_is_no_round_id_is_acknowledged_ignored_and_never_stored(start_avatar: AvatarRunner, path: str) -> None:
    """The EO's body with a round id holding a control character (or none, or a bool) is read
    liberally as ever - acknowledged - but not taken: nothing is stored under it, and ``/health``
    and the round state go on answering."""
    local, _ = start_avatar()
    bodies = {ep.SET_UTILITY: {"name": "competition-ui", "utility": {"cake": {}}},
              ep.SEND_ROUND_METADATA: captured("/sendRoundMetadata"), ep.START_ROUND: captured("/startRound"),
              ep.RECEIVE_ROUND_TOTALS: {"roundTotals": {}}}
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        for round_id in HOSTILE_ROUND_IDS:
            response = http.post(path, json={**bodies[path], "roundId": round_id})
            assert (response.status_code, response.json()) == (200, {"status": "Acknowledged"}), (round_id, response.text)
        health = http.get("/health")
        assert health.status_code == 200 and health.json()["round"]["round_id"] is None, health.text
    assert local.controller.ledger.current() is None


def test_body_limit_token_health_openapi_and_loopback(start_avatar: AvatarRunner) -> None:
    local, _ = start_avatar(**{"avatar.max_body_bytes": 2048, "avatar.token": "s3cret"})
    assert AvatarSettings().host == "127.0.0.1"
    assert local.worker.server.host == "127.0.0.1" and local.url.startswith("http://127.0.0.1:")
    auth = {"authorization": "Bearer s3cret"}
    start = captured("/startRound")
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        assert http.post(ep.START_ROUND, json=start).status_code == 401
        assert http.post(ep.START_ROUND, json=start, headers={"authorization": "Bearer nope"}).status_code == 401
        assert http.post(ep.START_ROUND, json=start, headers=auth).status_code == 200
        assert http.get("/health").status_code == 200  # liveness probes need no token
        assert http.get("/").status_code == 401
        assert http.get("/?token=s3cret").status_code == 200
        # a browser without the token gets a page saying how to open it, not a JSON error
        page = loopback.get(local.url + "/buyer", headers={"accept": "text/html,application/xhtml+xml"}, timeout=HTTP_TIMEOUT)
        assert page.status_code == 401 and page.headers["content-type"].startswith("text/html")
        assert "needs the room&#x27;s token" in page.text or "needs the room's token" in page.text
        assert "/buyer?token=" in page.text and "s3cret" not in page.text

        # over max_body_bytes: never read, and - the EO exits on an error answer - acknowledged
        big = {**start, "padding": "x" * 4096}
        response = http.post(ep.START_ROUND, json=big, headers=auth)
        assert (response.status_code, response.json()) == (200, {"status": "Acknowledged"})

        def chunks() -> Iterator[bytes]:  # no content-length: counted while reading
            yield b'{"roundId": "r1", "padding": "'
            for _ in range(8):
                yield b"y" * 512
            yield b'"}'

        response = http.post(ep.START_ROUND, content=chunks(), headers={**auth, "content-type": "application/json"})
        assert (response.status_code, response.json()) == (200, {"status": "Acknowledged"})
        assert http.get("/openapi.json", headers=auth).status_code == 200
        assert http.post("/no-such-path", content=b"x" * 4096, headers=auth).status_code == 413  # not the EO's

        schema = http.get("/openapi.json", headers=auth).json()
    for path in (*ep.HUMAN_SIDE_PATHS, "/health"):
        assert path in schema["paths"], path
    assert "requestBody" in schema["paths"][ep.RECEIVE_MESSAGE]["post"]


def test_the_stand_in_eo_sends_the_avatar_its_token(start_avatar: AvatarRunner, mosquitto: Any, make_config: Any) -> None:
    """With ``[avatar] token`` set, the room's stand-in EO (same configuration) calls the
    Avatar Controller with it: the round reaches the avatar, and an agent's message is spoken."""
    from standins.eo import default_round
    from standins.eo.worker import StandinWorker
    from standins.recorder import RecordingServer

    local, observer = start_avatar(**{"avatar.token": "s3cret"})
    port = local.worker.server.port
    config = make_config(mosquitto.url, **{"avatar.token": "s3cret", "standin.port": 0, "standin.human_port": port})
    worker = StandinWorker(config)
    assert worker.settings.human_token == "s3cret"
    asked = {"roundId": "r1", "speaker": "Human", "addressee": "Celia", "role": "buyer", "text": "Eggs?"}
    said = {"roundId": "r1", "speaker": "Celia", "addressee": "Human", "role": "seller", "text": "Two eggs for three dollars."}
    with RecordingServer() as celia, loopback.client(timeout=HTTP_TIMEOUT) as http:
        worker.server.start()
        try:
            body = default_round({"Celia": celia.port}, port, (0.0, 60.0, 0.0), name_human_service=False)
            assert http.post(worker.server.url + ep.INITIALIZE_ROUND, json=body.body()).status_code == 200
            assert http.post(worker.server.url + ep.START_ROUND, json={"roundId": "r1"}).status_code == 200
            observer.wait(RoundState, phase="round")
            assert http.post(worker.server.url + ep.RELAY_MESSAGE, json=asked).status_code == 200
            assert http.post(worker.server.url + ep.RELAY_MESSAGE, json=said).status_code == 200
            assert observer.wait(Speaking, state="begin")[0].avatar == "Celia"
        finally:
            worker.server.stop()


def test_a_token_guards_every_route_but_health(start_avatar: AvatarRunner) -> None:
    local, _ = start_avatar(**{"avatar.token": "s3cret"})
    ws_url = local.url.replace("http://", "ws://") + DISPLAY_FEED_PATH
    guarded_gets = ("/openapi.json", "/docs", "/redoc", "/", "/display/display.js", "/display/display.css")
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as http:
        for path in guarded_gets:
            assert http.get(path).status_code == 401, path
            assert http.get(path, params={"token": "nope"}).status_code == 401, path
        assert http.post(ep.START_ROUND, params={"token": "s3cret"}, json=captured("/startRound")).status_code == 401
        assert http.get("/health").status_code == 200
        assert http.get("/openapi.json", headers={"authorization": "Bearer s3cret"}).status_code == 200
        # the docs page loads its schema with the token it was opened with
        docs = http.get("/docs", params={"token": "s3cret"})
        assert docs.status_code == 200 and "/openapi.json?token=s3cret" in docs.text
    with pytest.raises(Exception, match=r"401|403|4401|rejected"):
        with ws_connect(ws_url) as ws:
            ws.recv(timeout=HTTP_TIMEOUT)
    # a browser opening the page with ?token= gets a cookie for the files and the feed it loads
    with loopback.client(base_url=local.url, timeout=HTTP_TIMEOUT) as browser:
        assert browser.get("/", params={"token": "s3cret"}).status_code == 200
        assert browser.get("/display/display.js").status_code == 200
        cookie = "; ".join(f"{k}={v}" for k, v in browser.cookies.items())
    with ws_connect(ws_url, additional_headers={"cookie": cookie}) as ws:
        assert json.loads(ws.recv(timeout=HTTP_TIMEOUT))["type"] == "snapshot"
    with ws_connect(ws_url + "?token=s3cret") as ws:
        assert json.loads(ws.recv(timeout=HTTP_TIMEOUT))["type"] == "snapshot"


def post_in_background(url: str, path: str, body: dict[str, Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        out["response"] = loopback.post(url + path, json=body, timeout=HTTP_TIMEOUT)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def next_of_type(ws: Any, kind: str) -> dict[str, Any]:
    while True:
        event = json.loads(ws.recv(timeout=HTTP_TIMEOUT))
        if event["type"] == kind:
            return event


def next_asked(ws: Any) -> dict[str, Any]:
    """The confirmation asked now: the first of the next queue the pages are sent that has one."""
    while True:
        queue = next_of_type(ws, "confirms")["queue"]
        if queue:
            return queue[0]


def test_operator_confirms_or_declines_on_the_display(start_avatar: AvatarRunner) -> None:
    local, _ = start_avatar(**{"avatar.confirm_accept": "operator", "avatar.confirm_timeout_s": 1.0,
                               "avatar.confirm_timeout_answer": "acknowledged"})
    ws_url = local.url.replace("http://", "ws://") + DISPLAY_FEED_PATH
    with ws_connect(ws_url) as ws:
        assert json.loads(ws.recv(timeout=HTTP_TIMEOUT))["type"] == "snapshot"
        for accept, expected in ((True, {"status": "acknowledged"}), (False, {"status": "rejected"})):
            thread, out = post_in_background(local.url, ep.CONFIRM_ACCEPT, captured("/confirmAccept"))
            request = next_asked(ws)
            assert request["speaker"] == "Celia" and request["bid"]["type"] == "Accept"
            assert "response" not in out  # the EO waits for the operator
            ws.send(json.dumps({"type": "confirm", "id": request["id"], "accept": accept}))
            thread.join(HTTP_TIMEOUT)
            assert out["response"].json() == expected
            assert next_of_type(ws, "confirm_done")["id"] == request["id"]
        # the operator does not answer: the configured answer after the timeout
        thread, out = post_in_background(local.url, ep.CONFIRM_ACCEPT, captured("/confirmAccept"))
        request = next_asked(ws)
        assert next_of_type(ws, "confirm_done") == {"type": "confirm_done", "id": request["id"], "accepted": True, "by": "timeout"}
        thread.join(HTTP_TIMEOUT)
        assert out["response"].json() == {"status": "acknowledged"}
    # no display page open at all: nobody could confirm, so the configured answer at once
    assert wait_for(lambda: local.controller.hub.client_count == 0, timeout=HTTP_TIMEOUT)
    response = loopback.post(local.url + ep.CONFIRM_ACCEPT, json=captured("/confirmAccept"), timeout=HTTP_TIMEOUT)
    assert response.json() == {"status": "acknowledged"}


def test_a_restarted_controller_continues_the_round(start_avatar: AvatarRunner) -> None:
    first, observer = start_avatar()
    with loopback.client(base_url=first.url, timeout=HTTP_TIMEOUT) as http:
        for key in ("/sendRoundMetadata", "/startRound"):
            assert http.post(path_of(key), json=captured(key)).status_code == 200
    observer.wait(RoundState, phase="round")
    first.stop()
    start_avatar.running.remove((first, observer))
    observer.stop()

    again = LocalAvatar(first.worker.config).start()  # same room, same broker
    try:
        assert wait_for(lambda: again.controller.round_state().round_id == "r1", timeout=HTTP_TIMEOUT)
        assert again.controller.round_state().phase == "round"
        with loopback.client(base_url=again.url, timeout=HTTP_TIMEOUT) as http:
            assert http.post(ep.END_ROUND, json=captured("/endRound")).status_code == 200
        post = again.controller.round_state()
        # the post-round length came from the first run's /sendRoundMetadata
        assert post.phase == "post" and post.phase_deadline - post.phase_started == 5_000
    finally:
        again.stop()
