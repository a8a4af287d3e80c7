"""``humaine-env avatar``: the Avatar Controller (the EO's human-side service)."""

from __future__ import annotations

import argparse
import sys

from avatar.settings import AvatarSettings
from workers.runtime.config import Config
from workers.runtime.setting_flags import setting_flag


def configure_parser(parser: argparse.ArgumentParser) -> None:
    setting_flag(parser, "--host", AvatarSettings, "host")
    setting_flag(parser, "--port", AvatarSettings, "port")
    setting_flag(parser, "--speaker", AvatarSettings, "speaker", metavar="SPEC")
    setting_flag(parser, "--confirm", AvatarSettings, "confirm_accept")
    parser.add_argument("--list-voices", action="store_true", help="print every speech engine's voices and exit")


def main(args: argparse.Namespace, config: Config) -> int:
    from avatar.server import ServerError
    from hardware.speaker import SpeakerError, list_voices
    from workers.runtime.worker import EXIT_UNAVAILABLE

    if args.list_voices:
        try:
            voices = list_voices()
        except SpeakerError as exc:
            print(f"humaine-env avatar: {exc}", file=sys.stderr)
            return EXIT_UNAVAILABLE
        from hardware.tts_festival import installed_voices
        from hardware.tts_piper import installed_packaged_voices

        print("festival (engine = \"festival\"):", ", ".join(installed_voices()) or "none installed")
        print("piper (engine = \"piper\"):", ", ".join(installed_packaged_voices()) or "none installed",
              "(or a path to a .onnx voice)")
        print("espeak-ng (engine = \"espeak\"):")
        for voice in voices:
            print(f"  {voice.id:32} {voice.gender or '':7} {voice.name}")
        print("  variants: add +f1..+f5 (female) or +m1..+m7 (male) to a voice, e.g. en-us+f3")
        return 0

    from avatar.worker import AvatarWorker
    from workers.runtime.worker import run_worker

    try:
        worker = AvatarWorker(config)
    except (SpeakerError, ServerError) as exc:
        print(f"humaine-env avatar: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    try:
        return run_worker(worker)
    except (SpeakerError, ServerError) as exc:
        print(f"humaine-env avatar: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
