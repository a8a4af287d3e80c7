"""``humaine-env transcript``: run the Rich Transcript worker."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--eo-url", help="EO base URL (sets [eo] url), e.g. http://127.0.0.1:14010")
    parser.add_argument("--app-settings", metavar="PATH", help="HUMAINE appSettings.json with a serviceMap")
    parser.add_argument("--delivery", choices=["eo", "agents"], help="relay via the EO (default) or to each agent")
    parser.add_argument(
        "--agent", action="append", default=[], metavar="NAME=URL",
        help="agent address for --delivery agents (repeatable)",
    )
    parser.add_argument("--round-id", help="relay with this roundId whatever the round state says")
    parser.add_argument("--merge-gap", type=float, metavar="SECONDS", help="merge finals closer than this")
    parser.add_argument("--ttl", type=float, metavar="SECONDS", help="drop messages not delivered within this")
    parser.add_argument("--session-dir", metavar="DIR", help="where the JSONL session logs go")
    parser.add_argument("--worker-id", default=None, help="MQTT client / status id (default: transcript)")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if args.eo_url:
        values["eo.url"] = args.eo_url
    if args.app_settings:
        values["eo.app_settings"] = args.app_settings
    if args.delivery:
        values["transcript.delivery"] = args.delivery
    if args.agent:
        agents: dict[str, str] = {}
        for item in args.agent:
            name, sep, url = item.partition("=")
            if not sep or not name or not url:
                raise ValueError(f"--agent expects NAME=URL, got {item!r}")
            agents[name] = url
        values["transcript.agent_urls"] = agents
    if args.round_id is not None:
        values["transcript.round_id"] = int(args.round_id) if args.round_id.isdigit() else args.round_id
    if args.merge_gap is not None:
        values["transcript.merge_gap_s"] = args.merge_gap
    if args.ttl is not None:
        values["transcript.ttl_s"] = args.ttl
    if args.session_dir:
        values["transcript.session_dir"] = args.session_dir
    return values


def main(args: argparse.Namespace, config: Any) -> int:
    from orchestrator_client.service_map import ServiceMapError
    from transcript.worker import TranscriptWorker
    from workers.runtime.worker import EXIT_CONFIG, run_worker

    try:
        worker = TranscriptWorker(config.with_overrides(_overrides(args)), worker_id=args.worker_id)
    except (ServiceMapError, ValueError, OSError) as exc:
        print(f"humaine-env transcript: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    return run_worker(worker)
