"""The camera pipeline on real clips and frames: buyer tracking, smoothing, addressee."""

from __future__ import annotations

import math
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from hardware.video import Frame, VideoFileSource, frames
from tests.support.camera_assets import pyfeat_data
from workers.camera.addressee import CONFIRM_SHARE, MIN_FRAMES, AddresseeClassifier
from workers.camera.facemesh import DetectedFace, FaceMeshDetector
from workers.camera.one_euro import OneEuroFilter
from workers.camera.pipeline import CameraPipeline, FrameResult
from workers.camera.scanner import FaceScanner
from workers.camera.settings import CameraSettings, Target
from workers.camera.tracking import LOST_MS, SWITCH_MS
from workers.runtime.messages import NOBODY

FRONT_AND_RIGHT = {"Celia": Target(yaw=0.0, pitch=0.0), "Watson": Target(yaw=-30.0, pitch=0.0)}
"""Celia straight ahead of the camera, Watson to the buyer's right."""


@pytest.fixture(scope="module")
def data() -> Path:
    return pyfeat_data()


def _pipeline(mesh: FaceMeshDetector, scanner: FaceScanner | None = None, **settings: object) -> CameraPipeline:
    """The worker's pipeline with the scan run inline (deterministic) when ``scanner`` is given."""
    values: dict[str, object] = {"targets": FRONT_AND_RIGHT, "tolerance_deg": 20.0}
    if scanner is None:
        values["max_faces"] = 1
    values.update(settings)
    return CameraPipeline(CameraSettings.model_validate(values), detector=mesh, scanner=scanner, background_scan=False)


def _run(pipeline: CameraPipeline, path: Path) -> list[FrameResult]:
    source = VideoFileSource(path, start_ms=1_000_000)
    try:
        return [pipeline.process(frame) for frame in frames(source)]
    finally:
        source.close()


def _meshed(result: FrameResult) -> bool:
    """The frame has a face with landmarks (the scan's faces are boxes only, no pose)."""
    return any(isinstance(t.face, DetectedFace) for t in result.faces)


# -- attention on real clips -------------------------------------------------------------------
def test_nobody_when_the_face_leaves(mesh: FaceMeshDetector, scanner: FaceScanner, data: Path) -> None:
    results = _run(_pipeline(mesh, scanner), data / "face_noface.mov")
    last_face = max(i for i, r in enumerate(results) if _meshed(r))
    assert 0 < last_face < len(results) - 20
    assert results[last_face].attention == "Celia"  # frontal face, looking at the camera
    assert results[-1].attention == NOBODY
    changes = [r.change for r in results if r.change]
    assert [c.target for c in changes] == ["Celia", NOBODY]
    assert changes[-1].since == results[last_face + 1].frame.t_ms  # when the face was gone
    assert all(r.pose is None for r in results[last_face + 1 :])


def test_attention_appears_with_the_face(mesh: FaceMeshDetector, scanner: FaceScanner, data: Path) -> None:
    results = _run(_pipeline(mesh, scanner), data / "noface_face.mov")
    first_face = min(i for i, r in enumerate(results) if _meshed(r))
    first_pose = min(i for i, r in enumerate(results) if r.raw_pose is not None)
    assert first_face > 20
    assert first_pose - first_face <= 3  # the scan may mesh a face emerging at the edge first
    assert all(r.attention == NOBODY for r in results[: first_pose + MIN_FRAMES - 1])
    change = next(r.change for r in results if r.change)
    assert change.target == "Celia"
    assert change.since == results[first_pose].frame.t_ms


def test_attention_never_flips_on_a_single_frame(mesh: FaceMeshDetector, data: Path) -> None:
    """A 20 s clip of a head turning: every change was backed by most frames of at least the
    dwell time before it, and every attention period lasts at least the dwell time."""
    pipeline = _pipeline(mesh, tolerance_deg=6.0, hysteresis_deg=3.0,
                         targets={"Celia": Target(yaw=0.0), "Watson": Target(yaw=-12.0)})
    results = _run(pipeline, data / "WolfgangLanger_Pexels.mp4")
    changes = [(i, r.change) for i, r in enumerate(results) if r.change]
    assert len(changes) >= 3, "the clip turns between both targets"
    dwell = pipeline.settings.min_dwell_ms
    for (i, change), nxt in zip(changes, [*changes[1:], (len(results), None)], strict=True):
        assert change is not None
        assert results[i].frame.t_ms - change.since >= dwell
        backing = [r.candidate for r in results if change.since <= r.frame.t_ms <= results[i].frame.t_ms]
        agreeing = backing.count(change.target)
        assert agreeing >= MIN_FRAMES and agreeing >= CONFIRM_SHARE * len(backing)
        end = results[nxt[0] - 1].frame.t_ms if nxt[0] < len(results) else results[-1].frame.t_ms
        assert end - change.since >= dwell or nxt[1] is None


