"""Audio sources on real recordings: resampling, replay pacing on a clock, device errors,
and the retry loop around a source that fails mid-stream."""

from __future__ import annotations

import itertools
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hardware.audio import SAMPLE_RATE, AudioBlock, AudioSourceError, resilient_blocks
from hardware.audio_files import FileSource, load_audio, write_wav
from hardware.audio_sources import list_input_devices, open_source
from hardware.clock import VirtualClock

GOFORWARD = Path("/usr/share/pocketsphinx/test/data/goforward.raw")


def test_raw_file_blocks_cover_the_recording() -> None:
    source = open_source(f"raw:{GOFORWARD}", block_ms=20, start_ms=1_000)
    blocks = list(source.blocks(threading.Event()))
    total = GOFORWARD.stat().st_size // 2
    assert len(blocks) == -(-total // 320)
    assert all(len(b.samples) == 320 and b.samples.dtype == np.int16 for b in blocks)
    assert blocks[0].t_ms == 1_000
    assert blocks[1].t_ms == 1_020
    assert source.kind == "file"


def test_wav_any_rate_and_channels_is_resampled_to_16k(tmp_path: Path) -> None:
    stereo = tmp_path / "stereo44k.wav"
    subprocess.run(
        ["sox", "-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1", str(GOFORWARD),
         "-r", "44100", "-c", "2", str(stereo)],
        check=True,
    )
    original = load_audio(GOFORWARD)
    converted = load_audio(stereo)
    assert abs(len(converted) - len(original)) <= 16
    n = min(len(original), len(converted))
    corr = np.corrcoef(original[:n].astype(float), converted[:n].astype(float))[0, 1]
    assert corr > 0.95


def test_float_and_8bit_wavs(tmp_path: Path) -> None:
    original = load_audio(GOFORWARD)
    for encoding, bits in (("floating-point", "32"), ("unsigned-integer", "8")):
        out = tmp_path / f"x_{bits}.wav"
        subprocess.run(
            ["sox", "-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1",
             str(GOFORWARD), "-e", encoding, "-b", bits, "-r", "8000", str(out)],
            check=True,
        )
        decoded = load_audio(out)
        n = min(len(original), len(decoded))
        assert abs(len(decoded) - len(original)) <= 16
        assert np.corrcoef(original[:n].astype(float), decoded[:n].astype(float))[0, 1] > 0.8


def test_write_wav_roundtrip(tmp_path: Path) -> None:
    samples = load_audio(GOFORWARD)
    path = tmp_path / "roundtrip.wav"
    write_wav(path, samples)
    assert np.array_equal(load_audio(path), samples)


def test_replay_as_fast_as_possible_keeps_timestamps() -> None:
    clock = VirtualClock(start_ms=5_000_000, speed=None)
    source = open_source(f"replay:{GOFORWARD}", clock=clock, block_ms=30)
    started = time.monotonic()
    blocks = list(source.blocks(threading.Event()))
    assert time.monotonic() - started < 2.0
    assert source.kind == "replay"
    assert blocks[0].t_ms == 5_000_000
    assert [b.t_ms - a.t_ms for a, b in itertools.pairwise(blocks)] == [30] * (len(blocks) - 1)
    # The clock ends where the recording ends, as a live microphone's would.
    assert clock.now_ms() == blocks[-1].end_ms


def test_replay_on_a_faster_clock_is_paced() -> None:
    clock = VirtualClock(start_ms=0, speed=10.0)
    source = open_source(f"replay:{GOFORWARD}", clock=clock)
    duration_s = len(load_audio(GOFORWARD)) / SAMPLE_RATE
    started = time.monotonic()
    first_wall: float | None = None
    for block in source.blocks(threading.Event()):
        if first_wall is None:
            first_wall = time.monotonic()
        assert clock.now_ms() >= block.end_ms  # never released before it was "recorded"
    elapsed = time.monotonic() - started
    assert duration_s / 10.0 * 0.7 < elapsed < duration_s  # paced, yet faster than real time


def test_bad_specs_and_files_give_one_readable_error(tmp_path: Path) -> None:
    with pytest.raises(AudioSourceError, match="not found"):
        open_source(f"wav:{tmp_path / 'missing.wav'}")
    with pytest.raises(AudioSourceError, match="needs a path"):
        open_source("wav")
    with pytest.raises(AudioSourceError, match="unknown audio source"):
        open_source("tape:/dev/null")
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00\x01garbage" * 10)
    with pytest.raises(AudioSourceError, match="ffmpeg could not decode"):
        open_source(f"wav:{garbage}")


def test_unknown_microphone_is_a_clear_error() -> None:
    with pytest.raises(AudioSourceError) as info:
        open_source("mic:no-such-device-xyz")
    assert "\n" not in str(info.value)
    assert ("no audio input device" in str(info.value)) or ("not found; available" in str(info.value))


def test_list_input_devices_shape() -> None:
    devices = list_input_devices()
    assert isinstance(devices, list)
    for dev in devices:
        assert {"index", "name", "hostapi", "channels", "default_samplerate", "default"} <= set(dev)


class _FailsAfter(FileSource):
    """A real file source whose "device" vanishes after a number of blocks."""

    def __init__(self, fail_after: int) -> None:
        super().__init__(GOFORWARD)
        self.fail_after = fail_after

    def blocks(self, stop: threading.Event) -> Iterator[AudioBlock]:
        for i, block in enumerate(super().blocks(stop)):
            if i == self.fail_after:
                raise AudioSourceError("test device vanished")
            yield block


def test_failing_source_is_reported_and_retried_without_crashing() -> None:
    attempts: list[str] = []
    errors: list[str] = []
    recovered: list[str] = []

    def open_fn() -> FileSource:
        attempts.append("open")
        if len(attempts) == 1:
            raise AudioSourceError("test device busy")
        if len(attempts) == 2:
            return _FailsAfter(10)
        return FileSource(GOFORWARD)

    stop = threading.Event()
    blocks = list(
        resilient_blocks(
            open_fn, stop, errors.append, lambda s: recovered.append(s.description), retry_s=0.01
        )
    )
    assert errors == ["test device busy", "test device vanished"]
    assert len(recovered) == 2
    total = -(-(GOFORWARD.stat().st_size // 2) // 320)
    assert len(blocks) == 10 + total


def test_retry_loop_stops_promptly() -> None:
    stop = threading.Event()

    def never_opens() -> FileSource:
        raise AudioSourceError("no device")

    errors: list[str] = []
    threading.Timer(0.1, stop.set).start()
    started = time.monotonic()
    assert list(resilient_blocks(never_opens, stop, errors.append, lambda s: None, retry_s=5.0)) == []
    assert time.monotonic() - started < 2.0
    assert errors == ["no device"]
