"""Without a microphone to hear, ``humaine-env mic`` takes typed lines and loads no speech
engine first (a second of CPU and a slower start on every laptop ``run``)."""

from __future__ import annotations

import pytest

from workers.microphone import worker
from workers.microphone.settings import MicrophoneSettings

A_DEVICE = {"index": 0, "name": "USB microphone", "hostapi": "ALSA", "channels": 1, "default_samplerate": 48000.0, "default": True}


@pytest.mark.parametrize(
    ("source", "typed_fallback", "devices", "types"),
    [
        ("mic", True, [], True),  # a laptop without a microphone: typed lines
        ("mic:USB", True, [], True),
        ("mic", True, [A_DEVICE], False),  # a microphone to hear: the engine loads first
        ("mic", False, [], False),  # no fallback: the worker reports the missing device and waits for one
        ("wav:/tmp/take.wav", True, [], False),  # a file is heard whatever the machine has
        ("replay:/tmp/session", True, [], False),
    ],
)
def test_typed_for_want_of_a_device_only_when_a_missing_device_would_be_typed_for(
    monkeypatch: pytest.MonkeyPatch, source: str, typed_fallback: bool, devices: list[dict[str, object]], types: bool
) -> None:
    monkeypatch.setattr(worker, "list_input_devices", lambda: devices)
    settings = MicrophoneSettings(source=source, typed_fallback=typed_fallback)
    assert worker.types_for_want_of_a_device(settings) is types
