"""The echo canceller: the played audio kept by time, and speexdsp removing a room's echo of it
while keeping the buyer's voice (real speexdsp on signals whose echo path is known)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hardware.audio import SAMPLE_RATE, AudioBlock, level_dbfs
from workers.microphone.echo_cancel import LEAD_MS, EchoCanceller, PlayedAudio
from workers.microphone.echo_reference import find_reference
from workers.microphone.settings import MicrophoneSettings
from workers.microphone.speexdsp import SpeexEchoCanceller

BLOCK = 320  # 20 ms
T0 = 1_700_000_000_000


def _speech_like(seconds: float, seed: int) -> np.ndarray:
    """Noise shaped into syllables (4 Hz bursts): broadband like speech, with pauses."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SAMPLE_RATE)
    envelope = np.clip(np.sin(2 * np.pi * 4 * np.arange(n) / SAMPLE_RATE), 0, None) ** 2
    return rng.normal(0, 3000, n) * envelope


def _room(reference: np.ndarray) -> np.ndarray:
    """A short room response: direct sound after 5 ms, two reflections, a decaying tail."""
    ir = np.zeros(1600)
    ir[80], ir[400], ir[900] = 0.5, 0.2, -0.1
    ir[80:] += np.random.default_rng(1).normal(0, 0.01, 1520) * np.exp(-np.arange(1520) / 300)
    return np.convolve(reference, ir)[: len(reference)]


def _blocks(samples: np.ndarray, t0: int = T0) -> list[AudioBlock]:
    as_int = np.clip(np.round(samples), -32768, 32767).astype(np.int16)
    return [AudioBlock(as_int[i:i + BLOCK], t0 + i * 1000 // SAMPLE_RATE) for i in range(0, len(as_int) - BLOCK + 1, BLOCK)]


def test_played_audio_is_read_back_by_capture_time() -> None:
    played = PlayedAudio()
    ramp = np.arange(3200, dtype=np.int16)
    for block in _blocks(ramp):
        played.add(block)
    assert np.array_equal(played.take(T0 + 40, 160), ramp[640:800])
    # before the first sample and after the last: silence where nothing was played
    early = played.take(T0 - 10, 320, wait_ms=0)
    assert np.all(early[:160] == 0) and np.array_equal(early[160:], ramp[:160])
    late = played.take(T0 + 190, 320, wait_ms=0)
    assert np.array_equal(late[:160], ramp[3040:]) and np.all(late[160:] == 0)


def test_played_audio_restarts_after_a_gap_and_keeps_what_arrives_within_jitter() -> None:
    played = PlayedAudio()
    played.add(AudioBlock(np.full(BLOCK, 7, np.int16), T0))
    played.add(AudioBlock(np.full(BLOCK, 8, np.int16), T0 + 23))  # 3 ms of jitter: it follows on
    assert played.take(T0 + 20, BLOCK, wait_ms=0)[0] == 8
    played.add(AudioBlock(np.full(BLOCK, 9, np.int16), T0 + 5000))  # the reference came back later
    assert played.take(T0 + 5000, BLOCK, wait_ms=0)[0] == 9
    assert np.all(played.take(T0, BLOCK, wait_ms=0) == 0)


def test_a_reader_waits_briefly_for_the_stretch_it_needs() -> None:
    played = PlayedAudio()
    played.add(AudioBlock(np.full(BLOCK, 1, np.int16), T0))
    threading.Timer(0.02, lambda: played.add(AudioBlock(np.full(BLOCK, 2, np.int16), T0 + 20))).start()
    started = time.monotonic()
    got = played.take(T0 + 20, BLOCK, wait_ms=2000)
    assert got[0] == 2 and time.monotonic() - started < 1.5


def test_the_canceller_removes_the_rooms_echo_and_keeps_the_buyer() -> None:
    reference = _speech_like(8.0, seed=2)
    delay = 60  # the sink's output delay: what the monitor captured sounds this much later
    shift = SAMPLE_RATE * delay // 1000
    echo = _room(np.concatenate((np.zeros(shift), reference))[: len(reference)])
    buyer = np.zeros(len(reference))
    buyer[6 * SAMPLE_RATE:7 * SAMPLE_RATE] = _speech_like(1.0, seed=3)[: SAMPLE_RATE] * 0.5
    mic = echo + buyer + np.random.default_rng(4).normal(0, 10, len(reference))
    played = PlayedAudio()
    canceller = EchoCanceller(played, delay, block_ms=20)
    out = []
    for ref_block, mic_block in zip(_blocks(reference), _blocks(mic), strict=True):
        played.add(ref_block)
        out.append(canceller.process(mic_block).samples)
    cancelled = np.concatenate(out).astype(float)
    converged = slice(4 * SAMPLE_RATE, 6 * SAMPLE_RATE)  # echo alone, after 4 s of learning
    erle = level_dbfs(mic[converged]) - level_dbfs(cancelled[converged])
    assert erle > 20, f"only {erle:.1f} dB of echo removed"
    talk = slice(6 * SAMPLE_RATE + 1600, 7 * SAMPLE_RATE - 1600)
    gain = float(np.dot(cancelled[talk], buyer[talk]) / np.dot(buyer[talk], buyer[talk]))
    assert gain > 0.6, f"the buyer's voice kept at {gain:.2f}"
    assert canceller.stats.erle_db is not None and canceller.stats.cpu_share < 0.2
    canceller.close()


def test_the_reference_is_taken_ahead_of_its_echo() -> None:
    """Taken from ``t - delay + lead``: a sound reaches the filter before its echo, never after."""
    played = PlayedAudio()
    for block in _blocks(np.arange(16_000, dtype=float) % 30_000):
        played.add(block)
    canceller = EchoCanceller(played, 100, block_ms=20)
    seen: list[np.ndarray] = []
    canceller.engine.process = lambda mic, ref: (seen.append(ref), mic)[1]  # type: ignore[method-assign]
    canceller.process(AudioBlock(np.zeros(BLOCK, np.int16), T0 + 500))
    first = (500 - 100 + LEAD_MS) * SAMPLE_RATE // 1000
    assert seen[0][0] == first


def test_speexdsp_refuses_frames_of_another_length_and_use_after_close() -> None:
    engine = SpeexEchoCanceller(160, SAMPLE_RATE, 100)
    with pytest.raises(ValueError):
        engine.process(np.zeros(320, np.int16), np.zeros(320, np.int16))
    engine.close()
    with pytest.raises(RuntimeError):
        engine.process(np.zeros(160, np.int16), np.zeros(160, np.int16))


def test_barge_in_is_on_by_default_only_with_the_canceller() -> None:
    assert MicrophoneSettings().barges_in(cancelling=True)
    assert not MicrophoneSettings().barges_in(cancelling=False)
    assert MicrophoneSettings(barge_in=True).barges_in(cancelling=False)
    assert not MicrophoneSettings(barge_in=False).barges_in(cancelling=True)


def test_there_is_no_reference_for_a_recording_or_when_cancelling_is_off() -> None:
    assert "off" in str(find_reference(MicrophoneSettings(echo_cancel="off")))
    assert "not a live microphone" in str(find_reference(MicrophoneSettings(source="wav:/tmp/x.wav")))
