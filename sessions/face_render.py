"""Views of a real face photo at an exactly known head pose, for ground-truth head-pose data.

Why: the camera worker's yaw/pitch can only be measured against labels that do not come from
an estimator. A textured 3D face mesh built once from a real frontal photo, rotated by a known
rotation and projected through a known pinhole camera, gives such labels by construction.

How:

* Geometry and texture: MediaPipe FaceMesh (the project's :class:`FaceMeshDetector`) on the
  frontal photo gives 468 surface points (x, y in photo pixels, z on the x scale) whose photo
  positions are also the texture coordinates. Triangles are the 3-cliques of MediaPipe's
  ``FACEMESH_TESSELATION`` edge list. Two rings of extra vertices pushed out and back from
  the face oval carry the hair, ears and neck, so a turned head still looks like a head.
* Pose zero: the mesh is rotated so that its bilateral symmetry plane (from mirror-partner
  landmarks) is the camera's y-z plane, which removes whatever yaw and roll the person had
  in the photo; the photo's pitch is kept (a frontal portrait looks into the lens).
* Rendering: per-triangle affine warp in painter's order (far triangles first, back faces
  culled). Triangle ids are rasterised into an index buffer with ``cv2.fillConvexPoly`` in that
  order, then every covered pixel is mapped back to the photo through its triangle's affine
  transform and sampled with one ``cv2.remap`` - the same result as one masked
  ``cv2.warpAffine`` per triangle, without the seams and at a fraction of the cost.

Pose convention: the one of :class:`workers.runtime.messages.HeadPose` (yaw > 0: the person turns to
their own left, the nose moves towards image right; pitch > 0: looking up).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray

from hardware.video import Image, image_of
from workers.camera.facemesh import MESH_POINTS, FaceMeshDetector

FACE_WIDTH_MM = 145.0
"""Width of the face oval of an adult head; sets the metric scale of the mesh."""
PIVOT_BEHIND_MM = 95.0
"""The head turns about a point this far behind the face's centroid (roughly the neck axis)."""
RINGS: tuple[tuple[float, float], ...] = ((1.18, 0.10), (1.42, 0.34))
"""Extra vertex rings around the face oval: (scale of the oval in the photo, extra depth as a
fraction of the face width). They carry hair, ears and neck and bend back like a skull."""
GLABELLA, SUBNASALE = 9, 2
"""FaceMesh landmarks of the line that defines pitch zero (see :func:`pitch_zero_rotation`)."""
CLOTHING_BGR: tuple[tuple[int, int, int], ...] = ((60, 45, 35), (110, 80, 50), (40, 40, 40), (130, 120, 150), (70, 90, 60))
"""Shirt colours under the rendered head (picked by the photo's name)."""
FEATHER_PX = 1.2
"""Blur of the face mask edge so the composite has no jagged outline."""
JAW_DROP_MM = 12.0
"""How far the lower lip drops at ``mouth=1`` (a wide-open vowel)."""
CHIN_RAMP_MM = 15.0
"""Below the lips, the jaw's share of the drop grows over this far to the whole of it."""
JAW_HALF_WIDTH = (0.25, 0.5)
"""Across the face, the jaw drops whole within the first fraction of the face width from the
middle and not at all beyond the second (the cheeks stretch in between)."""
UPPER_INNER_LIP, LOWER_INNER_LIP = 13, 14
"""FaceMesh's middle points of the inner lips."""

Floats = NDArray[np.float64]
"""Points, depths and rotations (mm, pixels, radians)."""
Triangles = NDArray[np.int32]
"""(T, 3) vertex indices of the mesh's triangles."""


class RenderError(Exception):
    """The photo cannot be turned into a face model (no face found, unreadable file)."""


@dataclass(frozen=True)
class Camera:
    """A pinhole camera: what ``session.json`` records as the intrinsics."""

    width: int = 640
    height: int = 480
    hfov_deg: float = 60.0

    @property
    def focal(self) -> float:
        return self.width / 2.0 / math.tan(math.radians(self.hfov_deg) / 2.0)

    @property
    def matrix(self) -> list[list[float]]:
        f = self.focal
        return [[f, 0.0, self.width / 2.0], [0.0, f, self.height / 2.0], [0.0, 0.0, 1.0]]


