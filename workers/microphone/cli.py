"""``humaine-env mic``: run the microphone worker (speech or typed lines → transcripts)."""

from __future__ import annotations

import argparse
import sys

from workers.microphone.settings import ENGINE_CHOICES
from workers.runtime.config import Config


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", help="wav:PATH | raw:PATH | replay:PATH | mic[:DEVICE] (default: mic)")
    parser.add_argument("--typed", action="store_true", help="read utterances typed on the console instead")
    parser.add_argument("--engine", choices=ENGINE_CHOICES, help="speech recognition engine")
    parser.add_argument("--vosk-model", help="folder of an unpacked Vosk model (or HUMAINE_ENV_VOSK_MODEL)")
    parser.add_argument("--no-biasing", action="store_true", help="do not bias towards the negotiation vocabulary")
    parser.add_argument("--speed", type=float, help="replay speed factor for replay: sources (default real time)")


def main(args: argparse.Namespace, config: Config) -> int:
    from hardware.clock import Clock, VirtualClock
    from workers.microphone.engines import load_recognizer
    from workers.microphone.recognizer import EngineUnavailable
    from workers.microphone.settings import MicrophoneSettings
    from workers.microphone.worker import MicrophoneWorker
    from workers.runtime.config import ConfigError
    from workers.runtime.worker import EXIT_CONFIG, EXIT_UNAVAILABLE, run_worker

    overrides: dict[str, object] = {}
    for flag, key in (("source", "source"), ("engine", "engine"), ("vosk_model", "vosk_model")):
        value = getattr(args, flag, None)
        if value:
            overrides[f"microphone.{key}"] = value
    if args.typed:
        overrides["microphone.typed"] = True
    if args.no_biasing:
        overrides["microphone.biasing"] = False
    if overrides:
        config = config.with_overrides(overrides)
    try:
        settings = config.section(MicrophoneSettings)
    except ConfigError as exc:
        print(f"humaine-env mic: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    recognizer = None
    if not settings.typed:
        try:  # load before connecting, so a missing model is one line, not a status loop
            recognizer = load_recognizer(settings, config.core.data_dir, config.core.avatars)
        except EngineUnavailable as exc:
            print(f"humaine-env mic: {exc}", file=sys.stderr)
            return EXIT_UNAVAILABLE
    clock: Clock | None = VirtualClock(speed=args.speed) if args.speed else None
    return run_worker(MicrophoneWorker(config, clock=clock, recognizer=recognizer))
