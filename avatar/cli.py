"""``humaine-env avatar``: the Avatar Controller (the EO's human-side service)."""

from __future__ import annotations

import argparse
import sys

from workers.runtime.config import Config


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 7040)")
    parser.add_argument(
        "--speaker", metavar="SPEC",
        help="auto (default: the sound card, or WAV files under data_dir/speech when there is none), "
             "soundcard, soundcard:DEVICE, wav:DIR (one WAV per utterance, paced like a sound card), wav-fast:DIR "
             "or browser (the display page plays the speech); several joined by + (browser+wav:DIR)",
    )
    from avatar.settings import CONFIRM_MODES

    parser.add_argument("--confirm", choices=CONFIRM_MODES,
                        help="who answers a seller's Accept (/confirmAccept): the buyer (default, on /buyer or by voice), "
                             "the operator, nobody (auto), or the platform's competition-ui beside this service")
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

    overrides: dict[str, object] = {}
    for flag, key in (("host", "host"), ("port", "port"), ("speaker", "speaker"), ("confirm", "confirm_accept")):
        value = getattr(args, flag)
        if value is not None:
            overrides[f"avatar.{key}"] = value
    if overrides:
        config = config.with_overrides(overrides)

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