def test_pose_is_smoothed_but_follows(mesh: FaceMeshDetector, scanner: FaceScanner, data: Path) -> None:
    results = [r for r in _run(_pipeline(mesh, scanner), data / "WolfgangLanger_Pexels.mp4") if r.pose]
    raw = np.array([r.raw_pose.yaw for r in results if r.raw_pose])
    smooth = np.array([r.pose.yaw for r in results if r.pose])
    assert np.abs(np.diff(smooth)).mean() < np.abs(np.diff(raw)).mean()
    assert np.abs(smooth - raw).mean() < 3.0


# -- buyer tracking ----------------------------------------------------------------------------
def _composite(data: Path, with_big: bool = True) -> np.ndarray:
    """A large central face (0-f15) and a small corner face (45-m7) on one canvas."""
    canvas = np.full((512, 900, 3), 90, np.uint8)
    if with_big:
        canvas[:, 250:762] = cv2.imread(str(data / "0-f15-hao-ph.jpg"))
    canvas[:256, :256] = cv2.resize(cv2.imread(str(data / "45-m7-di-ph.jpg")), (256, 256))
    return canvas


def test_buyer_is_the_large_central_face_with_a_stable_id(
    mesh: FaceMeshDetector, scanner: FaceScanner, data: Path
) -> None:
    pipeline = _pipeline(mesh, scanner)
    both = _composite(data)
    results = [pipeline.process(Frame(both, 1000 + 33 * i, i)) for i in range(6)]
    assert all(len(r.faces) == 2 for r in results)
    buyer_ids = {r.buyer.face_id for r in results if r.buyer}
    assert len(buyer_ids) == 1
    assert all(r.buyer and r.buyer.face.box[2] > 0.25 for r in results)  # the 512-px face
    assert {tuple(sorted(t.face_id for t in r.faces)) for r in results} == {(1, 2)}
    assert abs(results[-1].pose.yaw) < 7  # type: ignore[union-attr]  # the frontal one


