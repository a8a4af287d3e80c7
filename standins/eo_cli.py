"""``humaine-env orchestrator``: the stand-in Environment Orchestrator."""

from __future__ import annotations

import argparse
import sys

from standins.eo.settings import StandinSettings
from workers.runtime.config import Config
from workers.runtime.setting_flags import setting_flag


def configure_parser(parser: argparse.ArgumentParser) -> None:
    setting_flag(parser, "--host", StandinSettings, "host")
    # The docstrings of port, round_s and warm_up_s continue the key before theirs ("...and its
    # port", "...its negotiation,"), and auto_round's points at this flag: each flag says it here.
    setting_flag(parser, "--port", StandinSettings, "port", help="port to listen on (the platform EO's)")
    setting_flag(parser, "--rules", StandinSettings, "rules")
    setting_flag(parser, "--auto-round", StandinSettings, "auto_round",
                 help="initialize and start a round with the agents and human-side service of [standin]")
    setting_flag(parser, "--round-seconds", StandinSettings, "round_s", metavar="S", help="negotiation length of --auto-round")
    setting_flag(parser, "--warm-up-seconds", StandinSettings, "warm_up_s", metavar="S", help="warm-up length of --auto-round")


def main(args: argparse.Namespace, config: Config) -> int:
    from standins.eo.server import ServerError
    from standins.eo.worker import StandinWorker
    from workers.runtime.worker import EXIT_UNAVAILABLE, run_worker

    try:
        worker = StandinWorker(config)
    except ServerError as exc:
        print(f"humaine-env orchestrator: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    print(f"humaine-env orchestrator: stand-in EO on {worker.server.url}", flush=True)
    return run_worker(worker)
