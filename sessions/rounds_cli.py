"""``humaine-env record-rounds``: record every round as a session folder while the suite runs
(``run`` starts it unless ``[sessions] record_rounds = false``); see :mod:`sessions.rounds`."""

from __future__ import annotations

import argparse

from sessions.settings import SessionsSettings
from workers.runtime.config import Config
from workers.runtime.setting_flags import setting_flag


def configure_parser(parser: argparse.ArgumentParser) -> None:
    setting_flag(parser, "--folder", SessionsSettings, "folder", metavar="DIR")


def main(args: argparse.Namespace, config: Config) -> int:
    from sessions.rounds import RoundRecorder
    from workers.runtime.worker import run_worker

    return run_worker(RoundRecorder(config))
