"""``humaine-env calibrate`` round trip on real faces: measure, save to TOML, load, classify."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest

from hardware.video import frames, open_source
from humaine_env.cli import main as cli_main
from tests.support.camera_assets import pyfeat_data
from workers.camera.calibration import AWAY, PhaseResult, derive
from workers.camera.pipeline import CameraPipeline
from workers.camera.settings import CameraSettings
from workers.runtime.config import Config
from workers.runtime.messages import NOBODY

FPS = 10
SECONDS, SETTLE = 1.0, 0.3
PHASE_FRAMES = int((SECONDS + SETTLE) * FPS) + 1


@pytest.fixture(scope="module")
def session_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Stills standing in for a webcam: the buyer looks at Celia (turned to their own left,
    the mirrored 45-degree still), at Watson (the 45-degree still), then away (frontal)."""
    data = pyfeat_data()
    folder = tmp_path_factory.mktemp("calibration")
    views = tmp_path_factory.mktemp("views")
    still = cv2.imread(str(data / "45-m7-di-ph.jpg"))
    index = 0
    for view, image in enumerate([cv2.flip(still, 1), still, cv2.imread(str(data / "0-f15-hao-ph.jpg"))]):
        path = views / f"view{view}.png"
        cv2.imwrite(str(path), image)
        for _ in range(PHASE_FRAMES):
            (folder / f"frame{index:04d}.png").symlink_to(path)
            index += 1
    return folder


def test_calibrate_saves_targets_and_they_classify(session_folder: Path, tmp_path: Path) -> None:
    config_file = tmp_path / "humaine-env.toml"
    config_file.write_text('environment_uuid = "booth1"\n\n[broker]\nurl = "mqtt://10.0.0.5:1883"\n')
    code = cli_main([
        "calibrate", "--config", str(config_file), "--set", f"camera.fps={FPS}",
        "--source", f"images:{session_folder}",
        "--seconds", str(SECONDS), "--settle", str(SETTLE), "--no-prompt",
    ])
    assert code == 0
    config = Config.load(config_file)
    assert config.core.environment_uuid == "booth1"  # the rest of the file is kept
    assert config.broker.url == "mqtt://10.0.0.5:1883"
    settings = config.section(CameraSettings)
    assert settings.targets["Celia"].yaw == pytest.approx(41.0, abs=4.0)
    assert settings.targets["Watson"].yaw == pytest.approx(-41.0, abs=4.0)
    assert 10.0 <= settings.tolerance_deg <= 30.0
    assert settings.seat is not None  # the buyer's face: the still fills most of the frame
    assert settings.seat.x == pytest.approx(0.5, abs=0.1) and settings.seat.width > 0.3

    run = config.with_overrides({"camera.fps": FPS, "camera.min_dwell_ms": 300})
    pipeline = CameraPipeline(run.section(CameraSettings))
    source = open_source(f"images:{session_folder}", fps=FPS)
    attention = [pipeline.process(frame).attention for frame in frames(source)]
    pipeline.close()
    phases = [attention[i * PHASE_FRAMES : (i + 1) * PHASE_FRAMES] for i in range(3)]
    assert phases[0][-1] == "Celia" and phases[1][-1] == "Watson" and phases[2][-1] == NOBODY


def test_calibrate_without_a_face_fails_readably(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "frames"
    empty.mkdir()
    blank = cv2.imread(str(pyfeat_data() / "free-mountain-vector-01.jpg"))
    for i in range(PHASE_FRAMES):
        cv2.imwrite(str(empty / f"f{i:03d}.jpg"), blank)
    config_file = tmp_path / "c.toml"
    code = cli_main(["calibrate", "--config", str(_touch(config_file)),
                     "--set", f"camera.fps={FPS}", "--source", f"images:{empty}",
                     "--seconds", str(SECONDS), "--settle", str(SETTLE), "--no-prompt"])
    assert code == 1
    err = capsys.readouterr().err
    assert "saw a face in only 0 frames" in err
    assert "Traceback" not in err
    assert config_file.read_text() == ""  # nothing written


def _touch(path: Path) -> Path:
    path.write_text("")
    return path


def test_tolerance_never_lets_targets_overlap() -> None:
    phases = [PhaseResult("Celia", 20.0, 0.0, 30, 1.0), PhaseResult("Watson", -20.0, 0.0, 30, 1.0),
              PhaseResult(AWAY, 0.0, -25.0, 30, 1.0)]
    targets, tolerance = derive(phases)
    assert set(targets) == {"Celia", "Watson"}
    assert tolerance * 2 < 40.0
    assert tolerance * 2 < (20.0**2 + 25.0**2) ** 0.5
