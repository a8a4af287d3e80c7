"""``humaine-env record-rounds``: record every round as a session folder while the suite runs
(``run`` starts it unless ``[sessions] record_rounds = false``); see :mod:`sessions.rounds`."""

from __future__ import annotations

import argparse

from workers.runtime.config import Config


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--folder", metavar="DIR", help="where the rounds go (sets [sessions] folder; default: data_dir/sessions)")


def main(args: argparse.Namespace, config: Config) -> int:
    from sessions.rounds import RoundRecorder
    from workers.runtime.worker import run_worker

    if args.folder:
        config = config.with_overrides({"sessions.folder": args.folder})
    return run_worker(RoundRecorder(config))
