"""``humaine-env demo-agents``: Celia and Watson as small rule-based sellers."""

from __future__ import annotations

import argparse
import sys

from workers.runtime.config import Config


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--agent", action="append", default=[], metavar="NAME=PORT",
        help="a seller and its port (repeatable; default Celia=14007 Watson=14008)",
    )
    parser.add_argument("--eo-url", help="where replies go (default: the [eo] address, http://127.0.0.1:14010)")


def _agents(items: list[str]) -> dict[str, int]:
    agents: dict[str, int] = {}
    for item in items:
        name, sep, port = item.partition("=")
        if not sep or not name or not port.isdigit():
            raise ValueError(f"--agent expects NAME=PORT, got {item!r}")
        agents[name] = int(port)
    return agents


def main(args: argparse.Namespace, config: Config) -> int:
    from orchestrator_client.service_map import ServiceMapError
    from orchestrator_client.serving import ServerError
    from standins.demo_agents.worker import DemoAgentsWorker
    from workers.runtime.worker import EXIT_CONFIG, EXIT_UNAVAILABLE, run_worker

    overrides: dict[str, object] = {}
    try:
        if args.agent:
            overrides["demo_agents.agents"] = _agents(args.agent)
    except ValueError as exc:
        print(f"humaine-env demo-agents: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if args.host:
        overrides["demo_agents.host"] = args.host
    if args.eo_url:
        overrides["demo_agents.eo_url"] = args.eo_url
    if overrides:
        config = config.with_overrides(overrides)
    try:
        worker = DemoAgentsWorker(config)
    except (ServerError, ServiceMapError) as exc:
        print(f"humaine-env demo-agents: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    listing = ", ".join(f"{name} on {url}" for name, url in worker.sellers.urls.items())
    print(f"humaine-env demo-agents: {listing}; replies to {worker.sellers.eo_url}", flush=True)
    return run_worker(worker)
