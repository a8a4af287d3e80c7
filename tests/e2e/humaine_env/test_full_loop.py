"""The whole room on one machine, as real processes on 127.0.0.1: a typed utterance goes
through the Rich Transcript worker, the stand-in EO and a demo seller, and comes back as the
seller's speech in a WAV file with a gesture event on MQTT."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import wave
from pathlib import Path

import numpy as np

from avatar.books.ledger import LEDGER_FILE
from tests.support.helpers import AUTO_FIRST_ROUND, free_port, start_run, suite_config, typed_microphone, wait_for, wait_for_line
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.data_dir import fallback_dir
from workers.runtime.messages import Gesture, OutgoingMessage, RoundState, Speaking, Status

LOOP_BOUND_S = 15.0
"""Generous bound against hangs; the measured figure is printed (a few hundred ms here)."""


def round_observer(config: Config) -> tuple[Bus, dict[str, list]]:
    seen: dict[str, list] = {"round": [], "gesture": [], "speaking": [], "outgoing": [], "status": []}
    bus = Bus(config, "loop-observer", persistent=False)
    topics = bus.topics
    bus.subscribe(topics.round_state(), RoundState, lambda _t, m: seen["round"].append((time.monotonic(), m)))
    bus.subscribe(topics.all_gestures(), Gesture, lambda _t, m: seen["gesture"].append((time.monotonic(), m)))
    bus.subscribe(topics.all_speaking(), Speaking, lambda _t, m: seen["speaking"].append((time.monotonic(), m)))
    bus.subscribe(topics.outgoing_message(), OutgoingMessage, lambda _t, m: seen["outgoing"].append((time.monotonic(), m)))
    bus.subscribe(topics.all_status(), Status, lambda _t, m: seen["status"].append((time.monotonic(), m)))
    bus.start()
    assert bus.wait_connected(30)
    return bus, seen


def test_typed_utterance_comes_back_as_speech_and_gesture(tmp_path: Path) -> None:
    port = free_port()
    config_path = suite_config(tmp_path, port)
    suite, output = start_run(config_path, tmp_path, *AUTO_FIRST_ROUND)
    mic: subprocess.Popen[str] | None = None
    bus: Bus | None = None
    try:
        config = Config.load(config_path, environ={})
        wait_for_line(output, f"mqtt://127.0.0.1:{port}")
        bus, seen = round_observer(config)
        assert wait_for(lambda: any(m.phase == "round" for _, m in seen["round"]), timeout=90), "".join(output)

        mic = typed_microphone(config_path, port, tmp_path)
        assert wait_for(lambda: any(m.worker == "microphone" and m.state == "online" for _, m in seen["status"]), timeout=60)
        assert mic.stdin is not None
        typed_at = time.monotonic()
        mic.stdin.write("@Celia I would like to buy 2 eggs for 10 cents\n")
        mic.stdin.flush()

        def celia_done() -> bool:
            return any(m.avatar == "Celia" and m.state == "end" and m.message_id for _, m in seen["speaking"])

        assert wait_for(celia_done, timeout=LOOP_BOUND_S), "".join(output)
        delivered = [m for _, m in seen["outgoing"]]
        assert delivered and delivered[0].outcome == "delivered", delivered
        assert delivered[0].message["addressee"] == "Celia"
        assert delivered[0].message["text"] == "Celia, I would like to buy 2 eggs for 10 cents"

        begin_at = next(t for t, m in seen["speaking"] if m.avatar == "Celia" and m.state == "begin" and m.message_id)
        end_at = next(t for t, m in seen["speaking"] if m.avatar == "Celia" and m.state == "end" and m.message_id)
        gestures = [(t, m) for t, m in seen["gesture"] if m.avatar == "Celia"]
        assert gestures, "the seller's first reply of a round carries a gesture"
        assert begin_at - 0.05 <= gestures[0][0] <= end_at + 0.05

        wavs = sorted((tmp_path / "speech").glob("*.wav"))
        assert wavs, "Celia's reply was written to a WAV file"
        with wave.open(str(wavs[-1])) as handle:
            samples = np.frombuffer(handle.readframes(handle.getnframes()), dtype=np.int16).astype(np.float64)
            duration = handle.getnframes() / handle.getframerate()
        assert duration > 1.0 and np.sqrt(np.mean(samples**2)) > 300

        lines = "".join(output)
        assert 'buyer → Celia (by name): "Celia, I would like to buy 2 eggs for 10 cents"  [delivered]' in lines
        assert "Celia → buyer:" in lines
        assert "round r1: negotiation" in lines  # the round's events
        # a quiet console: no INFO lines, so no reply repeated by its log line
        assert not [ln for ln in lines.splitlines() if " INFO " in ln[:20]], lines
        print(f"\ntyped → Celia's first audio: {1000 * (begin_at - typed_at):.0f} ms; "
              f"→ reply fully spoken: {1000 * (end_at - typed_at):.0f} ms ({duration:.1f} s of speech)")
    finally:
        if mic is not None and mic.poll() is None:
            mic.send_signal(signal.SIGTERM)
            mic.wait(10)
        if bus is not None:
            bus.stop()
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGINT)
            suite.wait(20)



def test_a_room_with_other_names_hears_addresses_and_answers_by_them(tmp_path: Path) -> None:
    """``[core] avatars`` names the room: the same loop with two other names, from a typed line
    that names one of them to the reply spoken in the voice of its place (the second avatar's
    default voice, Piper's male voice)."""
    port = free_port()
    names = ("Ada", "Max")
    config_path = suite_config(tmp_path, port, avatars=names)
    suite, output = start_run(config_path, tmp_path, *AUTO_FIRST_ROUND)
    mic: subprocess.Popen[str] | None = None
    bus: Bus | None = None
    try:
        config = Config.load(config_path, environ={})
        assert config.core.avatars == list(names)
        wait_for_line(output, f"mqtt://127.0.0.1:{port}")
        bus, seen = round_observer(config)
        assert wait_for(lambda: any(m.phase == "round" for _, m in seen["round"]), timeout=90), "".join(output)

        mic = typed_microphone(config_path, port, tmp_path)
        assert wait_for(lambda: any(m.worker == "microphone" and m.state == "online" for _, m in seen["status"]), timeout=60)
        assert mic.stdin is not None
        mic.stdin.write("Max, I would like to buy 2 eggs for 10 cents\n")  # named as spoken, no @
        mic.stdin.flush()

        def max_done() -> bool:
            return any(m.avatar == "Max" and m.state == "end" and m.message_id for _, m in seen["speaking"])

        assert wait_for(max_done, timeout=LOOP_BOUND_S), "".join(output)
        delivered = [m for _, m in seen["outgoing"]]
        assert delivered and delivered[0].outcome == "delivered", delivered
        assert delivered[0].message["addressee"] == "Max" and delivered[0].message["addresseeSource"] == "name"
        assert delivered[0].message["text"] == "Max, I would like to buy 2 eggs for 10 cents"
        assert not any(m.avatar in ("Celia", "Watson") for _, m in seen["speaking"])

        def voices() -> dict[str, str]:
            avatar = [m for _, m in seen["status"] if m.worker == "avatar" and m.state == "online"]
            return dict(avatar[-1].health.get("voices") or {}) if avatar else {}  # type: ignore[arg-type]

        assert wait_for(lambda: set(voices()) == set(names), 30), voices()
        assert voices()["Max"].startswith("piper ") and voices()["Ada"].startswith("festival "), voices()
        assert list((tmp_path / "speech").glob("*-Max-*.wav")), sorted((tmp_path / "speech").glob("*"))
        assert 'buyer → Max (by name)' in "".join(output)
    finally:
        if mic is not None and mic.poll() is None:
            mic.send_signal(signal.SIGTERM)
            mic.wait(10)
        if bus is not None:
            bus.stop()
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGINT)
            suite.wait(20)


