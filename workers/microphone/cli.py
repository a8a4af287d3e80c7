"""``humaine-env microphone``: run the microphone worker (speech or typed lines → transcripts)."""

from __future__ import annotations

import argparse
import sys

from workers.microphone.settings import MicrophoneSettings
from workers.runtime.config import Config
from workers.runtime.setting_flags import setting_flag


def configure_parser(parser: argparse.ArgumentParser) -> None:
    setting_flag(parser, "--source", MicrophoneSettings, "source")
    setting_flag(parser, "--typed", MicrophoneSettings, "typed")
    setting_flag(parser, "--engine", MicrophoneSettings, "engine")
    setting_flag(parser, "--vosk-model", MicrophoneSettings, "vosk_model")
    # The flag turns the key off; the key's sentence says what it does when on.
    setting_flag(parser, "--no-biasing", MicrophoneSettings, "biasing", const=False,
                 help="do not bias recognition towards the negotiation vocabulary")
    parser.add_argument("--speed", type=float, help="replay speed factor for replay: sources (default real time)")


def main(args: argparse.Namespace, config: Config) -> int:
    from hardware.clock import Clock, VirtualClock
    from workers.microphone.engines import load_recognizer
    from workers.microphone.recognizer import EngineUnavailable
    from workers.microphone.worker import MicrophoneWorker, types_for_want_of_a_device
    from workers.runtime.config import ConfigError
    from workers.runtime.worker import EXIT_CONFIG, EXIT_UNAVAILABLE, run_worker

    try:
        settings = config.section(MicrophoneSettings)
    except ConfigError as exc:
        print(f"humaine-env microphone: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    recognizer = None
    if not settings.typed and not types_for_want_of_a_device(settings):
        try:  # load before connecting, so a missing model is one line, not a status loop
            recognizer = load_recognizer(settings, config.core.data_dir, config.core.avatars)
        except EngineUnavailable as exc:
            print(f"humaine-env microphone: {exc}", file=sys.stderr)
            return EXIT_UNAVAILABLE
    clock: Clock | None = VirtualClock(speed=args.speed) if args.speed else None
    return run_worker(MicrophoneWorker(config, clock=clock, recognizer=recognizer))
