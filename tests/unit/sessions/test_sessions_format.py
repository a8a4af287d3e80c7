"""Session format round trip and the generated session's ground truth (no workers involved)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hardware.audio import SAMPLE_RATE
from hardware.audio_files import load_audio
from hardware.video import VideoFileSource
from sessions.format import SESSION_FILE, CameraInfo, Session, SessionFormatError, SessionInfo, SessionWriter, Truth, TruthUtterance
from sessions.generate import TARGETS, generate
from sessions.scenario import build_timeline, plan_lines
from tests.support.helpers import QUICK_SESSION


@pytest.fixture(scope="session")
def quick_session() -> Session:
    return Session(generate(QUICK_SESSION))


def test_writer_and_reader_round_trip(tmp_path: Path) -> None:
    info = SessionInfo("env1", 1_000, 2_000, ["Celia", "Watson"], {"Celia": {"yaw": 20.0, "pitch": 0.0}},
                       CameraInfo(64, 48, 10.0))
    with SessionWriter(tmp_path / "s", info) as writer:
        for i in range(5):
            writer.add_frame(np.full((48, 64, 3), i * 40, np.uint8), 1_000 + i * 100)
        writer.add_event({"t_ms": 1_050, "kind": "mqtt", "topic": "humaine/env1/x", "payload": {"type": "status"}})
        writer.write_audio(np.arange(SAMPLE_RATE, dtype=np.int16))
        writer.write_truth(Truth([TruthUtterance("u1", "hello", "Celia", "gaze", 1_100, 1_500)], face="f"))
    s = Session(tmp_path / "s")
    assert s.info == info
    assert s.frame_times() == [1_000, 1_100, 1_200, 1_300, 1_400]
    assert [e["topic"] for e in s.events()] == ["humaine/env1/x"]
    assert np.array_equal(load_audio(s.audio_path), np.arange(SAMPLE_RATE, dtype=np.int16))
    assert s.truth().utterances[0].addressee == "Celia"
    assert VideoFileSource(s.video_path).frame_count == 5


def test_not_a_session_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SessionFormatError, match=r"no session\.json"):
        Session(tmp_path)
    (tmp_path / "session.json").write_text('{"format": "other"}')
    with pytest.raises(SessionFormatError, match="not a humaine-session"):
        Session(tmp_path)


def test_script_mixes_cues_and_shifts_gaze_before_speech() -> None:
    lines = plan_lines(5)
    assert {line.cue for line in lines} == {"gaze", "name", "none"}
    assert all(line.text.startswith(line.addressee.lower()) for line in lines if line.cue == "name")
    timeline = build_timeline(lines, [1500] * len(lines), TARGETS, 5)
    for utt, line in zip(timeline.utterances, lines, strict=True):
        yaw, pitch = timeline.pose_at(utt.start_ms + 700)
        if line.look:
            assert (yaw, pitch) == TARGETS[line.look]
        else:
            assert min(abs(yaw - t[0]) + abs(pitch - t[1]) for t in TARGETS.values()) > 25
    looks_away = [g for g in timeline.gaze if g.target == "" and g.motion == "hold" and g.end_ms - g.start_ms > 4000]
    assert looks_away, "a silent looking-away period"


def test_generated_session_is_consistent(quick_session: Session) -> None:
    info, truth = quick_session.info, quick_session.truth()
    assert info.source == "generated" and info.camera and info.camera.fps == 10.0
    times = quick_session.frame_times()
    assert times == [p[0] for p in truth.poses]
    assert len(times) == VideoFileSource(quick_session.video_path).frame_count
    audio = load_audio(quick_session.audio_path)
    assert abs(len(audio) * 1000 / SAMPLE_RATE - info.duration_ms) < 5
    for utt in truth.utterances:  # speech where the truth says, room noise elsewhere
        a = (utt.start_ms - info.start_ms) * SAMPLE_RATE // 1000
        b = (utt.end_ms - info.start_ms) * SAMPLE_RATE // 1000
        assert np.abs(audio[a:b].astype(np.int32)).max() > 3000
    assert np.abs(audio[: SAMPLE_RATE // 2].astype(np.int32)).max() < 500


def test_generated_sessions_leave_their_lock_files_out_of_the_sessions_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``humaine-env eval .cache/sessions/s1-*`` takes what the glob finds: session folders only."""
    from sessions import generate as generator

    def written(_spec: object, folder: Path, _camera: object) -> Path:  # the session itself is not what is tested
        folder.mkdir(parents=True)
        (folder / SESSION_FILE).write_text("{}")
        return folder

    monkeypatch.setattr(generator, "_generate", written)
    (tmp_path / f"{QUICK_SESSION.key}.lock").write_text("")  # where an earlier version left one
    folder = generate(QUICK_SESSION, tmp_path)
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == [folder.name]
