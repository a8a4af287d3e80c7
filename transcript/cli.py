"""``humaine-env transcript``: run the Rich Transcript worker."""

from __future__ import annotations

import argparse
import sys

from transcript.settings import TranscriptSettings
from workers.runtime.config import Config, OrchestratorSettings
from workers.runtime.setting_flags import setting_flag


def configure_parser(parser: argparse.ArgumentParser) -> None:
    setting_flag(parser, "--eo-url", OrchestratorSettings, "url")
    setting_flag(parser, "--app-settings", OrchestratorSettings, "app_settings", metavar="PATH")
    setting_flag(parser, "--delivery", TranscriptSettings, "delivery")
    setting_flag(parser, "--agent", TranscriptSettings, "agent_urls", metavar="NAME=URL")
    setting_flag(parser, "--round-id", TranscriptSettings, "round_id")
    setting_flag(parser, "--merge-gap", TranscriptSettings, "merge_gap_s", metavar="SECONDS")
    setting_flag(parser, "--ttl", TranscriptSettings, "ttl_s", metavar="SECONDS")
    setting_flag(parser, "--session-dir", TranscriptSettings, "session_dir", metavar="DIR")
    parser.add_argument("--worker-id", default=None, help="MQTT client / status id (default: transcript)")


def main(args: argparse.Namespace, config: Config) -> int:
    from humaine_platform.service_map import ServiceMapError
    from transcript.worker import TranscriptWorker
    from workers.runtime.worker import EXIT_CONFIG, run_worker

    try:
        worker = TranscriptWorker(config, worker_id=args.worker_id)
    except (ServiceMapError, ValueError, OSError) as exc:
        print(f"humaine-env transcript: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    return run_worker(worker)
