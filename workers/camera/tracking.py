"""Which face is the buyer's, frame after frame, when several are in view.

Faces get stable ids: each face is matched to the nearest face track of the last second that
is plausibly the same face (:func:`same_face`), and a track unseen for a moment keeps its id.

The buyer is the face closest to the calibrated seat (:class:`Seat`: where the buyer's face
was, and how big, at calibration); without a calibrated seat, the largest and most central
face. Every candidate is scored on the same kind of box, the FaceMesh landmarks' box (the
scan meshes every face it can, see :mod:`workers.camera.scanner`). The choice holds:

* a face with landmarks is always preferred to a face the mesh could not describe (which has
  no pose), and never replaced by one;
* another face takes over only after scoring :data:`SWITCH_MARGIN` times the buyer's score
  for :data:`SWITCH_MS` of frame time without a break: never on one frame;
* a buyer with landmarks missing from a frame keeps the role for :data:`LOST_MS` (a blink of
  the detector, someone walking past in front), with no pose meanwhile, rather than handing it
  to whoever else is in view.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workers.camera.facemesh import Box, DetectedFace
from workers.camera.scanner import Face, same_face
from workers.camera.settings import Seat

TRACK_TTL_MS = 1000
"""A face track unseen for longer than this is forgotten (its id is not reused)."""
LOST_MS = 500
"""The buyer unseen for longer than this is replaced by the best face in view."""
SWITCH_MARGIN = 1.5
"""Another face must score this many times the buyer's score ..."""
SWITCH_MS = 1000
"""... for this long (frame time, without a break) to become the buyer."""
SEAT_POSITION_SPAN = 1.0
"""Seat score: a face this many face sizes away from the seat scores exp(-1/2) ..."""
SEAT_SIZE_SPAN = math.log(1.5)
"""... and so does one 1.5 times larger or smaller than the seated face."""


@dataclass(frozen=True)
class TrackedFace:
    face_id: int
    face: Face
    score: float

    @property
    def has_landmarks(self) -> bool:
        return isinstance(self.face, DetectedFace)


def buyer_score(face: Face, seat: Seat | None = None) -> float:
    """How much ``face`` looks like the buyer's: closeness to the seat in position and size, or
    without a seat its area weighted by closeness to the frame centre (1 at the centre, 0.5 at a
    corner). Both are symmetric about the vertical midline when the seat is on it, so an image
    and its mirror image choose the same person."""
    x, y, width, height = face.box
    cx, cy = x + width / 2, y + height / 2
    if seat is None:
        off_centre = math.hypot(cx - 0.5, cy - 0.5) / math.hypot(0.5, 0.5)
        return width * height * (1.0 - 0.5 * off_centre)
    distance = math.hypot((cx - seat.x) / seat.width, (cy - seat.y) / seat.height) / SEAT_POSITION_SPAN
    size = math.log(max(1e-6, math.sqrt(width * height)) / math.sqrt(seat.width * seat.height)) / SEAT_SIZE_SPAN
    return math.exp(-0.5 * (distance**2 + size**2))


@dataclass
class _Track:
    face_id: int
    box: Box
    seen_ms: int
    has_landmarks: bool


class FaceTracker:
    def __init__(self, seat: Seat | None = None) -> None:
        self.seat = seat
        self._tracks: list[_Track] = []
        self._next_id = 1
        self.buyer_id: int | None = None
        self._challenger: int | None = None
        self._challenger_since = 0

    def update(self, faces: list[Face], t_ms: int) -> tuple[list[TrackedFace], TrackedFace | None]:
        """Assign ids to this frame's faces; returns (this frame's tracked faces, the buyer, or
        None when no face is the buyer on this frame)."""
        tracked = self._assign_ids(faces, t_ms)
        return tracked, self._choose_buyer(tracked, t_ms)

    def buyer_box(self) -> Box | None:
        """The buyer's last seen box when it was a meshed face's (the buyer may be missing from
        the latest frame); None without a buyer, or when the mesh could not describe them."""
        track = self._buyer_track()
        return track.box if track is not None and track.has_landmarks else None

    def _buyer_track(self) -> _Track | None:
        return next((t for t in self._tracks if t.face_id == self.buyer_id), None)

    def replace(self, tracked: TrackedFace, face: Face) -> TrackedFace:
        """The same face seen better on the same frame (meshed after the scan found it)."""
        for track in self._tracks:
            if track.face_id == tracked.face_id:
                track.box, track.has_landmarks = face.box, isinstance(face, DetectedFace)
        return TrackedFace(tracked.face_id, face, buyer_score(face, self.seat))

    def _assign_ids(self, faces: list[Face], t_ms: int) -> list[TrackedFace]:
        self._tracks = [t for t in self._tracks if t_ms - t.seen_ms <= TRACK_TTL_MS]
        pairs = sorted(
            (math.dist(face.center, _centre(track.box)), i, j)
            for i, face in enumerate(faces)
            for j, track in enumerate(self._tracks)
            if same_face(face.box, track.box)
        )
        ids: dict[int, int] = {}
        used: set[int] = set()
        for _, i, j in pairs:
            if i in ids or j in used:
                continue
            ids[i] = self._tracks[j].face_id
            used.add(j)
            track = self._tracks[j]
            track.box, track.seen_ms, track.has_landmarks = faces[i].box, t_ms, isinstance(faces[i], DetectedFace)
        tracked = []
        for i, face in enumerate(faces):
            if i not in ids:
                ids[i] = self._next_id
                self._tracks.append(_Track(self._next_id, face.box, t_ms, isinstance(face, DetectedFace)))
                self._next_id += 1
            tracked.append(TrackedFace(ids[i], face, buyer_score(face, self.seat)))
        return tracked

    def _choose_buyer(self, tracked: list[TrackedFace], t_ms: int) -> TrackedFace | None:
        current = next((t for t in tracked if t.face_id == self.buyer_id), None)
        if current is None:
            track = self._buyer_track()
            if track is not None and track.has_landmarks and t_ms - track.seen_ms <= LOST_MS:
                return None  # missing for a moment: the role waits for them
            self._challenger = None
            best = max(tracked, key=_rank, default=None)
            self.buyer_id = best.face_id if best is not None else None
            return best
        others = [t for t in tracked if t.face_id != current.face_id]
        best = max(others, key=_rank, default=None)
        if best is None or not _beats(best, current):
            self._challenger = None
            return current
        if self._challenger != best.face_id:
            self._challenger, self._challenger_since = best.face_id, t_ms
        if t_ms - self._challenger_since < SWITCH_MS:
            return current
        self.buyer_id, self._challenger = best.face_id, None
        return best


def _centre(box: Box) -> tuple[float, float]:
    return box[0] + box[2] / 2, box[1] + box[3] / 2


def _rank(face: TrackedFace) -> tuple[bool, float]:
    """Faces with landmarks first, then by score."""
    return face.has_landmarks, face.score


def _beats(challenger: TrackedFace, buyer: TrackedFace) -> bool:
    if challenger.has_landmarks != buyer.has_landmarks:
        return challenger.has_landmarks
    return challenger.score > SWITCH_MARGIN * buyer.score