def test_buyer_switches_only_when_gone(mesh: FaceMeshDetector, scanner: FaceScanner, data: Path) -> None:
    """The buyer's role waits :data:`LOST_MS` for a face that vanished, then goes to the face
    still in view, which kept its id and gets its own pose."""
    pipeline = _pipeline(mesh, scanner)
    gone_frames = LOST_MS // 33 + 3
    sequence = [_composite(data)] * 3 + [_composite(data, with_big=False)] * gone_frames
    results = [pipeline.process(Frame(img, 1000 + 33 * i, i)) for i, img in enumerate(sequence)]
    first, last = results[0].buyer, results[-1].buyer
    assert first is not None and last is not None and first.face_id != last.face_id
    assert all(r.buyer is None for r in results[3 : 3 + LOST_MS // 33])  # waiting, no pose
    assert last.face.box[2] < 0.2
    assert last.face_id in {t.face_id for t in results[0].faces}  # the corner face kept its id
    assert results[-1].pose is not None and results[-1].pose.yaw < -30  # its own yaw, not averaged


def test_a_bigger_newcomer_takes_over_after_a_while_with_its_own_pose(
    mesh: FaceMeshDetector, scanner: FaceScanner, data: Path
) -> None:
    """A passer-by who is briefly larger does not steal the buyer's role; one who stays does,
    and from that frame on the mesh describes the newcomer (its own frontal pose)."""
    pipeline = _pipeline(mesh, scanner)
    switch_frames = SWITCH_MS // 33 + 10
    sequence = [_composite(data, with_big=False)] * 5 + [_composite(data)] * switch_frames
    results = [pipeline.process(Frame(img, 1000 + 33 * i, i)) for i, img in enumerate(sequence)]
    corner = results[4].buyer
    assert corner is not None and corner.face.box[2] < 0.2 and results[4].pose is not None
    newcomer_seen = min(i for i, r in enumerate(results) if len(r.faces) == 2)
    held = results[newcomer_seen : newcomer_seen + SWITCH_MS // 33]
    assert all(r.buyer and r.buyer.face_id == corner.face_id and r.raw_pose for r in held)
    switched = next(i for i, r in enumerate(results) if r.buyer and r.buyer.face_id != corner.face_id)
    assert results[switched].frame.t_ms - results[newcomer_seen].frame.t_ms >= SWITCH_MS
    assert all(r.raw_pose is not None for r in results[switched:])  # a pose from the first frame
    last = results[-1]
    assert last.buyer is not None and last.buyer.face.box[2] > 0.25
    assert last.pose is not None and abs(last.pose.yaw) < 7  # the frontal newcomer's own pose
    assert sorted(t.face_id for t in last.faces) == sorted({corner.face_id, last.buyer.face_id})


def test_background_scan_adds_other_faces(mesh: FaceMeshDetector, scanner: FaceScanner, data: Path) -> None:
    """The worker's configuration: the scan runs on its own thread and its faces join the
    meshed one a few frames later, while the buyer keeps its id."""
    settings = CameraSettings.model_validate({"targets": FRONT_AND_RIGHT})
    pipeline = CameraPipeline(settings, detector=mesh, scanner=scanner)
    both = _composite(data)
    try:
        results = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (len(results) < 5 or len(results[-1].faces) < 2):
            results.append(pipeline.process(Frame(both, 1000 + 33 * len(results), len(results))))
            time.sleep(0.02)
    finally:
        pipeline.close()
    assert len(results[-1].faces) == 2
    assert {r.buyer.face_id for r in results if r.buyer} == {results[-1].buyer.face_id}  # type: ignore[union-attr]
    assert results[-1].buyer is not None and results[-1].buyer.face.box[2] > 0.25


# -- pieces ------------------------------------------------------------------------------------
def test_single_outliers_never_flip_attention() -> None:
    classifier = AddresseeClassifier({"Celia": Target(yaw=25.0), "Watson": Target(yaw=-25.0)}, 12.0, 4.0, 300)
    rng = np.random.default_rng(7)
    changes = []
    t = 0
    for i in range(300):
        yaw = 25.0 + rng.normal(0, 2.0)
        if i % 10 == 5:
            yaw = -25.0  # one frame at Watson
        if i % 10 == 7:
            yaw = None  # one frame without a face
        change = classifier.update(yaw, 0.0 if yaw is not None else None, t)
        if change:
            changes.append(change)
        t += 33
    assert [c.target for c in changes] == ["Celia"]
    assert classifier.current == "Celia"


def test_hysteresis_keeps_the_current_target_at_the_edge() -> None:
    classifier = AddresseeClassifier({"Celia": Target(yaw=25.0)}, tolerance_deg=10.0, hysteresis_deg=5.0, min_dwell_ms=0)
    for t in range(0, 100, 33):
        classifier.update(25.0, 0.0, t)
    assert classifier.current == "Celia"
    classifier.update(12.0, 0.0, 200)  # 13 deg off: outside tolerance, inside hysteresis
    classifier.update(12.0, 0.0, 233)
    assert classifier.current == "Celia"
    classifier.update(8.0, 0.0, 266)  # 17 deg off: beyond both
    classifier.update(8.0, 0.0, 300)
    assert classifier.current == NOBODY


def test_one_euro_smooths_jitter_and_follows_a_step() -> None:
    rng = np.random.default_rng(3)
    still = OneEuroFilter(min_cutoff_hz=1.0, beta=0.05)
    noisy = 10 + rng.normal(0, 2.0, 90)
    out = np.array([still(float(v), 1000 + 33 * i) for i, v in enumerate(noisy)])
    assert out[30:].std() < noisy[30:].std() / 2
    step = OneEuroFilter(min_cutoff_hz=1.0, beta=0.05)
    values = [0.0] * 30 + [30.0] * 30
    followed = [step(v, 33 * i) for i, v in enumerate(values)]
    assert followed[29] == 0.0
    assert math.isclose(followed[-1], 30.0, abs_tol=1.0)
    assert followed[33] > 10.0  # within 100 ms the turn is well under way


def test_mirrored_camera_setting_flips_yaw_back(mesh: FaceMeshDetector, data: Path) -> None:
    still = cv2.imread(str(data / "45-m7-di-ph.jpg"))
    plain = _pipeline(mesh).process(Frame(still, 0, 0))
    selfie = _pipeline(mesh, mirrored=True).process(Frame(cv2.flip(still, 1), 0, 0))
    assert plain.pose is not None and selfie.pose is not None
    assert plain.pose.yaw < -30
    assert selfie.pose.yaw == pytest.approx(plain.pose.yaw, abs=3.0)
