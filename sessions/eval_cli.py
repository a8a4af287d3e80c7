"""``humaine-env eval SESSION...``: replay sessions with ground truth and print one JSON line:
addressee accuracy (overall, gaze-only, name), yaw/pitch MAE, WER per engine and, with
``--speed``, end-to-end latency p50/p95 (speech end -> message delivered).

Each session is checked first (:mod:`sessions.coverage`): a part missing, unreadable or cut
short is one line on stderr and the coverage of every part is in the JSON; unreadable media
are left out of the replay; a session without readable ground truth, or without any readable
media, stops the evaluation with one line (status 1)."""

from __future__ import annotations

import argparse
import json
import sys

from workers.microphone.settings import ENGINE_CHOICES
from workers.runtime.config import Config, ConfigError


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sessions", nargs="+", help="session folders with truth.json")
    parser.add_argument("--engine", action="append", choices=[e for e in ENGINE_CHOICES if e != "auto"], default=[],
                        help="speech engine to score (repeatable; default: [microphone] engine)")
    parser.add_argument("--speed", type=float, default=None,
                        help="paced replay (1 = real time; gives latency figures); default: as fast as possible")
    parser.add_argument("--mistakes", action="store_true",
                        help="keep the lists of wrongly addressed utterances and of bystanders' words passed on")


def main(args: argparse.Namespace, config: Config) -> int:
    """The command, with MediaPipe's and OpenCV's native start-up lines kept off the console."""
    from workers.runtime.native_chatter import native_chatter_filtered

    with native_chatter_filtered():
        return _main(args, config)


def _main(args: argparse.Namespace, config: Config) -> int:
    from formats.session_files import AUDIO_FILE, VIDEO_FILE
    from sessions.coverage import check
    from sessions.evaluate import evaluate
    from sessions.format import TRUTH_FILE, Session, SessionFormatError
    from sessions.replay import ReplayError
    from workers.runtime.broker import broker_for

    try:
        sessions = [Session(p) for p in args.sessions]
        unrecorded = [str(s.path) for s in sessions if not s.info.audio and s.info.camera is None]
        if unrecorded:  # a round typed at the keyboard with no camera: its parts are not "missing"
            print(f"humaine-env eval: cannot evaluate {', '.join(unrecorded)}: it holds no audio or video (the bus "
                  "traffic of a round: typed input, or recorded by run), so there is nothing to replay", file=sys.stderr)
            return 1
        coverage = [check(s) for s in sessions]
        for report in coverage:
            for line in report.problems:
                print(f"humaine-env eval: {line}", file=sys.stderr)
        unusable = [f"{c.session} (no readable {TRUTH_FILE}: write one with `humaine-env label {c.session}`)"
                    for c in coverage if not c.usable(TRUTH_FILE)]
        unusable += [f"{c.session} (no readable media)" for c in coverage
                     if not c.usable(AUDIO_FILE) and not c.usable(VIDEO_FILE)]
        if unusable:
            print(f"humaine-env eval: cannot evaluate {', '.join(unusable)}", file=sys.stderr)
            return 1
        with broker_for(config) as (config, _embedded):
            summary = evaluate(sessions, config, engines=args.engine or [None], speed=args.speed, coverage=coverage)
    except (SessionFormatError, ReplayError, ConfigError) as exc:
        print(f"humaine-env eval: {exc}", file=sys.stderr)
        return exc.exit_code if isinstance(exc, ReplayError) else 1
    if not args.mistakes:
        summary.pop("mistakes", None)
        summary.pop("bystanders_passed", None)
    print(json.dumps(summary))
    return 0