def pose_rotation(yaw: float, pitch: float, roll: float = 0.0) -> Floats:
    """Rotation of the head in camera coordinates (x right, y down, z away from the camera).

    Built from the convention directly: a head looking along -z turned by +yaw has its nose
    towards +x, by +pitch towards -y (up); roll > 0 turns the image of the face clockwise.
    Order: pitch in the head's frame, then yaw, then roll about the camera axis.
    """
    a, b, g = math.radians(yaw), math.radians(pitch), math.radians(roll)
    # about y by -a: (0, 0, -1) -> (sin a, 0, -cos a)
    ry = np.array([[math.cos(a), 0.0, -math.sin(a)], [0.0, 1.0, 0.0], [math.sin(a), 0.0, math.cos(a)]])
    # about x by -b: (0, 0, -1) -> (0, -sin b, -cos b)
    rx = np.array([[1.0, 0.0, 0.0], [0.0, math.cos(b), math.sin(b)], [0.0, -math.sin(b), math.cos(b)]])
    rz = np.array([[math.cos(g), -math.sin(g), 0.0], [math.sin(g), math.cos(g), 0.0], [0.0, 0.0, 1.0]])
    rotation: Floats = rz @ ry @ rx
    return rotation


@lru_cache(maxsize=1)
def tessellation_triangles() -> Triangles:
    """(T, 3) vertex indices: the triangles of MediaPipe's FaceMesh tessellation (its edges'
    3-cliques; mediapipe ships only the edge list)."""
    import mediapipe as mp

    edges = mp.solutions.face_mesh_connections.FACEMESH_TESSELATION
    neighbours: dict[int, set[int]] = {}
    for a, b in edges:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    found: set[tuple[int, int, int]] = set()
    for a, b in edges:
        for c in neighbours[a] & neighbours[b]:
            first, second, third = sorted((a, b, c))
            found.add((first, second, third))
    return np.array(sorted(found), dtype=np.int32)


def _loops(edges: frozenset[tuple[int, int]]) -> list[list[int]]:
    """The closed loops of an edge set (each vertex on a loop has exactly two neighbours)."""
    nxt: dict[int, list[int]] = {}
    for a, b in edges:
        nxt.setdefault(a, []).append(b)
        nxt.setdefault(b, []).append(a)
    loops: list[list[int]] = []
    seen: set[int] = set()
    for start in sorted(nxt):
        if start in seen:
            continue
        loop, previous = [start], -1
        while True:
            current = loop[-1]
            following = next(n for n in nxt[current] if n != previous)
            if following == start:
                break
            previous = current
            loop.append(following)
        seen.update(loop)
        loops.append(loop)
    return loops


@lru_cache(maxsize=1)
def face_oval_loop() -> list[int]:
    """The face-oval landmarks in walking order (from ``FACEMESH_FACE_OVAL``'s edges)."""
    import mediapipe as mp

    return _loops(mp.solutions.face_mesh_connections.FACEMESH_FACE_OVAL)[0]


@lru_cache(maxsize=1)
def hole_loops() -> list[list[int]]:
    """The openings the tessellation leaves: both eyes (between the lids) and the mouth
    (inside the lips). Filled with a fan so open eyes and an open mouth keep their texture."""
    import mediapipe as mp

    conn = mp.solutions.face_mesh_connections
    eyes = _loops(conn.FACEMESH_LEFT_EYE) + _loops(conn.FACEMESH_RIGHT_EYE)
    lips = _loops(conn.FACEMESH_LIPS)
    reference_x = _reference_x()
    from workers.camera.face_reference import REFERENCE

    ref = np.asarray(REFERENCE[:MESH_POINTS])
    # the inner lip loop is the narrower of the two lip loops
    inner = min(lips, key=lambda loop: float(np.ptp(reference_x[loop])) + float(np.ptp(ref[loop, 1])))
    return [*eyes, inner]


