"""``humaine-env eval SESSION...``: replay sessions with ground truth and print one JSON line:
addressee accuracy (overall, gaze-only, name), yaw/pitch MAE, WER per engine and, with
``--speed``, end-to-end latency p50/p95 (speech end -> message delivered)."""

from __future__ import annotations

import argparse
import json
import sys

from workers.config import Config, ConfigError
from workers.microphone.settings import ENGINE_CHOICES


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sessions", nargs="+", help="session folders with truth.json")
    parser.add_argument("--engine", action="append", choices=[e for e in ENGINE_CHOICES if e != "auto"], default=[],
                        help="speech engine to score (repeatable; default: [microphone] engine)")
    parser.add_argument("--speed", type=float, default=None,
                        help="paced replay (1 = real time; gives latency figures); default: as fast as possible")
    parser.add_argument("--mistakes", action="store_true", help="keep the list of wrongly addressed utterances")


def main(args: argparse.Namespace, config: Config) -> int:
    from sessions.evaluate import evaluate
    from sessions.format import Session, SessionFormatError
    from sessions.replay import ReplayError
    from workers.broker import broker_for

    try:
        sessions = [Session(p) for p in args.sessions]
        missing = [str(s.path) for s in sessions if s.truth() is None]
        if missing:
            print(f"humaine-env eval: no truth.json in {', '.join(missing)}", file=sys.stderr)
            return 1
        with broker_for(config) as (config, _embedded):
            summary = evaluate(sessions, config, engines=args.engine or [None], speed=args.speed)
    except (SessionFormatError, ReplayError, ConfigError) as exc:
        print(f"humaine-env eval: {exc}", file=sys.stderr)
        return 1
    if not args.mistakes:
        summary.pop("mistakes", None)
    print(json.dumps(summary))
    return 0
