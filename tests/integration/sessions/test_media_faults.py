"""Media and sessions that cannot be read: one clear line and exit status 3 from the workers,
and ``eval`` naming every part that is missing, unreadable or cut short, with its coverage."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from formats.session_files import AUDIO_FILE, VIDEO_FILE
from hardware.frame_times import FrameTimesError, read_frame_times
from sessions.coverage import COMPLETE, check
from sessions.format import EVENTS_FILE, FRAMES_FILE, TRUTH_FILE, Session, SessionFormatError
from sessions.generate import generate
from tests.support.helpers import CLI, QUICK_SESSION
from tests.support.paths import ROOT
from workers.runtime.worker import EXIT_UNAVAILABLE


def riff_header_only(path: Path) -> Path:
    """The 30-byte RIFF header that crashed the microphone worker with ``EOFError``."""
    fmt = struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16)
    path.write_bytes(b"RIFF" + struct.pack("<I", 100) + b"WAVEfmt " + fmt[:14])
    assert path.stat().st_size == 30
    return path


def not_a_video(path: Path) -> Path:
    path.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 512)
    return path


def run_worker_cli(args: list[str], broker_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    argv = [*CLI, *args, "--set", f'broker.url="{broker_url}"', "--set", 'broker.mode="external"',
            "--set", f'data_dir="{tmp_path / "data"}"', "--set", 'microphone.engine="pocketsphinx"']
    return subprocess.run(argv, capture_output=True, text=True, timeout=90, cwd=ROOT, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(
    ("command", "make", "said"),
    [
        ("mic --source wav:{path}", riff_header_only, "ends inside its header"),
        ("mic --source replay:{path}", riff_header_only, "ends inside its header"),
        ("camera --source video:{path}", not_a_video, "cannot decode video file"),
    ],
    ids=["wav header only", "replay header only", "not a video"],
)
def test_unreadable_media_is_one_line_and_status_3(command: str, make: Any, said: str, mosquitto: Any, tmp_path: Path) -> None:
    path = make(tmp_path / ("media.mp4" if "video" in command else "media.wav"))
    result = run_worker_cli(command.format(path=path).split(), mosquitto.url, tmp_path)
    assert result.returncode == EXIT_UNAVAILABLE, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = [ln for ln in result.stderr.splitlines() if str(path) in ln]
    assert len(lines) == 1 and said in lines[0] and "cannot run" in lines[0], result.stderr[-2000:]


@pytest.fixture(scope="module")
def quick() -> Path:
    return generate(QUICK_SESSION)


def damaged(source: Path, tmp_path: Path, **cuts: float) -> Session:
    """A copy of ``source`` with each named part (``audio``, ``video``, ``frames``, ``events``,
    ``truth``) cut to that share of its bytes (0: removed)."""
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    names = {"audio": AUDIO_FILE, "video": VIDEO_FILE, "frames": FRAMES_FILE, "events": EVENTS_FILE, "truth": TRUTH_FILE}
    for part, share in cuts.items():
        path = copy / names[part]
        if share == 0:
            path.unlink()
        else:
            data = path.read_bytes()
            path.write_bytes(data[: int(len(data) * share)])
    return Session(copy)


def test_a_complete_session_is_all_ok(quick: Path) -> None:
    report = check(Session(quick))
    assert [(p.name, p.status) for p in report.parts] == [
        (AUDIO_FILE, "ok"), (VIDEO_FILE, "ok"), (FRAMES_FILE, "ok"), (EVENTS_FILE, "ok"), (TRUTH_FILE, "ok")]
    assert report.problems == []
    assert all(share >= COMPLETE for share in report.summary()["coverage"].values())


@pytest.mark.parametrize(("cut", "times"), [
    ("index,t_ms\r\n0,1000\r\n1,1066\r\n2,11", [1000, 1066]),  # killed inside a time: not 11
    ("index,t_ms\r\n0,1000\r\n1,", [1000]),
    ("index,t_ms\r\n0,1000\r\n", [1000]),
    ("index,t_", []),
])
def test_a_frame_times_table_cut_mid_row_keeps_its_whole_rows(tmp_path: Path, cut: str, times: list[int]) -> None:
    path = tmp_path / FRAMES_FILE
    path.write_bytes(cut.encode())
    assert read_frame_times(path) == times
    path.write_text("index,t_ms\n0,soon\n1,1066\n")
    with pytest.raises(FrameTimesError, match="not an index,t_ms table"):
        read_frame_times(path)


def test_each_damaged_part_is_named_with_its_coverage(quick: Path, tmp_path: Path) -> None:
    session = damaged(quick, tmp_path, audio=0.5, video=0.5, frames=0.6, truth=0.7)
    (session.path / EVENTS_FILE).write_text('{"t_ms": 1, "kind": "mqtt"}\n{"t_ms": 2, "ki')  # a recorder killed mid-line
    report = check(session)
    status = {p.name: p for p in report.parts}
    assert status[AUDIO_FILE].status == "truncated" and 0.4 < status[AUDIO_FILE].coverage < 0.6
    assert status[VIDEO_FILE].status in ("unreadable", "truncated")  # mp4v keeps its index at the end
    assert status[FRAMES_FILE].status == "truncated" and status[FRAMES_FILE].coverage < 0.7
    assert status[EVENTS_FILE].status == "truncated"
    assert status[TRUTH_FILE].status == "unreadable" and "cut short" in status[TRUTH_FILE].detail
    assert len(report.problems) == 5 and all("\n" not in line for line in report.problems)
    with pytest.raises(SessionFormatError, match="cut short"):
        session.truth()

    gone = check(damaged(quick, tmp_path / "gone", audio=0, video=0, frames=0))
    assert {p.name: p.status for p in gone.parts}[AUDIO_FILE] == "missing"
    assert {p.name: p.status for p in gone.parts}[VIDEO_FILE] == "missing"
    header_only = damaged(quick, tmp_path / "header")
    riff_header_only(header_only.path / AUDIO_FILE)
    assert check(header_only).part(AUDIO_FILE).status == "unreadable"  # type: ignore[union-attr]


def eval_cli(session: Session, mosquitto: Any, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    argv = [*CLI, "eval", str(session.path), "--log-level", "WARNING", "--set", f'broker.url="{mosquitto.url}"',
            "--set", f'data_dir="{tmp_path / "data"}"', "--set", 'microphone.engine="pocketsphinx"']
    return subprocess.run(argv, capture_output=True, text=True, timeout=240, cwd=ROOT, stdin=subprocess.DEVNULL)


def test_eval_refuses_a_truncated_truth_in_one_line(quick: Path, tmp_path: Path, mosquitto: Any) -> None:
    result = eval_cli(damaged(quick, tmp_path, truth=0.5), mosquitto, tmp_path)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert f"{quick.name}/{TRUTH_FILE}: unreadable" in result.stderr and "cannot evaluate" in result.stderr
    assert result.stdout == ""


def test_eval_scores_what_is_readable_and_reports_coverage(quick: Path, tmp_path: Path, mosquitto: Any) -> None:
    """The audio is only a header: the camera's part is still scored, the speech part is not
    pretended: every utterance missed, and the coverage says why."""
    session = damaged(quick, tmp_path)
    riff_header_only(session.path / AUDIO_FILE)
    result = eval_cli(session, mosquitto, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert f"{quick.name}/{AUDIO_FILE}: unreadable" in result.stderr
    summary = json.loads(result.stdout)
    (covered,) = summary["coverage"]
    assert covered["coverage"][AUDIO_FILE] == 0.0 and covered["coverage"][VIDEO_FILE] == 1.0
    assert any(AUDIO_FILE in line for line in covered["problems"])
    assert summary["yaw_mae"] is not None and summary["wer"] == 1.0