@lru_cache(maxsize=1)
def mirror_partners() -> NDArray[np.intp]:
    """Index of each landmark's left-right partner (itself on the midline), from the project's
    mirror-symmetric reference face: a fact about the mesh topology, not about any photo."""
    from workers.camera.face_reference import REFERENCE

    ref = np.asarray(REFERENCE[:MESH_POINTS])
    mirrored = ref * np.array([-1.0, 1.0, 1.0])
    distances = np.linalg.norm(ref[None, :, :] - mirrored[:, None, :], axis=2)
    partners: NDArray[np.intp] = distances.argmin(axis=1)
    return partners


def frontalizing_rotation(points: Floats) -> Floats:
    """Rotation that makes the landmarks' symmetry plane the y-z plane (removes yaw and roll,
    keeps pitch): the normal is the dominant direction of partner-to-partner vectors."""
    partners = mirror_partners()
    ref_x = _reference_x()
    side = ref_x > 0.05
    diffs = points[side] - points[partners[side]]
    normal = diffs.mean(axis=0)
    normal /= np.linalg.norm(normal)
    target = np.array([1.0, 0.0, 0.0])
    axis = np.cross(normal, target)
    s, c = float(np.linalg.norm(axis)), float(normal @ target)
    if s < 1e-9:
        return np.eye(3)
    rvec = axis / s * math.atan2(s, c)
    rotation, _ = cv2.Rodrigues(rvec)
    return np.asarray(rotation, dtype=np.float64)


def pitch_zero_rotation(points: Floats) -> Floats:
    """Rotation about x that makes the glabella-subnasale line (landmarks 9 and 2, both on
    rigid bone, unmoved by jaw or brows) perpendicular to the optical axis: the anatomical
    "facial profile vertical" definition of a level head, independent of how the person held
    their head in the photo."""
    d = points[SUBNASALE] - points[GLABELLA]
    phi = -math.atan2(d[2], d[1])
    c, s = math.cos(phi), math.sin(phi)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _reference_x() -> Floats:
    from workers.camera.face_reference import REFERENCE

    return np.asarray(REFERENCE[:MESH_POINTS])[:, 0]


