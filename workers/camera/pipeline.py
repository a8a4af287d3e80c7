"""Frame -> buyer's head pose -> addressee: the camera worker's processing, without MQTT.

Kept apart from the worker so the benchmark, the calibration tool, ``humaine-env headpose``
and the tests run exactly the code the worker runs.

Faces: the buyer is meshed on every frame by a single-face FaceMesh in a square around their
last face box (:meth:`FaceMeshDetector.detect` ``around``), other known faces greyed out, so
the mesh describes the buyer however many people are in view and however small the faces of
a group are; with no buyer yet (or one the mesh could not describe), or when the buyer is not
in their square any more, it looks at the whole frame. With ``max_faces > 1`` a
scan (:mod:`workers.camera.scanner`) looks for every other face ``scan_hz`` times a second
and meshes each; the tracker (:mod:`workers.camera.tracking`) gives faces stable ids and
decides which is the buyer. When it chooses a face the per-frame mesh has not described yet,
the mesh runs again around that face on the same frame, so the buyer has a pose from the
first frame it is the buyer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from hardware.video import Frame
from workers.camera.addressee import AddresseeClassifier, AttentionChange
from workers.camera.facemesh import Box, DetectedFace, FaceMeshDetector
from workers.camera.headpose import HeadPoseEstimator, Pose
from workers.camera.mouth import mouth_opening
from workers.camera.one_euro import PoseFilter
from workers.camera.scanner import BackgroundScanner, Face, FaceScanner, Scan, same_face
from workers.camera.settings import CameraSettings, Seat, Target
from workers.camera.tracking import FaceTracker, TrackedFace, buyer_score

SCAN_STALE_INTERVALS = 3.0
"""A scan older than this many scan intervals (a stalled scanner) no longer adds faces."""


@dataclass(frozen=True)
class FrameResult:
    frame: Frame
    faces: list[TrackedFace]
    buyer: TrackedFace | None
    raw_pose: Pose | None
    """The buyer's unsmoothed pose (already un-mirrored), None without a usable face."""
    pose: Pose | None
    """The One-Euro-smoothed pose that drives the addressee."""
    candidate: str
    """What this frame alone points at."""
    attention: str
    """The current (dwell-filtered) addressee."""
    change: AttentionChange | None
    latency_ms: float
    """Processing time of this frame (detection + pose + addressee)."""
    mouth: float | None = None
    """The buyer's lip gap (:func:`~workers.camera.mouth.mouth_opening`), with the raw pose."""


