"""The room against the platform's real EO, every part a real process on 127.0.0.1: a typed
utterance goes through the Rich Transcript worker, the real EO and the demo sellers, back
through the real EO to the Avatar Controller, and comes out as speech in a WAV file with a
gesture on MQTT. Then what the real EO decides is what the room records: a blocked utterance
is ``blocked`` with the EO's rationale, an EO that stops answering gets no message after its
deadline, and after an EO restart the unknown round is never relayed (the EO stays up)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import numpy as np
import pytest

from humaine_platform import endpoints as ep
from standins.eo import default_round
from tests.support import loopback
from tests.support.helpers import CLI, MosquittoBroker, free_port, wait_for
from tests.support.real_eo import RealEO
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import AgentMessageSeen, EOVerdict, Gesture, OutgoingMessage, RoundState, Speaking, Status

ROUND_ID = "r1"
TTL_S = 2.0


class Observer:
    """Everything the room publishes, with the monotonic time it arrived."""

    KINDS: ClassVar[dict[str, type[Any]]] = {"round": RoundState, "gesture": Gesture, "speaking": Speaking, "outgoing": OutgoingMessage,
             "status": Status, "seen": AgentMessageSeen, "verdict": EOVerdict}

    def __init__(self, config: Config) -> None:
        self.seen: dict[str, list[tuple[float, Any]]] = {kind: [] for kind in self.KINDS}
        self.bus = Bus(config, "real-eo-observer", persistent=False)
        t = self.bus.topics
        topics = {"round": t.round_state(), "gesture": t.all_gestures(), "speaking": t.all_speaking(),
                  "outgoing": t.outgoing_message(), "status": t.all_status(), "seen": t.agent_message(),
                  "verdict": t.eo_verdict()}
        for kind, topic in topics.items():
            self.bus.subscribe(topic, self.KINDS[kind], lambda _t, m, k=kind: self.seen[k].append((time.monotonic(), m)))
        self.bus.start()
        assert self.bus.wait_connected(30)

    def of(self, kind: str) -> list[Any]:
        return [m for _, m in self.seen[kind]]

    def outcome_of(self, text: str, timeout: float = 15.0) -> OutgoingMessage:
        def find() -> OutgoingMessage | None:
            return next((m for m in self.of("outgoing") if text in str(m.message.get("text", ""))), None)

        assert wait_for(find, timeout=timeout), f"no outcome for {text!r}: {self.of('outgoing')}"
        found = find()
        assert found is not None
        return found


class Process:
    """A child process whose output is kept (shown when the test fails)."""

    def __init__(self, args: list[str], cwd: Path, stdin: bool = False) -> None:
        self.output: list[str] = []
        self.popen = subprocess.Popen(
            args, cwd=cwd, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, start_new_session=True,
        )
        threading.Thread(target=lambda: self.output.extend(iter(self.popen.stdout.readline, "")), daemon=True).start()  # type: ignore[union-attr]

    def type(self, line: str) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGINT)
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)


@pytest.fixture
def room(mosquitto: MosquittoBroker, tmp_path: Path) -> Iterator[dict[str, Any]]:
    env = f"realeo{os.getpid()}x{free_port()}"
    avatar_port, celia_port, watson_port = free_port(), free_port(), free_port()
    eo = RealEO(tmp_path / "eo", avatar_port, environment_uuid=env)
    config_path = tmp_path / "humaine-env.toml"
    config_path.write_text(
        f'environment_uuid = "{env}"\n'
        f'data_dir = "{tmp_path / "data"}"\n'
        f'[broker]\nurl = "{mosquitto.url}"\nmode = "external"\n'
        f'[eo]\nurl = "{eo.url}"\n'
        f"[transcript]\nttl_s = {TTL_S}\n"
        f"[demo_agents]\nagents = {{ Celia = {celia_port}, Watson = {watson_port} }}\nreply_delay_s = 0.2\n"
        f'[avatar]\nport = {avatar_port}\nspeaker = "wav-fast:{tmp_path / "speech"}"\n'
    )
    config = Config.load(config_path, environ={})
    observer = Observer(config)
    processes: list[Process] = []
    try:
        # the human-side service first: the EO exits when it is down
        processes.append(Process([*CLI, "run", "--config", str(config_path), "--without", "mic,camera"], tmp_path))
        assert wait_for(lambda: {"avatar", "transcript"} <= {m.worker for m in observer.of("status") if m.state == "online"},
                        timeout=90), "".join(processes[0].output)
        eo.start()
        processes.append(Process([*CLI, "demo-agents", "--config", str(config_path)], tmp_path))
        processes.append(Process([*CLI, "mic", "--typed", "--config", str(config_path)], tmp_path, stdin=True))
        assert wait_for(lambda: any(m.worker == "microphone" and m.state == "online" for m in observer.of("status")), timeout=60)
        assert wait_for(lambda: _answers(celia_port) and _answers(watson_port), timeout=60), "".join(processes[1].output)

        body = default_round({"Celia": celia_port, "Watson": watson_port}, avatar_port, (1.0, 120.0, 5.0),
                             round_id=ROUND_ID, name_human_service=False).body()
        with loopback.client(timeout=10) as http:
            assert http.post(eo.url + ep.INITIALIZE_ROUND, json=body).status_code == 200
            assert http.post(eo.url + ep.START_ROUND, json={"roundId": ROUND_ID}).status_code == 200
        assert wait_for(lambda: any(m.phase == "round" for m in observer.of("round")), timeout=30)
        yield {"eo": eo, "observer": observer, "mic": processes[2], "processes": processes, "tmp": tmp_path}
        assert eo.alive(), f"the real EO exited:\n{eo.log_tail()}"
    finally:
        for process in reversed(processes):
            process.stop()
        observer.bus.stop()
        eo.stop()


def _answers(port: int) -> bool:
    try:
        loopback.get(f"http://127.0.0.1:{port}/", timeout=0.5)
    except httpx.HTTPError:
        return False
    return True


def _queue_texts(eo: RealEO) -> list[str]:
    answer = loopback.get(f"{eo.url}{ep.VIEW_QUEUE}/{ROUND_ID}", timeout=5).json()
    return [entry["msg"]["text"] for entry in answer]


def test_typed_utterance_through_the_real_eo_and_its_true_outcomes(room: dict[str, Any]) -> None:
    eo: RealEO = room["eo"]
    observer: Observer = room["observer"]
    mic: Process = room["mic"]

    # 1. named utterance: delivered, Celia answers (spoken, with a gesture), Watson undercuts
    #    after the real EO's 2 s window - nothing the sellers say is blocked
    typed_at = time.monotonic()
    mic.type("@Celia I would like to buy 4 eggs")  # Celia asks her price; Watson can undercut it
    first = observer.outcome_of("buy 4 eggs")
    assert first.outcome == "delivered" and first.message["roundId"] == ROUND_ID, first

    def spoken(avatar: str) -> bool:
        return any(m.avatar == avatar and m.state == "end" and m.message_id for m in observer.of("speaking"))

    assert wait_for(lambda: spoken("Celia"), timeout=20), "".join(room["processes"][0].output)
    begin_at = next(t for t, m in observer.seen["speaking"] if m.avatar == "Celia" and m.state == "begin" and m.message_id)
    assert any(m.avatar == "Celia" for m in observer.of("gesture")), "Celia's first reply carries a gesture"
    assert wait_for(lambda: {"Celia", "Watson"} <= {m.message.get("speaker") for m in observer.of("seen")}, timeout=15), (
        observer.of("verdict"), "".join(room["processes"][1].output))
    wavs = sorted((room["tmp"] / "speech").glob("*Celia-*.wav"))
    assert wavs, "Celia's reply was written to a WAV file"
    with wave.open(str(wavs[0])) as handle:
        samples = np.frombuffer(handle.readframes(handle.getnframes()), dtype=np.int16).astype(np.float64)
        assert handle.getnframes() / handle.getframerate() > 1.0 and np.sqrt(np.mean(samples**2)) > 300
    agent_verdicts = [v for v in observer.of("verdict") if v.message.get("speaker") in ("Celia", "Watson")]
    assert agent_verdicts and all(v.permitted for v in agent_verdicts), agent_verdicts
    print(f"\ntyped → Celia's first audio through the real EO: {1000 * (begin_at - typed_at):.0f} ms")
    # run's console shows the round the real EO drives
    console = "".join(room["processes"][0].output)
    assert f"round {ROUND_ID}: negotiation" in console, console
    assert not [ln for ln in console.splitlines() if " INFO " in ln[:20]], console  # no reply repeated by its log line

    # 2. what the real EO blocks is recorded as blocked, with its rationale (R4 on a human message)
    mic.type("@Watson " + " ".join(["please"] * 101))
    blocked = observer.outcome_of("please please")
    assert blocked.outcome == "blocked" and blocked.reason == "Excessive message length", blocked

    # 3. an EO that stops answering never gets a message after its deadline
    eo.pause()
    try:
        mic.type("@Celia this one must never reach the paused EO")
        paused = observer.outcome_of("never reach the paused EO", timeout=TTL_S + 10)
    finally:
        eo.resume()
    assert paused.outcome == "undelivered" and "round check" in paused.reason, paused
    time.sleep(1.0)  # the EO has caught up with what was waiting in its socket
    assert not any("never reach" in text for text in _queue_texts(eo))

    # 4. the EO restarts mid-round: the round it forgot is never relayed, and it stays up
    eo.stop()
    eo.start()
    mic.type("@Celia two more eggs please")
    forgotten = observer.outcome_of("two more eggs")
    assert forgotten.outcome == "undelivered" and "unknown to the EO" in forgotten.reason, forgotten
    assert eo.alive(), eo.log_tail()