@dataclass
class FaceModel:
    """A textured mesh: ``vertices`` (N, 3) in mm, head frame (pivot at the origin, looking
    along -z, pose zero), ``uv`` (N, 2) photo pixel coordinates, ``triangles`` (T, 3)
    oriented so front faces have positive signed area in the image."""

    name: str
    texture: Image
    vertices: Floats
    uv: Floats
    triangles: Triangles
    clothing_bgr: tuple[int, int, int]
    jaw: Floats | None = None
    """(N,) each vertex's share of the jaw's drop when the mouth opens (0: stays)."""

    @classmethod
    def from_photo(cls, path: str | Path, detector: FaceMeshDetector | None = None) -> FaceModel:
        read = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if read is None:
            raise RenderError(f"{path}: not an image OpenCV can read")
        image = image_of(read)
        own = detector is None
        detector = detector or FaceMeshDetector(max_faces=1, static_image_mode=True)
        try:
            faces = detector.detect(image)
        finally:
            if own:
                detector.close()
        if not faces:
            raise RenderError(f"{path}: MediaPipe FaceMesh finds no face in it")
        return cls.from_landmarks(Path(path).stem, image, faces[0].landmarks[:MESH_POINTS])

    @classmethod
    def from_landmarks(cls, name: str, image: Image, landmarks: Floats) -> FaceModel:
        pts = np.asarray(landmarks, dtype=np.float64)
        uv = pts[:, :2].copy()
        oval = face_oval_loop()
        face_width_px = float(np.ptp(pts[oval, 0]))
        centre = pts.mean(axis=0)
        rotation = frontalizing_rotation(pts)
        rotation = pitch_zero_rotation((pts - centre) @ rotation.T) @ rotation
        head = (pts - centre) @ rotation.T * (FACE_WIDTH_MM / face_width_px)
        # fill the eye and mouth openings: one centre vertex per opening
        centres: list[Floats] = []
        centre_uv: list[Floats] = []
        fans: list[list[int]] = []
        for loop in hole_loops():
            k = MESH_POINTS + len(centres)
            centres.append(head[loop].mean(axis=0))
            centre_uv.append(uv[loop].mean(axis=0))
            fans += [[k, loop[i], loop[(i + 1) % len(loop)]] for i in range(len(loop))]
        head = np.vstack([head, centres])
        uv = np.vstack([uv, centre_uv])
        n_head = len(head)
        # extra rings: pushed out in the photo (texture) and out+back in 3D (geometry)
        oval_centre_uv = uv[oval].mean(axis=0)
        oval_centre_3d = head[oval].mean(axis=0)
        ring_vertices, ring_uv = [], []
        for scale, depth in RINGS:
            ring_uv.append(oval_centre_uv + (uv[oval] - oval_centre_uv) * scale)
            spread = oval_centre_3d + (head[oval] - oval_centre_3d) * np.array([scale, scale, 1.0])
            spread[:, 2] += depth * FACE_WIDTH_MM
            ring_vertices.append(spread)
        vertices = np.vstack([head, *ring_vertices])
        uv_all = np.vstack([uv, *ring_uv])
        uv_all[:, 0] = uv_all[:, 0].clip(0, image.shape[1] - 1)
        uv_all[:, 1] = uv_all[:, 1].clip(0, image.shape[0] - 1)
        triangles = [tessellation_triangles(), np.array(fans)]
        rings = [np.array(oval)] + [n_head + k * len(oval) + np.arange(len(oval)) for k in range(len(RINGS))]
        for inner, outer in itertools.pairwise(rings):
            n = len(inner)
            for i in range(n):
                j = (i + 1) % n
                triangles.append(np.array([[inner[i], outer[i], outer[j]], [inner[i], outer[j], inner[j]]]))
        tris = np.vstack(triangles).astype(np.int32)
        jaw = jaw_weights(head[:MESH_POINTS], n_head)
        jaw = np.concatenate([jaw, *[jaw[oval] for _ in RINGS]])
        # pivot behind the face: the head turns about the neck, not about the nose
        vertices = vertices - np.array([0.0, 0.0, PIVOT_BEHIND_MM])
        tris = _orient_front(tris, vertices)
        clothing = CLOTHING_BGR[sum(name.encode()) % len(CLOTHING_BGR)]
        return cls(name, image, vertices, uv_all, tris, clothing, jaw)


def _lower_chain(loop: list[int], head: Floats, lower_point: int) -> list[int]:
    """The lower half of a lip loop: from one mouth corner to the other through ``lower_point``,
    corners excluded (they are the hinge)."""
    xs = head[loop, 0]
    a, b = sorted((int(np.argmin(xs)), int(np.argmax(xs))))
    inside, outside = loop[a + 1:b], loop[b + 1:] + loop[:a]
    return inside if lower_point in inside else outside


def jaw_weights(head: Floats, n_head: int) -> Floats:
    """Each head vertex's share of the jaw's drop: the lower lips whole (less towards the
    corners), the chin and jaw below them growing to whole over :data:`CHIN_RAMP_MM`, nothing
    across the middle of the cheeks and above the lips; the mouth's fan centre half."""
    import mediapipe as mp

    lips = _loops(mp.solutions.face_mesh_connections.FACEMESH_LIPS)
    centre = (head[UPPER_INNER_LIP] + head[LOWER_INNER_LIP]) / 2.0
    width = float(np.ptp(head[face_oval_loop(), 0]))
    across = np.abs(head[:, 0] - centre[0]) / width
    full, none = JAW_HALF_WIDTH
    sideways = np.clip((none - across) / (none - full), 0.0, 1.0)
    weights = np.clip((head[:, 1] - centre[1]) / CHIN_RAMP_MM, 0.0, 1.0) * sideways
    for loop in lips:
        lower_point = LOWER_INNER_LIP if LOWER_INNER_LIP in loop else max(loop, key=lambda i: head[i, 1])
        chain = _lower_chain(loop, head, lower_point)
        half = float(np.ptp(head[loop, 0])) / 2.0
        for i in chain:
            weights[i] = max(weights[i], 1.0 - (abs(head[i, 0] - centre[0]) / half) ** 2)
    out = np.zeros(n_head)
    out[:MESH_POINTS] = weights
    out[n_head - 1] = 0.5  # the mouth's fan centre, the last of the openings' centres
    return out


