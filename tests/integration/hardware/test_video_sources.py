"""hardware.video: file, folder and replay sources with capture timestamps; webcam absence."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from hardware.clock import VirtualClock
from hardware.video import (
    ImageFolderSource,
    NoCameraError,
    ReplaySource,
    VideoFileSource,
    VideoSourceError,
    frames,
    list_cameras,
    missed_frames,
    open_source,
)
from tests.support.camera_assets import pyfeat_data


@pytest.fixture(scope="module")
def data() -> Path:
    return pyfeat_data()


def test_video_file_frames_carry_file_time(data: Path) -> None:
    source = VideoFileSource(data / "single_face.mp4", start_ms=1_000_000)
    expected = source.frame_count
    got = list(frames(source))
    source.close()
    assert len(got) == expected == 72
    assert source.fps == pytest.approx(30.0)
    assert got[0].t_ms == 1_000_000
    assert got[-1].t_ms == 1_000_000 + round(71 * 1000 / 30)
    assert [f.index for f in got] == list(range(72))
    assert got[0].size == (640, 360)


def test_image_folder_in_name_order_skips_unreadable(data: Path, tmp_path: Path) -> None:
    for name in ("b.jpg", "a.jpg"):
        shutil.copy(data / "0-f1-su-ph.jpg", tmp_path / name)
    (tmp_path / "c.png").write_bytes(b"not an image")
    (tmp_path / "notes.txt").write_text("ignored")
    source = open_source(f"images:{tmp_path}", fps=10)
    assert isinstance(source, ImageFolderSource)
    got = list(frames(source))
    assert len(got) == 2
    assert got[1].t_ms - got[0].t_ms == 100
    assert source.skipped == [tmp_path / "c.png"]


def test_replay_as_fast_as_possible_keeps_recorded_timing(data: Path) -> None:
    clock = VirtualClock(start_ms=5_000, speed=None)
    source = ReplaySource(data / "single_face.mp4", clock=clock)
    started = time.monotonic()
    got = list(frames(source))
    assert time.monotonic() - started < 2.4  # the clip lasts 2.4 s; virtual time does not wait
    assert got[0].t_ms == 5_000
    assert got[-1].t_ms == 5_000 + round(71 * 1000 / 30)
    assert clock.now_ms() >= got[-1].t_ms


def test_replay_paced_by_clock_speed(data: Path) -> None:
    """At 4x, the 2.4 s clip takes about 0.6 s of wall time."""
    source = ReplaySource(data / "single_face.mp4", clock=VirtualClock(speed=4.0))
    started = time.monotonic()
    count = sum(1 for _ in frames(source))
    elapsed = time.monotonic() - started
    assert count == 72
    assert 0.45 < elapsed < 5.0


def test_replay_stops_when_asked(data: Path) -> None:
    stop = threading.Event()
    source = ReplaySource(data / "WolfgangLanger_Pexels.mp4", clock=VirtualClock(speed=1.0), stop=stop)
    first = source.read()
    stop.set()
    assert first is not None
    assert source.read() is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("video:/nonexistent/clip.mp4", "not found"),
        ("images:/nonexistent", "not found"),
        ("video:", "lacks a path"),
        ("tape:/x", "unknown video source"),
        ("webcam:front", "must be a number"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(VideoSourceError, match=message):
        open_source(spec)


def test_not_a_video_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "clip.mp4"
    bogus.write_text("plain text")
    with pytest.raises(VideoSourceError, match="cannot decode"):
        open_source(f"video:{bogus}")


def test_missing_webcam_is_one_readable_line() -> None:
    """An index with no camera behind it: one line that names the fix."""
    cameras = list_cameras()
    assert all(isinstance(c["index"], int) and str(c["spec"]).startswith("webcam:") for c in cameras)
    absent = max((int(c["index"]) for c in cameras), default=-1) + 1  # type: ignore[call-overload]
    with pytest.raises(NoCameraError) as raised:
        open_source(f"webcam:{absent}")
    assert f"no camera at index {absent}" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_dropped_frames_are_counted_from_capture_gaps() -> None:
    assert missed_frames(0, 33, 30.0) == 0
    assert missed_frames(0, 40, 30.0) == 0  # jitter is not a drop
    assert missed_frames(0, 67, 30.0) == 1
    assert missed_frames(0, 500, 30.0) == 14
    assert missed_frames(100, 90, 30.0) == 0
