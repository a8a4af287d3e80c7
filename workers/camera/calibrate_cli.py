"""``humaine-env calibrate``: look at each avatar, then away; the directions go into the config."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workers.camera.settings import CameraSettings
from workers.runtime.config import DEFAULT_CONFIG_FILE, Config
from workers.runtime.setting_flags import setting_flag


def configure_parser(parser: argparse.ArgumentParser) -> None:
    setting_flag(parser, "--source", CameraSettings, "source")
    setting_flag(parser, "--seconds", CameraSettings, "calibrate_s")
    # The key's docstring continues calibrate_s's ("...after this many seconds"): not a sentence alone.
    setting_flag(parser, "--settle", CameraSettings, "calibrate_settle_s", help="seconds skipped at the start of each phase")
    parser.add_argument(
        "--output", metavar="PATH", help="TOML file to write (default: the --config file or ./humaine-env.toml)"
    )
    parser.add_argument("--no-prompt", action="store_true", help="do not wait for Enter between phases")


def main(args: argparse.Namespace, config: Config) -> int:
    from hardware.video import NoCameraError, VideoSourceError, frames, open_source
    from workers.camera.calibration import AWAY, CalibrationError, derive, measure_phase, save, seat_of
    from workers.camera.pipeline import CameraPipeline
    from workers.runtime.worker import EXIT_UNAVAILABLE

    settings = config.section(CameraSettings)
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
                input(f"Look {what} and press Enter, then hold still for {settings.calibrate_s:g} s ... ")
            else:
                print(f"Look {what} for {settings.calibrate_settle_s + settings.calibrate_s:g} s")
            result = measure_phase(name, stream, pipeline, settings.calibrate_s, settings.calibrate_settle_s)
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