def test_a_room_whose_data_dir_cannot_be_written_still_speaks_and_says_where_it_writes(tmp_path: Path) -> None:
    """``data_dir`` under a regular file (as a read-only disk, it cannot be created): the room
    writes in a temporary folder instead, says so in one line, and the loop runs - the Avatar
    Controller used to exit, and every utterance ended undelivered."""
    port = free_port()
    config_path = suite_config(tmp_path, port)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where data_dir's parent should be\n")
    config_path.write_text(config_path.read_text().replace(f'data_dir = "{tmp_path / "data"}"', f'data_dir = "{blocker / "data"}"'))
    suite, output = start_run(config_path, tmp_path, *AUTO_FIRST_ROUND)
    mic: subprocess.Popen[str] | None = None
    bus: Bus | None = None
    try:
        config = Config.load(config_path, environ={})
        wait_for_line(output, f"mqtt://127.0.0.1:{port}")
        bus, seen = round_observer(config)
        assert wait_for(lambda: any(m.phase == "round" for _, m in seen["round"]), timeout=90), "".join(output)
        mic = typed_microphone(config_path, port, tmp_path)
        assert wait_for(lambda: any(m.worker == "microphone" and m.state == "online" for _, m in seen["status"]), timeout=60)
        assert mic.stdin is not None
        mic.stdin.write("@Celia I would like to buy 2 eggs for 10 cents\n")
        mic.stdin.flush()
        assert wait_for(lambda: any(m.avatar == "Celia" and m.state == "end" and m.message_id for _, m in seen["speaking"]),
                        timeout=LOOP_BOUND_S), "".join(output)
        assert [m.outcome for _, m in seen["outgoing"]][:1] == ["delivered"]
        said = [line for line in "".join(output).splitlines() if "cannot be written" in line]
        assert len(said) == 1 and str(fallback_dir(config.core.environment_uuid)) in said[0], said
        assert (fallback_dir(config.core.environment_uuid) / LEDGER_FILE).is_file()  # the day's books are kept there
    finally:
        if mic is not None and mic.poll() is None:
            mic.send_signal(signal.SIGTERM)
            mic.wait(10)
        if bus is not None:
            bus.stop()
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGINT)
            suite.wait(20)
        shutil.rmtree(fallback_dir(f"suite{port}"), ignore_errors=True)
