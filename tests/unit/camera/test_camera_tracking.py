"""The buyer choice alone, on faces given as boxes (no images): ids, the seat, time hysteresis."""

from __future__ import annotations

import numpy as np

from workers.camera.facemesh import MESH_POINTS, Box, DetectedFace
from workers.camera.settings import Seat
from workers.camera.tracking import LOST_MS, SWITCH_MARGIN, SWITCH_MS, TRACK_TTL_MS, FaceTracker, buyer_score

SIZE = (640, 480)


def meshed(box: Box) -> DetectedFace:
    """A face with landmarks filling ``box`` (the tracker reads only the box)."""
    x, y, w, h = box
    rng = np.random.default_rng(0)
    points = np.column_stack([
        rng.uniform(x, x + w, MESH_POINTS) * SIZE[0], rng.uniform(y, y + h, MESH_POINTS) * SIZE[1], np.zeros(MESH_POINTS)])
    points[0, :2] = x * SIZE[0], y * SIZE[1]
    points[1, :2] = (x + w) * SIZE[0], (y + h) * SIZE[1]
    return DetectedFace(points, SIZE)


CENTRE = meshed((0.4, 0.3, 0.2, 0.3))
LEFT = meshed((0.05, 0.3, 0.1, 0.15))


def test_ids_follow_faces_that_move_and_survive_a_short_gap() -> None:
    tracker = FaceTracker()
    first, _ = tracker.update([CENTRE, LEFT], 0)
    moved, _ = tracker.update([meshed((0.42, 0.31, 0.2, 0.3))], 33)
    assert moved[0].face_id == first[0].face_id
    back, _ = tracker.update([meshed((0.42, 0.31, 0.2, 0.3)), LEFT], TRACK_TTL_MS - 100)
    assert [t.face_id for t in back] == [t.face_id for t in first]  # LEFT kept its id while unseen
    later, _ = tracker.update([LEFT], 3 * TRACK_TTL_MS)
    assert later[0].face_id not in {t.face_id for t in first}  # forgotten after the TTL


def test_a_missing_buyer_keeps_the_role_for_a_moment() -> None:
    tracker = FaceTracker()
    _, buyer = tracker.update([CENTRE, LEFT], 0)
    assert buyer is not None and buyer.face is CENTRE
    _, waiting = tracker.update([LEFT], LOST_MS - 33)
    assert waiting is None
    _, back = tracker.update([CENTRE, LEFT], LOST_MS)
    assert back is not None and back.face_id == buyer.face_id
    tracker.update([LEFT], LOST_MS + 33)
    _, other = tracker.update([LEFT], 2 * LOST_MS + 66)
    assert other is not None and other.face is LEFT


def test_a_challenger_needs_a_sustained_lead() -> None:
    tracker = FaceTracker()
    _, buyer = tracker.update([LEFT], 0)
    assert buyer is not None
    big = CENTRE
    assert buyer_score(big) > SWITCH_MARGIN * buyer_score(LEFT)
    t = 33
    for _ in range(3):  # leads that break off before SWITCH_MS never switch
        lead_start = t
        while t - lead_start < SWITCH_MS - 100:
            _, held = tracker.update([LEFT, big], t)
            assert held is not None and held.face is LEFT
            t += 33
        _, held = tracker.update([LEFT], t)
        t += 33
    assert t > 3 * (SWITCH_MS - 100)
    start = t
    while t - start < SWITCH_MS:
        _, held = tracker.update([LEFT, big], t)
        assert held is not None and held.face is LEFT
        t += 33
    _, switched = tracker.update([LEFT, big], t)
    assert switched is not None and switched.face is big


def test_the_seat_beats_size() -> None:
    seat = Seat(x=0.1, y=0.375, width=0.1, height=0.15)  # where LEFT is
    assert buyer_score(LEFT, seat) > SWITCH_MARGIN * buyer_score(CENTRE, seat)
    _, buyer = FaceTracker(seat).update([CENTRE, LEFT], 0)
    assert buyer is not None and buyer.face is LEFT
    _, no_seat = FaceTracker().update([CENTRE, LEFT], 0)
    assert no_seat is not None and no_seat.face is CENTRE
