"""``humaine-env orchestrator``: the stand-in Environment Orchestrator."""

from __future__ import annotations

import argparse
import sys

from workers.runtime.config import Config


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1; [standin] host)")
    parser.add_argument("--port", type=int, help="port to listen on (default 14010, the EO's; [standin] port)")
    parser.add_argument(
        "--rules", choices=("real_eo", "documented", "current_eo"),
        help="real_eo (default): judge and answer as the platform EO does; documented: R0-R4 as written; "
             "current_eo: the documented rules with the current EO's thresholds",
    )
    parser.add_argument(
        "--auto-round", action="store_true",
        help="initialize and start a round with the agents and human-side service of [standin]",
    )
    parser.add_argument("--round-seconds", type=float, metavar="S", help="negotiation length of --auto-round")
    parser.add_argument("--warm-up-seconds", type=float, metavar="S", help="warm-up length of --auto-round")


def main(args: argparse.Namespace, config: Config) -> int:
    from standins.eo.server import ServerError
    from standins.eo.worker import StandinWorker
    from workers.runtime.worker import EXIT_UNAVAILABLE, run_worker

    overrides: dict[str, object] = {}
    for flag, key in (
        ("host", "host"),
        ("port", "port"),
        ("rules", "rules"),
        ("round_seconds", "round_s"),
        ("warm_up_seconds", "warm_up_s"),
    ):
        value = getattr(args, flag)
        if value is not None:
            overrides[f"standin.{key}"] = value
    if overrides:
        config = config.with_overrides(overrides)
    try:
        worker = StandinWorker(config, auto_start_round=args.auto_round)
    except ServerError as exc:
        print(f"humaine-env orchestrator: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    print(f"humaine-env orchestrator: stand-in EO on {worker.server.url}", flush=True)
    return run_worker(worker)
