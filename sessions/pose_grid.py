"""Head-pose accuracy of the camera worker's estimator on rendered views of known pose.

Each view is rendered by :mod:`sessions.face_render` at a grid (yaw, pitch); the labels are
the renderer's. The estimator runs exactly as in the camera worker (the project's FaceMesh
wrapper, then :class:`HeadPoseEstimator`), in static-image mode because grid views are
independent stills. Used by the benchmark and by a test that guards against regressions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from sessions.face_render import Camera, FaceRenderer, room_background
from sessions.faces import face_model
from workers.camera.facemesh import FaceMeshDetector
from workers.camera.headpose import HeadPoseEstimator, Method

YAWS: tuple[float, ...] = (-45.0, -30.0, -15.0, 0.0, 15.0, 30.0, 45.0)
PITCHES: tuple[float, ...] = (-25.0, -12.5, 0.0, 12.5, 25.0)
Axis = Literal["yaw", "pitch"]


@dataclass(frozen=True)
class GridView:
    """One rendered view: the face, the pose it was rendered at, the pose estimated (None: no
    face found)."""

    face: str
    true_yaw: float
    true_pitch: float
    yaw: float | None
    pitch: float | None

    def error(self, axis: Axis) -> float | None:
        """How far the estimate is off on ``axis`` (degrees), None without one."""
        found, true = (self.yaw, self.true_yaw) if axis == "yaw" else (self.pitch, self.true_pitch)
        return None if found is None else abs(found - true)


@dataclass
class GridResult:
    rows: list[GridView] = field(default_factory=list)

    def _errors(self, axis: Axis, face: str | None = None) -> NDArray[np.float64]:
        errors = [r.error(axis) for r in self.rows if face is None or r.face == face]
        return np.array([e for e in errors if e is not None], dtype=np.float64)

    def summary(self) -> dict[str, object]:
        faces = sorted({r.face for r in self.rows})
        detected = sum(r.yaw is not None for r in self.rows)
        out: dict[str, object] = {
            "views": len(self.rows),
            "detected": detected,
            "yaw_mae": round(float(self._errors("yaw").mean()), 2) if detected else None,
            "pitch_mae": round(float(self._errors("pitch").mean()), 2) if detected else None,
            "yaw_max_err": round(float(self._errors("yaw").max()), 2) if detected else None,
            "pitch_max_err": round(float(self._errors("pitch").max()), 2) if detected else None,
        }
        for face in faces:
            yaw, pitch = self._errors("yaw", face), self._errors("pitch", face)
            out[f"{face}_yaw_mae"] = round(float(yaw.mean()), 2) if len(yaw) else None
            out[f"{face}_pitch_mae"] = round(float(pitch.mean()), 2) if len(pitch) else None
        return out


def measure(
    faces: tuple[str, ...],
    yaws: tuple[float, ...] = YAWS,
    pitches: tuple[float, ...] = PITCHES,
    camera: Camera | None = None,
    method: Method = "kabsch",
) -> GridResult:
    """``method``: the camera worker's estimator (``kabsch``) or ``pnp`` given the renderer's
    exact field of view, for the comparison recorded in :mod:`workers.camera.headpose`."""
    camera = camera or Camera()
    result = GridResult()
    estimator = HeadPoseEstimator(method, fov_deg=camera.hfov_deg)
    with FaceMeshDetector(max_faces=1, static_image_mode=True) as detector:
        for n, face in enumerate(faces):
            renderer = FaceRenderer(face_model(face), camera, room_background(camera, seed=n))
            for yaw in yaws:
                for pitch in pitches:
                    found = detector.detect(renderer.render(yaw, pitch))
                    pose = estimator.estimate(found[0]) if found else None
                    result.rows.append(GridView(face, yaw, pitch, None if pose is None else round(pose.yaw, 2),
                                                None if pose is None else round(pose.pitch, 2)))
    return result
