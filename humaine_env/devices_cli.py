"""``humaine-env devices``: the microphones and cameras this machine offers, and how to pick one."""

from __future__ import annotations

import argparse
import json

from workers.runtime.config import Config


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def main(args: argparse.Namespace, config: Config) -> int:
    from hardware.audio_sources import list_input_devices
    from hardware.video import list_cameras

    microphones = list_input_devices()
    cameras = list_cameras()
    if args.json:
        print(json.dumps({"microphones": microphones, "cameras": cameras}))
        return 0
    print("Microphones (use with: humaine-env microphone --source mic:INDEX or mic:NAME)")
    if not microphones:
        print("  none found — the microphone worker falls back to typed input at a terminal (humaine-env microphone --typed)")
    for device in microphones:
        mark = "*" if device.get("default") else " "
        details = f"{device.get('channels', '?')} ch, {device.get('default_samplerate', '?')} Hz, {device.get('hostapi', '')}"
        print(f" {mark}{device['index']:>3}  {device['name']}  ({details})")
    print("Cameras (use with: humaine-env camera --source webcam:INDEX)")
    if not cameras:
        print("  none found — the suite runs without gaze; addressees then come from spoken names")
    for camera in cameras:
        print(f"  {camera['index']:>3}  {camera['name']}  ({camera['width']}x{camera['height']} @ {camera['fps']:.0f} fps)")
    return 0
