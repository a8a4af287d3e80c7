"""``humaine-env record``: a session recorded while the real workers run replays to the same
messages, and the recording's frame and audio times are the ones the workers saw."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from hardware.audio import SAMPLE_RATE
from hardware.audio_files import load_audio
from hardware.video import VideoFileSource
from sessions.format import Session
from sessions.generate import generate
from sessions.record import Recorder, RecordError
from sessions.replay import replay, replay_config
from standins.recorder import RecordingServer
from tests.support.helpers import CLI, PS_DOMAIN, QUICK_SESSION
from transcript.worker import TranscriptWorker
from workers.runtime.config import Config
from workers.runtime.worker import run_worker


def _messages(payloads: list[dict]) -> list[tuple[str, str]]:
    return [(p["message"]["text"], p["message"]["addressee"]) for p in payloads if p.get("type") == "humaine_message"]


@pytest.fixture
def config(mosquitto: object, make_config: Callable[..., Config]) -> Config:
    return make_config(mosquitto.url, **PS_DOMAIN)  # type: ignore[attr-defined]


def test_recorded_session_replays_to_its_messages(config: Config, tmp_path: Path) -> None:
    """Recorded live (at the audio's own pace), the session replays to the messages captured
    live. Finals are not merged here: whether two finals merge depends on when the second
    arrives, which on a live path is the machine's load, not the session's."""
    config = config.with_overrides({"transcript.merge_sources": []})
    source = Session(generate(QUICK_SESSION))
    utterances = len(source.truth().utterances)
    folder = tmp_path / "recorded"
    with RecordingServer() as eo:
        live = replay_config(config, source, config.core.environment_uuid, eo.url, 1.0, "pocketsphinx")
        transcript = TranscriptWorker(live, worker_id="transcript")
        t_thread = threading.Thread(target=run_worker, args=(transcript, False), daemon=True)
        t_thread.start()
        assert transcript.bus.wait_connected(10)
        time.sleep(0.3)
        recorder = Recorder(live, folder, f"replay:{source.audio_path}", f"replay:{source.video_path}",
                            perceive=True, linger_s=60.0)
        stop = threading.Event()
        r_thread = threading.Thread(target=recorder.run, args=(stop,), daemon=True)
        r_thread.start()
        try:
            assert recorder.media_ended.wait(source.info.duration_ms / 1000 + 60)
            recorder.wait_for("humaine_message", utterances, 30)
            time.sleep(0.5)
        finally:
            stop.set()
            r_thread.join(30)
            transcript.stop()
            t_thread.join(10)
    assert not r_thread.is_alive()

    recorded = Session(folder)
    assert recorded.info.source == "recorded" and recorded.info.camera is not None
    times = recorded.frame_times()
    assert len(times) == VideoFileSource(source.video_path).frame_count == VideoFileSource(recorded.video_path).frame_count
    assert times == sorted(times) and times[0] >= recorded.info.start_ms
    # the video in step with the audio, as in the source, though the camera's models take longer
    # to load than the microphone's: both recorded files start once both workers are ready
    frame_ms = 1000 / source.info.camera.fps  # type: ignore[union-attr]
    shift = (times[0] - recorded.info.start_ms) - (source.frame_times()[0] - source.info.start_ms)
    assert abs(shift) < frame_ms, shift
    audio, source_audio = load_audio(recorded.audio_path), load_audio(source.audio_path)
    assert len(audio) >= len(source_audio)
    # ...and the audio too: a late start would open the recording with that much silence
    lead_ms = (int(np.argmax(audio != 0)) - int(np.argmax(source_audio != 0))) * 1000 / SAMPLE_RATE
    assert abs(lead_ms) < frame_ms, lead_ms
    assert recorded.info.duration_ms >= len(audio) * 1000 // SAMPLE_RATE
    payloads = [e["payload"] for e in recorded.events() if e["kind"] == "mqtt"]
    captured = _messages(payloads)
    # a message short: the finals the microphone published tell whether it was heard at all
    finals = [(p["utterance_id"], p["text"]) for p in payloads if p.get("type") == "transcript" and p.get("final")]
    assert len(captured) == utterances, (captured, finals)
    right = sum(a == u.addressee for (_, a), u in zip(captured, source.truth().utterances, strict=True))
    assert right >= utterances - 1, captured

    again = replay(recorded, config)
    assert _messages(again.messages) == captured


def test_record_cli_stops_on_sigterm_and_writes_session_json_last(config: Config, tmp_path: Path) -> None:
    source = Session(generate(QUICK_SESSION))
    folder = tmp_path / "cli"
    cmd = [*CLI, "--set", f"broker.url={config.broker.url}", "--set", "broker.mode=external",
           "--set", f"environment_uuid={config.core.environment_uuid}", "record", str(folder),
           "--audio-source", f"replay:{source.audio_path}", "--video-source", f"replay:{source.video_path}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (folder / "frames.csv").is_file() or (folder / "frames.csv").stat().st_size < 100:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        assert not (folder / "session.json").exists()
        time.sleep(1.5)
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill() if proc.poll() is None else None
    assert proc.returncode == 0, err
    assert "recorded" in out
    session = Session(folder)
    frames = session.frame_times()
    assert len(frames) >= 10 and frames == sorted(frames)
    assert VideoFileSource(session.video_path).frame_count == len(frames)
    audio_s = len(load_audio(session.audio_path)) / SAMPLE_RATE
    assert 1.0 < audio_s <= session.info.duration_ms / 1000 + 0.1


def test_record_missing_device_is_one_line(config: Config, tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="not found"):
        Recorder(config, tmp_path / "x", "wav:/nonexistent.wav", None).run(threading.Event())
    assert not (tmp_path / "x" / "session.json").exists()
    cmd = [*CLI, "--set", f"broker.url={config.broker.url}",
           "--set", "broker.mode=external", "record", str(tmp_path / "y"), "--no-video",
           "--audio-source", "wav:/nonexistent.wav"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "humaine-env record:" in proc.stderr, proc.stderr
