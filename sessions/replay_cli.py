"""``humaine-env replay SESSION``: feed a recorded session through the real workers.

Prints one JSON line per outgoing message (text, addressee, how it was decided, outcome) and a
closing summary line; ``--speed 1`` replays in real time, the default as fast as possible
(deterministic). Uses the configured MQTT broker, or the embedded one when none answers on this
machine (``[broker] mode = "auto"``).
"""

from __future__ import annotations

import argparse
import json
import sys

from workers.runtime.config import Config, ConfigError


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", help="session folder (with session.json)")
    parser.add_argument("--speed", type=float, default=None,
                        help="replay speed factor on a virtual clock (1 = real time); default: as fast as possible")
    parser.add_argument("--engine", choices=["vosk", "pocketsphinx"], help="speech engine (default: [microphone] engine)")


def main(args: argparse.Namespace, config: Config) -> int:
    """The command, with MediaPipe's and OpenCV's native start-up lines kept off the console."""
    from workers.runtime.native_chatter import native_chatter_filtered

    with native_chatter_filtered():
        return _main(args, config)


def _main(args: argparse.Namespace, config: Config) -> int:
    from sessions.format import Session, SessionFormatError
    from sessions.replay import ReplayError, replay
    from workers.runtime.broker import broker_for

    try:
        session = Session(args.session)
        with broker_for(config) as (config, _embedded):
            result = replay(session, config, speed=args.speed, engine=args.engine)
    except (SessionFormatError, ReplayError, ConfigError) as exc:
        print(f"humaine-env replay: {exc}", file=sys.stderr)
        return exc.exit_code if isinstance(exc, ReplayError) else 1
    for env in result.messages:
        m = env["message"]
        print(json.dumps({"text": m.get("text"), "addressee": m.get("addressee"), "source": m.get("addresseeSource"),
                          "start": m.get("utteranceStart"), "end": m.get("utteranceEnd"), "outcome": env.get("outcome")}))
    print(json.dumps({"session": str(session.path), "messages": len(result.messages),
                      "session_s": session.info.duration_ms / 1000, "wall_s": round(result.wall_s, 1)}))
    return 0
