"""Occasional look for every face in view, apart from the per-frame meshing of the buyer.

Why: a FaceMesh asked for up to N faces runs its face detector on *every* frame while fewer
than N are tracked (with one person in front of the camera that is always), which cost the
worker a third of its frame time; and its detector, run at 128 px over the whole frame, finds
only the larger faces of a group (0-4 of 5 on a group photo, depending on its orientation).
The buyer is therefore meshed every frame in a square around their face
(:meth:`FaceMeshDetector.detect` ``around``), and the other faces, which only matter to decide
who the buyer is, come from a scan a few times a second on a background thread, so no frame
pays for a scan in its own latency:

* MediaPipe's two face detectors (the short-range one inside FaceMesh, and the full-range one
  for faces further away), their boxes merged: together they find all 5 faces of the group photo
  and of its mirror image, where each alone misses some;
* then the same single-face FaceMesh as the buyer's, in a square around each face found, so
  every face that can be meshed is described like the buyer (landmark box and landmarks): a
  detector's box is about 1.3 times the area of the mesh's for the same face, and comparing
  the two favoured faces that have no pose.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import cv2

from hardware.video import Image
from workers.camera.facemesh import Box, DetectedFace, FaceMeshDetector

log = logging.getLogger(__name__)

SAME_FACE_SPAN = 0.75
"""See :func:`same_face`."""


@dataclass(frozen=True)
class ScannedFace:
    """A face the detectors saw but the mesh could not: a box only (no landmarks, no pose)."""

    box: Box
    score: float

    @property
    def center(self) -> tuple[float, float]:
        x, y, bw, bh = self.box
        return x + bw / 2, y + bh / 2

    @property
    def area(self) -> float:
        return self.box[2] * self.box[3]


Face: TypeAlias = DetectedFace | ScannedFace


def same_face(a: Box, b: Box) -> bool:
    """Two boxes of one face: centres closer than :data:`SAME_FACE_SPAN` of the larger box on
    both axes. Loose on purpose: a scan box is up to a scan interval old, and two people's
    faces are at least a face width apart."""
    ax, ay = a[0] + a[2] / 2, a[1] + a[3] / 2
    bx, by = b[0] + b[2] / 2, b[1] + b[3] / 2
    return abs(ax - bx) < SAME_FACE_SPAN * max(a[2], b[2]) and abs(ay - by) < SAME_FACE_SPAN * max(a[3], b[3])


@dataclass(frozen=True)
class Scan:
    frame_number: int
    """The pipeline's running frame number of the scanned frame."""
    faces: list[Face]


class FaceScanner:
    """Every face in one frame: both MediaPipe face detectors, then a FaceMesh around each face
    (about 15 ms plus 9 ms a face; 50 ms p50 for a 640x480 frame with four faces, bench/camera.py)."""

    def __init__(self, min_confidence: float = 0.5) -> None:
        os.environ.setdefault("GLOG_minloglevel", "2")
        import mediapipe as mp  # heavy import: only when a scanner is built

        self._detectors = [
            mp.solutions.face_detection.FaceDetection(model_selection=model, min_detection_confidence=min_confidence)
            for model in (0, 1)  # short range (within 2 m), full range (within 5 m)
        ]
        self._mesh = FaceMeshDetector(max_faces=1, static_image_mode=True)

    def detect(self, image_bgr: Image) -> list[ScannedFace]:
        """The detectors' boxes, one per face (the more confident where both saw it)."""
        rgb = cv2.cvtColor(image_bgr, cv2.COLOR_BGR2RGB)
        rgb.flags.writeable = False
        found: list[ScannedFace] = []
        for detector in self._detectors:
            result = detector.process(rgb)
            for detection in result.detections or ():
                r = detection.location_data.relative_bounding_box
                x0, y0 = max(0.0, r.xmin), max(0.0, r.ymin)
                x1, y1 = min(1.0, r.xmin + r.width), min(1.0, r.ymin + r.height)
                if x1 > x0 and y1 > y0:
                    found.append(ScannedFace((x0, y0, x1 - x0, y1 - y0), float(detection.score[0])))
        faces: list[ScannedFace] = []
        for face in sorted(found, key=lambda f: f.score, reverse=True):
            if not any(same_face(face.box, kept.box) for kept in faces):
                faces.append(face)
        return faces

    def scan(self, image_bgr: Image, skip: Sequence[Box] = ()) -> list[Face]:
        """Every face except those at a ``skip`` box (already meshed by the caller): meshed
        where the mesh finds the face in the square around it, else its detector box."""
        faces: list[Face] = []
        for found in self.detect(image_bgr):
            if any(same_face(found.box, box) for box in skip):
                continue
            meshed = self._mesh.detect(image_bgr, around=found.box)
            if meshed and same_face(meshed[0].box, found.box):
                faces.append(meshed[0])
            else:
                faces.append(found)
        return faces

    def close(self) -> None:
        for detector in self._detectors:
            detector.close()
        self._mesh.close()


class BackgroundScanner:
    """Runs a :class:`FaceScanner` on a thread, on the newest frame offered while it is idle.

    :meth:`offer` never waits: a frame arriving while a scan is running is simply not scanned,
    so a slow scan lowers the scan rate, never the frame rate. ``background=False`` scans inside
    :meth:`offer` (deterministic, for tests and offline processing)."""

    def __init__(self, scanner: FaceScanner, background: bool = True) -> None:
        self.scanner = scanner
        self.background = background
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: tuple[int, Image, list[Box]] | None = None
        self._busy = False
        self._latest: Scan | None = None
        self._closed = False
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._loop, name="camera-face-scan", daemon=True)
            self._thread.start()

    def offer(self, frame_number: int, image_bgr: Image, skip: Sequence[Box] = ()) -> bool:
        """Scan this frame (but the faces at ``skip``) if the scanner is free; True when taken."""
        if not self.background:
            self._latest = Scan(frame_number, self.scanner.scan(image_bgr, skip))
            return True
        with self._lock:
            if self._busy or self._pending is not None or self._closed:
                return False
            # A copy: the caller may draw on or reuse its frame while the scan runs (3 Hz, 1 MB).
            self._pending = (frame_number, image_bgr.copy(), list(skip))
            self._wake.notify()
            return True

    def latest(self) -> Scan | None:
        with self._lock:
            return self._latest

    def _loop(self) -> None:
        while True:
            with self._lock:
                while self._pending is None and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                assert self._pending is not None
                number, image, skip = self._pending
                self._pending, self._busy = None, True
            try:
                faces = self.scanner.scan(image, skip)
            except Exception:  # a failed scan must not kill the thread; tracking goes on
                log.exception("face scan failed")
                faces = None
            with self._lock:
                self._busy = False
                if faces is not None:
                    self._latest = Scan(number, faces)

    def close(self, close_scanner: bool = True) -> None:
        """Stop the thread; ``close_scanner=False`` leaves a shared detector open."""
        with self._lock:
            self._closed = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if close_scanner:
            self.scanner.close()
