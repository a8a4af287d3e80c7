"""MediaPipe FaceMesh (``mediapipe==0.10.21``, ``mp.solutions.face_mesh``) as a small detector.

The models ship inside the mediapipe wheel, so nothing is downloaded at run time. Landmarks
are returned in pixel units with depth on the same scale as x (MediaPipe's ``z`` is relative
to the image width), which makes them a 3D point cloud that can be fitted rigidly to a face
model without camera intrinsics.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import cv2
import numpy as np
from numpy.typing import NDArray

from hardware.video import Image, image_of

log = logging.getLogger(__name__)

MESH_POINTS = 468
"""Face-surface landmarks; the refined model adds 10 iris points after these."""
MASK_GREY = 128
"""Fill of masked boxes: flat mid-grey, where neither detector nor mesh finds a face."""

CROP_SCALE = 2.2
"""Side of the square a face is meshed in, in face-box sizes (the mesh's own region of interest
is 1.5 face sizes; the rest leaves room for the head to move between frames)."""
CROP_PX = 256
"""The square is resized to this many pixels: the mesh runs at 192 px on the face anyway."""

Box = tuple[float, float, float, float]
"""x, y, width, height as fractions of the frame."""


def square_around(box: Box, image_size: tuple[int, int], scale: float = CROP_SCALE) -> tuple[int, int, int]:
    """(left, top, side) in pixels of the square centred on ``box``, ``scale`` times its larger
    side; it may reach beyond the frame (that part is filled grey)."""
    width, height = image_size
    cx, cy = (box[0] + box[2] / 2) * width, (box[1] + box[3] / 2) * height
    side = max(8, round(scale * max(box[2] * width, box[3] * height)))
    return round(cx - side / 2), round(cy - side / 2), side


def crop_square(image: Image, left: int, top: int, side: int, out_px: int = CROP_PX) -> Image:
    """The square (grey outside the frame) resized to ``out_px``; same channel order as ``image``."""
    height, width = image.shape[:2]
    square = np.full((side, side, image.shape[2]), MASK_GREY, dtype=image.dtype)
    x0, y0, x1, y1 = max(0, left), max(0, top), min(width, left + side), min(height, top + side)
    if x1 > x0 and y1 > y0:
        square[y0 - top : y1 - top, x0 - left : x1 - left] = image[y0:y1, x0:x1]
    interpolation = cv2.INTER_AREA if side > out_px else cv2.INTER_LINEAR
    return image_of(cv2.resize(square, (out_px, out_px), interpolation=interpolation))


@dataclass(frozen=True)
class DetectedFace:
    """One face: ``landmarks`` (N, 3) in pixels (x right, y down, z away from the camera)."""

    landmarks: NDArray[np.float64]
    image_size: tuple[int, int]
    """(width, height) of the frame the landmarks refer to."""

    @cached_property
    def box(self) -> Box:
        """x, y, width, height of the landmarks' bounding box as fractions of the frame
        (computed once: tracking, scoring and publishing all read it)."""
        w, h = self.image_size
        xs, ys = self.landmarks[:MESH_POINTS, 0], self.landmarks[:MESH_POINTS, 1]
        x0, x1 = max(0.0, float(xs.min())), min(float(w), float(xs.max()))
        y0, y1 = max(0.0, float(ys.min())), min(float(h), float(ys.max()))
        return x0 / w, y0 / h, max(0.0, x1 - x0) / w, max(0.0, y1 - y0) / h

    @property
    def center(self) -> tuple[float, float]:
        x, y, bw, bh = self.box
        return x + bw / 2, y + bh / 2

    @property
    def area(self) -> float:
        _, _, bw, bh = self.box
        return bw * bh


class FaceMeshDetector:
    """Wraps one ``FaceMesh`` graph (about a second to build: create once, reuse).

    The worker uses ``max_faces=1, static_image_mode=True`` on a square around the buyer's face
    (``detect(..., around=box)``): every frame is meshed on its own (detector, then landmarks),
    about 9 ms at 640x480 here against 6.5 ms for MediaPipe's own tracking mode on the whole
    frame, but the result depends only on the frame, so the square can move from face to face
    without confusing a tracker. MediaPipe's tracking mode lost the face on 42% of the frames
    of the head-turn clip when fed a moving square. A full-frame mesh asked for N faces runs
    its detector on every frame while fewer than N are in view and finds only the larger faces
    of a group, so other faces come from a separate, occasional scan
    (:mod:`workers.camera.scanner`); ``bench/camera.py`` measures both (``crowd_4_faces``).
    """

    def __init__(
        self,
        max_faces: int = 3,
        static_image_mode: bool = False,
        min_detection_confidence: float = 0.5,
        min_tracking_confidence: float = 0.5,
    ) -> None:
        os.environ.setdefault("GLOG_minloglevel", "2")
        import mediapipe as mp  # heavy import: only when a detector is built

        self.max_faces = max_faces
        self.static_image_mode = static_image_mode
        self._mesh = mp.solutions.face_mesh.FaceMesh(
            static_image_mode=static_image_mode,
            max_num_faces=max_faces,
            refine_landmarks=True,
            min_detection_confidence=min_detection_confidence,
            min_tracking_confidence=min_tracking_confidence,
        )
        self._rgb: Image | None = None

    def detect(self, image_bgr: Image, mask: Sequence[Box] = (), around: Box | None = None) -> list[DetectedFace]:
        """Faces in one BGR frame (OpenCV order), landmarks in the frame's pixels.

        ``around``: mesh only the square around this box (see :func:`square_around`), resized
        to :data:`CROP_PX`. FaceMesh's detector looks for faces at 128 px over its whole input,
        so in a full frame it misses the small faces of a group; in a square around one face
        it finds that face, whatever else is in the frame.
        ``mask``: boxes (fractions of the frame) painted grey before the mesh sees the frame, so
        a single-face mesh does not take a neighbour for the face it was pointed at.
        The frame itself is not modified: the colour conversion writes into a buffer reused
        from frame to frame (MediaPipe copies its input, so reuse is safe)."""
        height, width = image_bgr.shape[:2]
        if self._rgb is None or self._rgb.shape != image_bgr.shape:
            self._rgb = np.empty_like(image_bgr)
        rgb = image_of(cv2.cvtColor(image_bgr, cv2.COLOR_BGR2RGB, dst=self._rgb))
        for x, y, bw, bh in mask:
            x0, y0 = max(0, int(x * width)), max(0, int(y * height))
            x1, y1 = min(width, int((x + bw) * width) + 1), min(height, int((y + bh) * height) + 1)
            rgb[y0:y1, x0:x1] = MASK_GREY
        scale = np.array((width, height, width), dtype=np.float64)
        offset = np.zeros(3)
        if around is not None:
            left, top, side = square_around(around, (width, height))
            rgb = crop_square(rgb, left, top, side)
            scale = np.array((side, side, side), dtype=np.float64)
            offset = np.array((left, top, 0.0))
        rgb.flags.writeable = False
        try:
            result = self._mesh.process(rgb)
        finally:
            rgb.flags.writeable = True
        faces: list[DetectedFace] = []
        for face in result.multi_face_landmarks or ():
            points = np.array([(p.x, p.y, p.z) for p in face.landmark], dtype=np.float64)
            points = points * scale + offset
            faces.append(DetectedFace(points, (width, height)))
        return faces

    def close(self) -> None:
        self._mesh.close()

    def __enter__(self) -> FaceMeshDetector:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
