"""``humaine-env devices``: the microphones, loudspeakers and cameras this machine offers, and
how to pick one.

The sound server's devices (PulseAudio / PipeWire) come first, by the names ``mic:NAME`` and
``soundcard:NAME`` take; PortAudio's inputs follow as the fallback list (what ``mic:INDEX``
opens, and all there is without a sound server).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from workers.runtime.config import Config

if TYPE_CHECKING:
    from hardware.sound_server import SoundDevice

NO_SERVER = "No sound server (PulseAudio / PipeWire) answers: only PortAudio's devices below."


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def _sound_server_lines(sources: Sequence[SoundDevice], sinks: Sequence[SoundDevice]) -> list[str]:
    def line(device: SoundDevice) -> str:
        mark = "*" if device.default else " "
        monitor = f", monitor: hears what {device.monitor_of} plays" if device.monitor_of else ""
        return f" {mark} {device.name}  {device.description}  ({device.channels} ch, {device.rate} Hz{monitor})"

    lines = ["Sound server microphones (use with: humaine-env mic --source mic:NAME; * = default)"]
    lines += [line(d) for d in sources] or ["  none"]
    lines.append("Sound server speakers (use with: humaine-env avatar --speaker soundcard:NAME; * = default)")
    lines += [line(d) for d in sinks] or ["  none"]
    return lines


def main(args: argparse.Namespace, config: Config) -> int:
    from hardware import sound_server
    from hardware.audio_sources import list_input_devices
    from hardware.video import list_cameras

    server = sound_server.server_reachable()
    sources = sound_server.list_sources() if server else []
    sinks = sound_server.list_sinks() if server else []
    microphones = list_input_devices()
    cameras = list_cameras()
    if args.json:
        print(json.dumps({
            "sound_server": server,
            "sources": [d.as_dict() for d in sources],
            "sinks": [d.as_dict() for d in sinks],
            "microphones": microphones,
            "cameras": cameras,
        }))
        return 0
    print("\n".join(_sound_server_lines(sources, sinks)) if server else NO_SERVER)
    print("PortAudio microphones (the fallback; use with: humaine-env mic --source mic:INDEX or mic:NAME)")
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
