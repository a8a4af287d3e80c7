"""``humaine-env broker``: serve the embedded MQTT broker in the foreground.

For a venue without mosquitto: start this on one machine and point every worker's
``[broker] url`` at it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading

from workers.runtime.broker import NOT_PERSISTENT, EmbeddedBroker, broker_answers, parse_broker_url
from workers.runtime.config import Config
from workers.runtime.worker import EXIT_UNAVAILABLE, install_stop_signals, wait_for_stop

log = logging.getLogger(__name__)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, help="port to listen on (default: the port of [broker] url)")
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on (0.0.0.0 to serve other machines)")


def _serves_loopback(bind: str) -> bool:
    return bind in ("", "0.0.0.0", "::", "localhost") or bind.startswith("127.")


def main(args: argparse.Namespace, config: Config) -> int:
    port = args.port or parse_broker_url(config.broker.url).port
    # a broker already serving this machine's port is worth saying so (binding a specific
    # other address would fail by itself, and that address is not ours to probe)
    if _serves_loopback(args.bind) and broker_answers(parse_broker_url(f"mqtt://127.0.0.1:{port}")):
        print(f"humaine-env broker: an MQTT broker already answers on 127.0.0.1:{port}; use it, or choose another --port",
              file=sys.stderr)
        return EXIT_UNAVAILABLE
    broker = EmbeddedBroker(port, host=args.bind, username=config.broker.username, password=config.broker.password)
    try:
        broker.start()
    except RuntimeError as exc:
        print(f"humaine-env broker: {exc} (is {args.bind}:{port} taken, or not an address of this machine?)", file=sys.stderr)
        return EXIT_UNAVAILABLE
    print(f"embedded MQTT broker listening on {broker.address.url}  (Ctrl-C stops it)", flush=True)
    log.warning("%s", NOT_PERSISTENT)
    stop = threading.Event()
    install_stop_signals(stop.set)
    wait_for_stop(stop)
    broker.stop()
    return 0
