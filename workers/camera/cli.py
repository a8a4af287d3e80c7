"""``humaine-env camera``: run the camera worker (head pose -> addressee on MQTT)."""

from __future__ import annotations

import argparse
import sys

from workers.camera.settings import CameraSettings
from workers.runtime.config import Config
from workers.runtime.setting_flags import setting_flag


def configure_parser(parser: argparse.ArgumentParser) -> None:
    setting_flag(parser, "--source", CameraSettings, "source")
    parser.add_argument(
        "--preview", nargs="?", const="", metavar="OUT.mp4",
        help="debug view: landmarks, pose axes and target, written to OUT.mp4 (or a window when no path is given)",
    )
    parser.add_argument("--speed", type=float, help="replay speed factor for replay: sources (default real time)")
    setting_flag(parser, "--mirrored", CameraSettings, "mirrored")


def main(args: argparse.Namespace, config: Config) -> int:
    """Runs until stopped (or until a file source ends). A webcam that is missing at start is
    one line, an ``error`` status, and :data:`EXIT_UNAVAILABLE` (the worker says so), so
    ``humaine-env run`` goes on without gaze; a camera lost later is an ``error`` status and
    retries inside the worker."""
    from hardware.clock import Clock, VirtualClock
    from workers.camera.preview import Preview
    from workers.camera.worker import CameraWorker
    from workers.runtime.worker import EXIT_CONFIG, run_worker

    config.section(CameraSettings)  # a configuration error is one line before anything starts
    clock: Clock | None = VirtualClock(speed=args.speed) if args.speed else None
    preview = None
    if args.preview is not None:
        try:
            preview = Preview(args.preview or None)
        except RuntimeError as exc:
            print(f"humaine-env camera: {exc}", file=sys.stderr)
            return EXIT_CONFIG
    return run_worker(CameraWorker(config, clock=clock, preview=preview, need_camera_at_start=True))
