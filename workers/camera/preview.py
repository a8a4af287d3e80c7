"""Debug view: landmarks, pose axes and the current target drawn on each frame, written to a
video file (``--preview out.mp4``) or shown in a window where a display exists."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import cv2
import numpy as np

from hardware.video import DEFAULT_FPS, Image, image_of
from workers.camera.facemesh import MESH_POINTS, DetectedFace
from workers.camera.headpose import rotation_from_angles
from workers.camera.pipeline import FrameResult
from workers.runtime.messages import NOBODY

log = logging.getLogger(__name__)

WINDOW = "humaine-env camera"
AXIS_FRACTION = 0.6
"""Axis length as a fraction of the face-box width."""
BUYER_COLOUR = (0, 200, 0)
OTHER_COLOUR = (160, 160, 160)


def annotate(result: FrameResult) -> Image:
    """A copy of the frame with every face's landmarks, the buyer's axes and the target."""
    image = result.frame.image.copy()
    height, width = image.shape[:2]
    for tracked in result.faces:
        colour = BUYER_COLOUR if result.buyer and tracked.face_id == result.buyer.face_id else OTHER_COLOUR
        if isinstance(tracked.face, DetectedFace):  # faces from the scan have a box only
            for x, y, _ in tracked.face.landmarks[:MESH_POINTS:3]:
                cv2.circle(image, (int(x), int(y)), 1, colour, -1)
        bx, by, bw, bh = tracked.face.box
        top_left = (int(bx * width), int(by * height))
        cv2.rectangle(image, top_left, (int((bx + bw) * width), int((by + bh) * height)), colour, 1)
        cv2.putText(image, f"#{tracked.face_id}", (int(bx * width), max(12, int(by * height) - 4)),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.5, colour, 1, cv2.LINE_AA)
    if result.buyer is not None and result.pose is not None and isinstance(result.buyer.face, DetectedFace):
        pose = result.pose
        rotation = rotation_from_angles(pose.yaw, pose.pitch, pose.roll)
        nose = result.buyer.face.landmarks[1, :2]
        length = AXIS_FRACTION * result.buyer.face.box[2] * width
        # x: the person's left (image right when frontal), y: up, z: out of the face.
        for axis, colour in (((1, 0, 0), (0, 0, 255)), ((0, -1, 0), (0, 255, 0)), ((0, 0, -1), (255, 0, 0))):
            tip = nose + length * (rotation @ np.array(axis, dtype=float))[:2]
            cv2.arrowedLine(image, (int(nose[0]), int(nose[1])), (int(tip[0]), int(tip[1])), colour, 2, cv2.LINE_AA)
        text = f"yaw {pose.yaw:+.0f} pitch {pose.pitch:+.0f} roll {pose.roll:+.0f}"
        cv2.putText(image, text, (10, height - 12), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 2, cv2.LINE_AA)
    target = result.attention if result.attention != NOBODY else "nobody"
    cv2.putText(image, f"-> {target}", (10, 30), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (0, 255, 255), 2, cv2.LINE_AA)
    return image


class Preview:
    """Writes annotated frames to ``path`` (mp4), or to a window when ``path`` is None.

    The file plays at ``fps``: the caller sets it to its source's frame rate before the first
    frame (a 15 fps camera written at 30 fps played at double speed); frames of another size
    than the first are scaled to it."""

    def __init__(self, path: str | Path | None, fps: float | None = None) -> None:
        self.path = Path(path) if path else None
        self.fps = fps
        self._writer: cv2.VideoWriter | None = None
        self._size: tuple[int, int] = (0, 0)
        if self.path is None and not os.environ.get("DISPLAY"):
            raise RuntimeError("no display for a preview window; pass --preview out.mp4 to write a file")

    def show(self, result: FrameResult) -> None:
        image = annotate(result)
        if self.path is None:
            cv2.imshow(WINDOW, image)
            cv2.waitKey(1)
            return
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            height, width = image.shape[:2]
            self._size = (width, height)
            fps = self.fps or DEFAULT_FPS
            self._writer = cv2.VideoWriter(str(self.path), cv2.VideoWriter.fourcc(*"mp4v"), fps, self._size)
            if not self._writer.isOpened():
                raise RuntimeError(f"cannot write preview video {self.path}")
        if (image.shape[1], image.shape[0]) != self._size:
            image = image_of(cv2.resize(image, self._size))
        self._writer.write(image)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.release()
            log.info("preview written to %s", self.path)
        elif self.path is None:
            cv2.destroyAllWindows()
