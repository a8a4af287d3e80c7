"""``humaine-env headpose`` as users run it: a real process on real photos and clips."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import cv2
import pytest

from tests.support.camera_assets import at_fps, pyfeat_data
from tests.support.helpers import CLI
from tests.support.paths import ROOT

FIELDS = {"file", "frame", "ts_ms", "faces", "buyer", "yaw", "pitch", "roll", "confidence", "target"}


def _headpose(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "headpose", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
    )


def _lines(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_a_repeated_group_photo_keeps_its_buyer_and_pose() -> None:
    group = pyfeat_data() / "multi_face.jpg"
    done = _headpose("--set", "camera.max_faces=5", "--repeat", "90", str(group))
    assert done.returncode == 0, done.stderr
    lines = _lines(done.stdout)
    assert len(lines) == 90
    assert all(set(line) == FIELDS for line in lines)
    assert [line["frame"] for line in lines] == list(range(90))
    assert lines[1]["ts_ms"] == 33 and lines[-1]["ts_ms"] == round(89 * 1000 / 30)
    assert {line["buyer"] for line in lines} == {lines[0]["buyer"]} != {None}
    assert all(line["yaw"] is not None and line["confidence"] is not None for line in lines)
    assert min(int(line["faces"]) for line in lines) >= 4  # type: ignore[call-overload]
    assert "Traceback" not in done.stderr


def test_folders_videos_and_a_bad_file(tmp_path: Path) -> None:
    """Each argument is its own sequence; a file that cannot be read is one line on stderr and
    exit status 1, the others are still processed; the preview plays at the video's rate."""
    data = pyfeat_data()
    folder = tmp_path / "stills"
    folder.mkdir()
    for name in ("0-f15-hao-ph.jpg", "45-m7-di-ph.jpg"):
        (folder / name).symlink_to(data / name)
    (folder / "notes.txt").write_text("not an image")
    preview = tmp_path / "out.mp4"
    clip = at_fps(data / "single_face.mp4", 15.0, tmp_path / "clip15.mp4")
    done = _headpose("--repeat", "10", "--preview", str(preview), str(clip), str(folder), str(tmp_path / "missing.mp4"))
    assert done.returncode == 1
    assert done.stderr.count("missing.mp4") == 1 and "Traceback" not in done.stderr
    lines = _lines(done.stdout)
    video = [line for line in lines if line["file"] == str(clip)]
    stills = [line for line in lines if str(line["file"]).startswith(str(folder))]
    assert len(video) == 72 and len(stills) == 20 and len(lines) == 92  # --repeat: stills only
    assert all(line["yaw"] is not None for line in lines)
    assert video[1]["ts_ms"] == round(1000 / 15)
    assert [line["frame"] for line in stills] == list(range(20))  # the folder is one sequence
    assert abs(float(stills[9]["yaw"])) < 7 and float(stills[19]["yaw"]) < -30  # type: ignore[arg-type]
    written = cv2.VideoCapture(str(preview))
    try:
        assert written.get(cv2.CAP_PROP_FPS) == pytest.approx(15.0)  # the first source's rate
        assert int(written.get(cv2.CAP_PROP_FRAME_COUNT)) == 92
    finally:
        written.release()


def test_refuses_a_repeat_below_one() -> None:
    done = _headpose("--repeat", "0", str(pyfeat_data() / "multi_face.jpg"), timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--repeat" in done.stderr
