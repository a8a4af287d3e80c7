"""The pure parts of choosing audio devices: matching a name against the sound server's devices,
the device records, the formats PortAudio's capture falls back to."""

from __future__ import annotations

import pytest

from hardware.audio_live import InputDevice, stream_formats
from hardware.audio_pulse import CaptureTimes
from hardware.sound_server import SoundDevice, match_device

MIC = SoundDevice("alsa_input.usb-Blue_Yeti-00.analog-stereo", "Yeti Stereo Microphone Analog Stereo", "source", 48_000, 2,
                  default=True)
ROOM = SoundDevice("room_mic", "Room microphone", "source", 48_000, 2, default=False)
MONITOR = SoundDevice("room_speaker.monitor", "Monitor of Room speaker", "source", 48_000, 2, default=False,
                      monitor_of="room_speaker")
SOURCES = [MIC, ROOM, MONITOR]


@pytest.mark.parametrize(("wanted", "found"), [
    ("room_mic", ROOM),                      # the exact name
    ("ROOM_MIC", ROOM),                      # not exact: the first containing it, case-insensitive
    ("yeti", MIC),                           # part of the description
    ("room", ROOM),                          # several contain it: the first listed
    ("room_speaker.monitor", MONITOR),       # a monitor by its name
    ("  room_mic ", ROOM),
    ("webcam", None),
    ("", None),
])
def test_a_name_matches_exactly_first_then_by_part(wanted: str, found: SoundDevice | None) -> None:
    assert match_device(SOURCES, wanted) == found


def test_an_exact_name_wins_over_an_earlier_partial_one() -> None:
    longer = SoundDevice("room_mic_2", "Second room microphone", "source", 16_000, 1, default=False)
    assert match_device([longer, ROOM], "room_mic") == ROOM


def test_a_device_says_whether_it_is_a_monitor_and_prints_as_json() -> None:
    assert MONITOR.is_monitor and not ROOM.is_monitor
    assert MONITOR.as_dict() == {"name": "room_speaker.monitor", "description": "Monitor of Room speaker", "kind": "source",
                                 "rate": 48_000, "channels": 2, "default": False, "monitor_of": "room_speaker",
                                 "monitor": True}


def _device(rate: float, channels: int) -> InputDevice:
    return {"index": 3, "name": "USB Audio", "hostapi": "ALSA", "channels": channels, "default_samplerate": rate,
            "default": False}


def test_portaudio_formats_go_from_no_conversion_to_the_devices_own() -> None:
    assert stream_formats(_device(48_000, 2)) == [(16_000, 1), (48_000, 1), (48_000, 2)]
    assert stream_formats(_device(44_100, 4)) == [(16_000, 1), (44_100, 1), (44_100, 2), (44_100, 4)]
    assert stream_formats(_device(16_000, 1)) == [(16_000, 1)]


def test_capture_times_follow_the_samples_through_a_burst_of_reads() -> None:
    times = CaptureTimes(20)
    assert times.stamp(10_000, 5.0) == 9_975  # read at 10 000 ms: 20 ms of audio that waited 5 ms
    assert times.stamp(10_020, 5.0) == 9_995
    # a stall, then five blocks read at once: they still follow each other 20 ms apart
    burst = [times.stamp(10_200, 5.0) for _ in range(5)]
    assert burst == [10_015, 10_035, 10_055, 10_075, 10_095]


def test_capture_times_count_through_a_burst_at_the_start_and_resync_when_far_off() -> None:
    times = CaptureTimes(20)
    assert times.stamp(10_000, 0.0) == 9_980
    # what the source held arrives at once: counted on, ahead of the clock, up to a second
    assert [times.stamp(10_001, 0.0) for _ in range(3)] == [10_000, 10_020, 10_040]
    assert times.stamp(12_000, 0.0) == 11_980  # lagging the clock by over a second: audio was lost
    assert times.stamp(12_020, 0.0) == 12_000
    times.stamp(12_020, 0.0)
    assert [times.stamp(10_000, 0.0) for _ in range(2)] == [9_980, 10_000]  # the clock went back: follow it

