"""The face renderer: labels by construction, the camera convention, estimator accuracy.

Floors are set from measurement on the full grid (bench/sessions_pose.py: yaw MAE 2.3, pitch
MAE 3.1 degrees over 105 views of three faces) with margin for machine-to-machine variation.
"""

from __future__ import annotations

import numpy as np
import pytest

from sessions.face_render import Camera, FaceRenderer, pose_rotation, room_background, tessellation_triangles
from sessions.faces import FACES, face_model
from sessions.pose_grid import measure
from workers.camera.facemesh import FaceMeshDetector
from workers.camera.headpose import HeadPoseEstimator
from workers.camera.mouth import mouth_opening
from workers.microphone.lips import MIN_MOTION

NOSE_TIP = 1
TEST_YAWS = (-45.0, -30.0, -15.0, 0.0, 15.0, 30.0, 45.0)
TEST_PITCHES = (-25.0, 0.0, 25.0)
YAW_MAE_FLOOR = 3.5
PITCH_MAE_FLOOR = 4.5


@pytest.fixture(scope="module")
def renderer() -> FaceRenderer:
    camera = Camera()
    return FaceRenderer(face_model("f15"), camera, room_background(camera, seed=3))


def test_tessellation_gives_the_facemesh_triangles() -> None:
    tris = tessellation_triangles()
    assert 850 <= len(tris) <= 900  # the canonical FaceMesh has 852 faces
    assert tris.max() < 468 and len({tuple(t) for t in tris}) == len(tris)


def test_rotation_follows_the_headpose_convention() -> None:
    forward = np.array([0.0, 0.0, -1.0])  # a frontal face looks along -z
    assert (pose_rotation(30, 0) @ forward)[0] > 0.4  # +yaw: nose towards image right
    assert (pose_rotation(0, 20) @ forward)[1] < -0.3  # +pitch: nose up (y down)
    r = pose_rotation(23, -11, 4)
    assert np.allclose(r @ r.T, np.eye(3)) and np.isclose(np.linalg.det(r), 1.0)


def test_projected_nose_moves_with_the_pose(renderer: FaceRenderer) -> None:
    centre = renderer.project(0, 0)[0][NOSE_TIP]
    assert renderer.project(25, 0)[0][NOSE_TIP][0] > centre[0] + 20
    assert renderer.project(-25, 0)[0][NOSE_TIP][0] < centre[0] - 20
    assert renderer.project(0, 20)[0][NOSE_TIP][1] < centre[1] - 10


def test_render_is_deterministic_and_face_sized(renderer: FaceRenderer) -> None:
    a, b = renderer.render(20, -10), renderer.render(20, -10)
    assert a.shape == (480, 640, 3) and np.array_equal(a, b)
    assert not np.array_equal(a, renderer.render(-20, -10))


def test_estimator_reads_rendered_turns_with_the_right_sign(renderer: FaceRenderer) -> None:
    estimator = HeadPoseEstimator()
    with FaceMeshDetector(max_faces=1, static_image_mode=True) as detector:
        poses = {}
        for yaw, pitch in ((30, 0), (-30, 0), (0, 20), (0, -20)):
            faces = detector.detect(renderer.render(yaw, pitch))
            assert faces, f"no face found at yaw {yaw}, pitch {pitch}"
            poses[(yaw, pitch)] = estimator.estimate(faces[0])
    assert poses[(30, 0)].yaw > 20 and poses[(-30, 0)].yaw < -20
    assert poses[(0, 20)].pitch > 12 and poses[(0, -20)].pitch < -12


def test_the_camera_reads_the_rendered_jaw_as_the_lips_opening() -> None:
    """Real MediaPipe on each face rendered with its jaw closed, half and wholly open: the lip
    gap the camera worker publishes grows with it, by more than the microphone's threshold of
    moving lips (measured 0.06-0.13 from closed to open at yaw 0 and +-20)."""
    camera = Camera()
    with FaceMeshDetector(max_faces=1, static_image_mode=True) as detector:
        for face in FACES:
            renderer = FaceRenderer(face_model(face), camera, room_background(camera, seed=1))
            for yaw in (0.0, 20.0):
                gaps = []
                for mouth in (0.0, 0.5, 1.0):
                    found = detector.detect(renderer.render(yaw, 0.0, 0.0, mouth))
                    assert found, (face, yaw, mouth)
                    gap = mouth_opening(found[0].landmarks)
                    assert gap is not None
                    gaps.append(gap)
                assert gaps[0] < gaps[1] < gaps[2] and gaps[2] - gaps[0] >= 1.5 * MIN_MOTION, (face, yaw, gaps)


def test_estimator_accuracy_on_the_rendered_grid() -> None:
    summary = measure(tuple(FACES), TEST_YAWS, TEST_PITCHES).summary()
    assert summary["detected"] == summary["views"] == len(FACES) * len(TEST_YAWS) * len(TEST_PITCHES)
    assert summary["yaw_mae"] <= YAW_MAE_FLOOR, summary
    assert summary["pitch_mae"] <= PITCH_MAE_FLOOR, summary