class CameraPipeline:
    def __init__(
        self,
        settings: CameraSettings,
        detector: FaceMeshDetector | None = None,
        scanner: FaceScanner | None = None,
        background_scan: bool = True,
    ) -> None:
        """``detector``/``scanner``: reuse already-built MediaPipe graphs (tests build them
        once per module); those passed in are not closed by :meth:`close`.
        ``background_scan=False`` scans inside :meth:`process` (deterministic)."""
        self.settings = settings
        self._own_detector = detector is None
        self.detector = detector or FaceMeshDetector(max_faces=1, static_image_mode=True)
        self._own_scanner = scanner is None
        self.scanner: BackgroundScanner | None = None
        if settings.max_faces > 1:
            self.scanner = BackgroundScanner(scanner or FaceScanner(), background=background_scan)
        self.estimator = HeadPoseEstimator(settings.method, settings.fov_deg)
        self.tracker = FaceTracker(settings.seat)
        self.filter = PoseFilter(settings.one_euro_min_cutoff_hz, settings.one_euro_beta)
        self.addressee = AddresseeClassifier(
            settings.targets, settings.tolerance_deg, settings.hysteresis_deg, settings.min_dwell_ms
        )
        self._filtered_id: int | None = None
        self._number = 0
        self._scan_interval_ms = 1000.0 / settings.scan_hz
        self._last_offer_ms: int | None = None
        self._used_scan: Scan | None = None
        self._others: list[Face] = []
        self._others_ms = 0
        self._seen: list[Box] = []
        """Boxes of the faces of the last frame, to grey out around the buyer."""
        self._buyer_id: int | None = None
        """The latest buyer's id."""

    def recalibrate(self, targets: Mapping[str, Target], tolerance_deg: float, seat: Seat | None) -> None:
        """Use a new calibration from the next frame on (the console calibrated a new buyer)."""
        self.settings = self.settings.model_copy(update={"targets": dict(targets), "tolerance_deg": tolerance_deg,
                                                         "seat": seat or self.settings.seat})
        self.addressee.targets = dict(targets)
        self.addressee.tolerance_deg = tolerance_deg
        self.tracker.seat = self.settings.seat

    def process(self, frame: Frame) -> FrameResult:
        started = time.perf_counter()
        around = self.tracker.buyer_box()
        meshed = self.detector.detect(frame.image, self._mask(around), around)
        if not meshed and around is not None:
            # Not where they were (stood up, moved fast): look over the whole frame at once,
            # the other known faces still greyed out, rather than after the track expires.
            meshed = self.detector.detect(frame.image, self._mask(around))
        faces, buyer = self.tracker.update(self._with_scanned_faces(frame, meshed), frame.t_ms)
        if buyer is not None and buyer.face_id != self._buyer_id and not any(buyer.face is f for f in meshed):
            # Just chosen from the scan: mesh around them now rather than on the next frame.
            again = self.detector.detect(frame.image, self._mask(buyer.face.box), buyer.face.box)
            if again and same_face(again[0].box, buyer.face.box):
                meshed = again
                found = self.tracker.replace(buyer, again[0])
                faces = [found if t.face_id == found.face_id else t for t in faces]
                buyer = found
        self._seen = [t.face.box for t in faces]
        self._buyer_id = buyer.face_id if buyer is not None else self._buyer_id
        raw: Pose | None = None
        smooth: Pose | None = None
        mouth: float | None = None
        if buyer is not None and any(buyer.face is face for face in meshed):
            assert isinstance(buyer.face, DetectedFace)
            raw = self.estimator.estimate(buyer.face)
            if self.settings.mirrored:
                raw = raw.mirrored()
            if raw.confidence < self.settings.min_confidence:
                raw = None
            else:
                mouth = mouth_opening(buyer.face.landmarks)
        if raw is None or buyer is None:
            self.filter.reset()
            self._filtered_id = None
        else:
            if buyer.face_id != self._filtered_id:
                self.filter.reset()
                self._filtered_id = buyer.face_id
            yaw, pitch, roll = self.filter(raw.yaw, raw.pitch, raw.roll, frame.t_ms)
            smooth = Pose(yaw, pitch, roll, raw.confidence)
        candidate = self.addressee.candidate(smooth.yaw, smooth.pitch) if smooth else ""
        change = self.addressee.update(
            smooth.yaw if smooth else None, smooth.pitch if smooth else None, frame.t_ms
        )
        latency = (time.perf_counter() - started) * 1000.0
        return FrameResult(frame, faces, buyer, raw, smooth, candidate, self.addressee.current, change, latency, mouth)

    # -- other faces -------------------------------------------------------------------------
    def _with_scanned_faces(self, frame: Frame, meshed: list[DetectedFace]) -> list[Face]:
        """This frame's meshed face plus the faces the latest scan saw besides it."""
        number = self._number
        self._number += 1
        boxes = [face.box for face in meshed]
        if self.scanner is None:
            return list(meshed)
        due = self._last_offer_ms is None or frame.t_ms - self._last_offer_ms >= self._scan_interval_ms - 0.5
        if due and self.scanner.offer(number, frame.image, boxes):
            self._last_offer_ms = frame.t_ms
        scan = self.scanner.latest()
        if scan is not None and scan is not self._used_scan:
            self._used_scan = scan
            self._others_ms = frame.t_ms
            # The scan skipped the faces meshed on the frame it saw; keep the likeliest buyers.
            seat = self.settings.seat
            others = sorted(scan.faces, key=lambda f: (isinstance(f, DetectedFace), buyer_score(f, seat)), reverse=True)
            self._others = others[: max(0, self.settings.max_faces - 1)]
        if frame.t_ms - self._others_ms > SCAN_STALE_INTERVALS * max(self._scan_interval_ms, 1000.0):
            self._others = []
        extra = [s for s in self._others if not any(same_face(s.box, b) for b in boxes)]
        return [*meshed, *extra]

    def _mask(self, around: Box | None) -> list[Box]:
        """Other faces to grey out when meshing around the buyer's box: a neighbour in the
        square must not be taken for the buyer."""
        if around is None:
            return []
        return [b for b in self._seen if not same_face(b, around)]

    def close(self) -> None:
        if self.scanner is not None:
            self.scanner.close(close_scanner=self._own_scanner)
        if self._own_detector:
            self.detector.close()
