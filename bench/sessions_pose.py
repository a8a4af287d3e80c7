"""Head-pose benchmark on rendered views of real faces at known pose.

Prints one JSON line: yaw/pitch mean absolute error (degrees) of the camera worker's estimator
over a grid of yaw in [-45, 45] and pitch in [-25, 25] for the corpus faces, labels from the
renderer (sessions.face_render). Targets: yaw MAE <= 5, pitch MAE <= 6. The top-level figures are
the worker's estimator (``kabsch``); each method asked for also has its own block (``pnp`` with
the renderer's exact field of view, for comparison).
Run: ``.venv/bin/python bench/sessions_pose.py [--faces astronaut,f1,f15] [--methods kabsch,pnp]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# run as `python bench/sessions_pose.py`: import the checkout's packages from its root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sessions.faces import FACES
from sessions.pose_grid import measure
from workers.camera.headpose import METHODS
from workers.camera.settings import CameraSettings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faces", default=",".join(FACES))
    # the worker's estimator (the [camera] method default) and the other one, for comparison
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args()
    methods = args.methods.split(",")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        parser.error(f"unknown method(s) {unknown}; choose from {', '.join(METHODS)}")
    started = time.perf_counter()
    faces = tuple(args.faces.split(","))
    results = {method: measure(faces, method=method).summary() for method in methods}  # type: ignore[arg-type]
    worker = results.get(CameraSettings().method, {})
    print(json.dumps({"bench": "sessions_pose", **worker, "methods": results, "seconds": round(time.perf_counter() - started, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
