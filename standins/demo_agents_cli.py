"""``humaine-env demo-agents``: Celia and Watson as small rule-based sellers."""

from __future__ import annotations

import argparse
import sys

from standins.demo_agents.settings import DemoAgentsSettings
from workers.runtime.config import Config
from workers.runtime.setting_flags import setting_flag


def configure_parser(parser: argparse.ArgumentParser) -> None:
    setting_flag(parser, "--host", DemoAgentsSettings, "host")
    setting_flag(parser, "--agent", DemoAgentsSettings, "agents", metavar="NAME=PORT")
    setting_flag(parser, "--eo-url", DemoAgentsSettings, "eo_url")


def main(args: argparse.Namespace, config: Config) -> int:
    from humaine_platform.service_map import ServiceMapError
    from standins.demo_agents.worker import DemoAgentsWorker
    from workers.runtime.http.serving import ServerError
    from workers.runtime.worker import EXIT_UNAVAILABLE, run_worker

    try:
        worker = DemoAgentsWorker(config)
    except (ServerError, ServiceMapError) as exc:
        print(f"humaine-env demo-agents: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    listing = ", ".join(f"{name} on {url}" for name, url in worker.sellers.urls.items())
    print(f"humaine-env demo-agents: {listing}; replies to {worker.sellers.eo_url}", flush=True)
    return run_worker(worker)
