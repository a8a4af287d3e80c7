"""``humaine-env calibrate``: look at each avatar, then away; the directions go into the config."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workers.camera.settings import SOURCE_HELP
from workers.runtime.config import DEFAULT_CONFIG_FILE, Config


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", help=SOURCE_HELP)
    parser.add_argument("--seconds", type=float, help="measuring time per phase (default: [camera] calibrate_s)")
    parser.add_argument("--settle", type=float,
                        help="seconds skipped at the start of each phase (default: [camera] calibrate_settle_s)")
    parser.add_argument(
        "--output", metavar="PATH", help="TOML file to write (default: the --config file or ./humaine-env.toml)"
    )
    parser.add_argument("--no-prompt", action="store_true", help="do not wait for Enter between phases")


def main(args: argparse.Namespace, config: Config) -> int:
    from hardware.video import NoCameraError, VideoSourceError, frames, open_source
    from workers.camera.calibration import AWAY, CalibrationError, derive, measure_phase, save, seat_of
    from workers.camera.pipeline import CameraPipeline
    from workers.camera.settings import CameraSettings
    from workers.runtime.worker import EXIT_UNAVAILABLE

    if args.source:
        config = config.with_overrides({"camera.source": args.source})
    settings = config.section(CameraSettings)
    args.seconds = settings.calibrate_s if args.seconds is None else args.seconds
    args.settle = settings.calibrate_settle_s if args.settle is None else args.settle
    output = Path(args.output or config.path or DEFAULT_CONFIG_FILE)
    interactive = not args.no_prompt and sys.stdin.isatty()
    try:
        source = open_source(settings.source, settings.width, settings.height, settings.fps)
    except VideoSourceError as exc:
        print(f"humaine-env calibrate: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE if isinstance(exc, NoCameraError) else 1
    pipeline = CameraPipeline(settings)
    phases = []
    try:
        stream = frames(source)
        for name in [*config.core.avatars, AWAY]:
            what = f"at {name}" if name != AWAY else "away from both avatars (e.g. at the table)"
            if interactive:
                input(f"Look {what} and press Enter, then hold still for {args.seconds:g} s ... ")
            else:
                print(f"Look {what} for {args.settle + args.seconds:g} s")
            result = measure_phase(name, stream, pipeline, args.seconds, args.settle)
            print(f"  {name}: yaw {result.yaw:+.1f}, pitch {result.pitch:+.1f} "
                  f"({result.samples} frames, spread {result.spread_deg:.1f} deg)")
            phases.append(result)
    except CalibrationError as exc:
        print(f"humaine-env calibrate: {exc}", file=sys.stderr)
        return 1
    finally:
        source.close()
        pipeline.close()
    targets, tolerance = derive(phases)
    seat = seat_of(phases)
    save(output, targets, tolerance, seat)
    where = f", the buyer's seat (face at x {seat.x:.2f}, y {seat.y:.2f}, width {seat.width:.2f})" if seat else ""
    print(f"saved {', '.join(targets)}, tolerance {tolerance:g} deg{where} to {output}")
    return 0
