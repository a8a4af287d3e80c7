"""``humaine-env record FOLDER``: record the devices (or any sources) and the bus traffic into a
session folder while the suite runs; Ctrl-C or SIGTERM stops it cleanly (``session.json`` is
written last).

With ``--perceive`` the camera and microphone workers run here on the recorded media (for
devices only one process can open); start the rest of the suite with
``humaine-env run --without camera,mic``.
"""

from __future__ import annotations

import argparse
import sys
import threading
from contextlib import nullcontext

from workers.runtime.config import Config


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="new session folder to write")
    parser.add_argument("--audio-source", metavar="SPEC",
                        help="mic[:DEVICE], wav:PATH, raw:PATH or replay:PATH (default: [microphone] source)")
    parser.add_argument("--video-source", metavar="SPEC",
                        help="webcam[:INDEX], video:PATH, images:DIR or replay:PATH (default: [camera] source)")
    parser.add_argument("--no-audio", action="store_true", help="record no audio")
    parser.add_argument("--no-video", action="store_true", help="record no video")
    parser.add_argument("--perceive", action="store_true",
                        help="also run the camera and microphone workers on the recorded media")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: until Ctrl-C)")
    parser.add_argument("--linger", type=float, default=5.0, metavar="S",
                        help="when file sources end, keep recording the bus this long (default 5)")


def main(args: argparse.Namespace, config: Config) -> int:
    from sessions.record import Recorder, RecordError, RecordUnavailable
    from workers.camera.settings import CameraSettings
    from workers.microphone.settings import MicrophoneSettings
    from workers.runtime.broker import broker_for
    from workers.runtime.worker import EXIT_UNAVAILABLE, install_stop_signals

    audio = None if args.no_audio else args.audio_source or config.section(MicrophoneSettings).source
    video = None if args.no_video else args.video_source or config.section(CameraSettings).source
    stop = threading.Event()
    install_stop_signals(stop.set)
    if args.duration is not None:
        timer = threading.Timer(args.duration, stop.set)
        timer.daemon = True
        timer.start()
    try:
        # the workers run here with --perceive: like replay and eval, start the embedded broker
        # when none answers (they would otherwise publish into nothing); without it the bus
        # being recorded is the suite's, which brings its own
        with broker_for(config) if args.perceive else nullcontext((config, None)) as (config, _started):
            recorder = Recorder(config, args.folder, audio, video, perceive=args.perceive, linger_s=args.linger)
            folder = recorder.run(stop)
    except RecordUnavailable as exc:
        print(f"humaine-env record: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except RecordError as exc:
        print(f"humaine-env record: {exc}", file=sys.stderr)
        return 1
    print(f"recorded {folder}: {recorder.frames} frames, "
          f"{recorder.audio.duration_ms / 1000 if recorder.audio else 0:.1f} s of audio, "
          f"{sum(recorder.counts.values())} bus messages")
    return 0