def _orient_front(triangles: Triangles, vertices: Floats) -> Triangles:
    """Order each triangle's vertices so that, seen from the camera at pose zero, its signed
    area in image coordinates (y down) is positive: negative later means it faces away."""
    p = vertices[:, :2]
    a, b, c = p[triangles[:, 0]], p[triangles[:, 1]], p[triangles[:, 2]]
    area = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    flipped = triangles.copy()
    flip = area < 0
    flipped[flip] = triangles[flip][:, [0, 2, 1]]
    return flipped


@dataclass(frozen=True)
class Placement:
    """Where the head is: the pivot's position in camera coordinates, mm."""

    x_mm: float = 0.0
    y_mm: float = -20.0
    distance_mm: float = 620.0


class FaceRenderer:
    """Renders one :class:`FaceModel` at given poses onto a fixed background."""

    def __init__(self, model: FaceModel, camera: Camera, background: Image, placement: Placement | None = None) -> None:
        if background.shape[:2] != (camera.height, camera.width):
            background = image_of(cv2.resize(background, (camera.width, camera.height), interpolation=cv2.INTER_AREA))
        self.model = model
        self.camera = camera
        self.placement = placement or Placement()
        self.background = self._with_shoulders(background)

    def _with_shoulders(self, background: Image) -> Image:
        """A torso under the head (it does not turn with it), coloured like the photo's clothes."""
        scene = background.copy()
        cam, place = self.camera, self.placement
        f = cam.focal
        neck_y = cam.height / 2.0 + f * (place.y_mm + 150.0) / place.distance_mm
        centre = (int(cam.width / 2.0 + f * place.x_mm / place.distance_mm), int(neck_y + f * 170.0 / place.distance_mm))
        axes = (int(f * 230.0 / place.distance_mm), int(f * 150.0 / place.distance_mm))
        cv2.ellipse(scene, centre, axes, 0, 180, 360, self.model.clothing_bgr, -1, cv2.LINE_AA)
        cv2.rectangle(scene, (centre[0] - axes[0], centre[1]), (centre[0] + axes[0], cam.height), self.model.clothing_bgr, -1)
        return scene

    def project(self, yaw: float, pitch: float, roll: float = 0.0, mouth: float = 0.0) -> tuple[Floats, Floats]:
        """(N, 2) image points and (N,) depths (mm) of the mesh vertices at this pose, the
        mouth open by ``mouth`` (0 closed as in the photo, 1 wide open)."""
        place = self.placement
        vertices = self.model.vertices
        if mouth and self.model.jaw is not None:
            vertices = vertices + np.outer(self.model.jaw, [0.0, mouth * JAW_DROP_MM, 0.0])
        cam_points = vertices @ pose_rotation(yaw, pitch, roll).T
        cam_points += np.array([place.x_mm, place.y_mm, place.distance_mm])
        f = self.camera.focal
        z = cam_points[:, 2]
        uv = np.empty((len(cam_points), 2))
        uv[:, 0] = f * cam_points[:, 0] / z + self.camera.width / 2.0
        uv[:, 1] = f * cam_points[:, 1] / z + self.camera.height / 2.0
        return uv, z

    def render(self, yaw: float, pitch: float, roll: float = 0.0, mouth: float = 0.0) -> Image:
        """The BGR frame of the head at (yaw, pitch, roll) degrees, the mouth open by ``mouth``."""
        cam = self.camera
        model = self.model
        points, depth = self.project(yaw, pitch, roll, mouth)
        tris = model.triangles
        a, b, c = points[tris[:, 0]], points[tris[:, 1]], points[tris[:, 2]]
        area = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
        visible = np.flatnonzero(area > 1e-3)
        order = visible[np.argsort(-depth[tris[visible]].mean(axis=1), kind="stable")]
        index = np.full((cam.height, cam.width), -1, dtype=np.int32)
        fixed = np.round(points * 16.0).astype(np.int32)
        for t in order:
            cv2.fillConvexPoly(index, fixed[tris[t]], (int(t),), lineType=cv2.LINE_8, shift=4)
        # affine map image -> photo for every triangle: [u v 1] @ M = [x y]
        dst = np.concatenate([points[tris], np.ones((len(tris), 3, 1))], axis=2)
        src = model.uv[tris]
        dst[area <= 1e-3] = np.array([[0, 0, 1], [1, 0, 1], [0, 1, 1]])  # degenerate: never sampled
        maps = np.linalg.solve(dst, src)
        ys, xs = np.nonzero(index >= 0)
        ids = index[ys, xs]
        m = maps[ids]
        map_x = np.full(index.shape, -1.0, dtype=np.float32)
        map_y = np.full(index.shape, -1.0, dtype=np.float32)
        map_x[ys, xs] = xs * m[:, 0, 0] + ys * m[:, 1, 0] + m[:, 2, 0]
        map_y[ys, xs] = xs * m[:, 0, 1] + ys * m[:, 1, 1] + m[:, 2, 1]
        face = cv2.remap(model.texture, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        covered = (index >= 0).astype(np.float32)
        mask = cv2.GaussianBlur(covered, (0, 0), FEATHER_PX)[:, :, None]
        out = face.astype(np.float32) * mask + self.background.astype(np.float32) * (1.0 - mask)
        return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def room_background(camera: Camera, seed: int = 0) -> Image:
    """A plausible, deterministic office wall behind the buyer: a lit wall with a gradient, a
    door, a shelf, a picture frame and fine texture noise (no faces, nothing face-like)."""
    rng = np.random.default_rng(seed)
    w, h = camera.width, camera.height
    base = np.array(rng.integers(150, 215, size=3), dtype=np.float32)
    ramp = np.linspace(1.08, 0.78, h, dtype=np.float32)[:, None, None]
    side = np.linspace(0.92, 1.05, w, dtype=np.float32)[None, :, None]
    scene = base[None, None, :] * ramp * side
    scene = scene.clip(0, 255).astype(np.uint8)
    door_x = int(rng.integers(0, w // 5))
    cv2.rectangle(scene, (door_x, int(h * 0.12)), (door_x + w // 6, h), tuple(int(v) for v in rng.integers(60, 130, 3)), -1)
    shelf_y = int(h * rng.uniform(0.25, 0.35))
    cv2.rectangle(scene, (int(w * 0.7), shelf_y), (w, shelf_y + 8), (70, 80, 95), -1)
    for i in range(6):
        x0 = int(w * 0.72) + i * 24
        book = tuple(int(v) for v in rng.integers(30, 220, 3))
        cv2.rectangle(scene, (x0, shelf_y - int(rng.integers(30, 60))), (x0 + 18, shelf_y), book, -1)
    frame_x = int(w * rng.uniform(0.62, 0.72))
    cv2.rectangle(scene, (frame_x, int(h * 0.5)), (frame_x + 110, int(h * 0.7)), (40, 40, 40), 4)
    picture = tuple(int(v) for v in rng.integers(80, 200, 3))
    cv2.rectangle(scene, (frame_x + 6, int(h * 0.5) + 6), (frame_x + 104, int(h * 0.7) - 6), picture, -1)
    noise = rng.normal(0.0, 3.0, scene.shape).astype(np.float32)
    wall: Image = np.clip(scene.astype(np.float32) + noise, 0, 255).astype(np.uint8)
    return wall


def sensor_noise(image: Image, seed: int, sigma: float = 2.0) -> Image:
    """Per-frame camera noise (deterministic by ``seed``) so consecutive frames differ as a
    real camera's do."""
    rng = np.random.default_rng(seed)
    noisy = image.astype(np.float32) + rng.normal(0.0, sigma, image.shape).astype(np.float32)
    return np.clip(noisy, 0, 255).astype(np.uint8)
