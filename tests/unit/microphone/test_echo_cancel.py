"""The echo canceller: the played audio kept by time, and speexdsp removing a room's echo of it
while keeping the buyer's voice (real speexdsp on signals whose echo path is known)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hardware.audio import SAMPLE_RATE, AudioBlock, level_dbfs
from workers.microphone.barge_in import BargeInDetector
from workers.microphone.echo_cancel import LEAD_MS, EchoCanceller, PlayedAudio
from workers.microphone.echo_reference import LATENCY_MOVE_MS, OutputDelay, find_reference
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


def _cancel(canceller: EchoCanceller, reference: np.ndarray, mic: np.ndarray, check: bool = False) -> np.ndarray:
    """``mic`` through the canceller, the reference's reader a few blocks ahead (as the sound
    server's monitor is, the loudspeaker's output reaching the microphone later)."""
    refs, mics = _blocks(reference), _blocks(mic)
    for block in refs[:5]:
        canceller.played.add(block)
    out = []
    for index, mic_block in enumerate(mics):
        if index + 5 < len(refs):
            canceller.played.add(refs[index + 5])
        cancelled = canceller.process(mic_block)
        if check:
            assert cancelled.t_ms == mic_block.t_ms - 20  # one block late, and its time says so
        out.append(cancelled.samples)
    return np.concatenate(out).astype(float)[BLOCK:]  # the output is one block late


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
    canceller = EchoCanceller(PlayedAudio(), delay, block_ms=20)
    cancelled = _cancel(canceller, reference, mic, check=True)
    mic, buyer = mic[:-BLOCK], buyer[:-BLOCK]
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


def test_an_output_delay_the_server_misstates_is_measured_and_followed() -> None:
    """The sink said 0 ms; its echo comes 250 ms later than that (a USB loudspeaker's buffers):
    the canceller finds the delay in the audio and cancels the echo all the same."""
    reference = _speech_like(9.0, seed=5)
    shift = SAMPLE_RATE * 250 // 1000
    echo = _room(np.concatenate((np.zeros(shift), reference))[: len(reference)])
    mic = echo + np.random.default_rng(6).normal(0, 10, len(reference))
    canceller = EchoCanceller(PlayedAudio(), 0, block_ms=20)
    cancelled = _cancel(canceller, reference, mic)
    assert canceller.delay.moves >= 1 and abs(canceller.delay.offset_ms + 250) <= 15, canceller.delay
    late = slice(6 * SAMPLE_RATE, 8 * SAMPLE_RATE)
    assert level_dbfs(mic[late]) - level_dbfs(cancelled[late]) > 20


def test_an_echo_later_than_the_sink_states_within_the_filters_reach_is_moved_back_to_the_lead() -> None:
    """The sink says 20 ms, the room adds 60 (its echo 60 ms later than stated: within the filter's
    span, but the reference would be asked for ahead of what the server has delivered): the
    alignment moves so that the reference leads its echo by the canceller's lead."""
    reference = _speech_like(9.0, seed=7)
    shift = SAMPLE_RATE * 80 // 1000
    mic = _room(np.concatenate((np.zeros(shift), reference))[: len(reference)])
    canceller = EchoCanceller(PlayedAudio(), 20, block_ms=20)
    _cancel(canceller, reference, mic)
    assert canceller.delay.moves == 1 and abs(canceller.delay.offset_ms + 65) <= 10, canceller.delay  # + the room's 5 ms
    assert canceller.delay.measured_ms is not None and abs(canceller.delay.measured_ms - LEAD_MS) <= 10


def test_a_reference_that_stopped_is_not_waited_for() -> None:
    clock = [100.0]
    played = PlayedAudio(now=lambda: clock[0])
    played.add(AudioBlock(np.full(BLOCK, 1, np.int16), T0))
    clock[0] += 0.3  # nothing since: its reader is reopening it
    started = time.monotonic()
    assert np.all(played.take(T0 + 1000, BLOCK, wait_ms=2000) == 0)
    assert time.monotonic() - started < 0.5


def test_while_the_loudspeaker_is_silent_the_microphone_goes_on_as_heard() -> None:
    """Only a block late, bit for bit: the suppressor's gains would colour the buyer's voice."""
    mic = _speech_like(2.0, seed=7)
    canceller = EchoCanceller(PlayedAudio(), 60, block_ms=20)
    heard = _cancel(canceller, np.zeros(len(mic)), mic)
    as_int = np.clip(np.round(mic), -32768, 32767).astype(np.int16).astype(float)
    assert np.array_equal(heard[SAMPLE_RATE:], as_int[SAMPLE_RATE : len(heard)])


def test_a_stretch_due_later_than_the_wait_is_not_waited_for() -> None:
    played = PlayedAudio()
    played.add(AudioBlock(np.zeros(BLOCK, np.int16), T0))  # a live reference, a second behind the block
    started = time.monotonic()
    assert np.all(played.take(T0 + 1000, BLOCK, wait_ms=150) == 0)
    assert time.monotonic() - started < 0.1


def test_the_output_delay_follows_the_sinks_latency_once_it_plays() -> None:
    """An idle sink states the most it may buffer; playing, it states what its stream asked."""
    canceller = EchoCanceller(PlayedAudio(), 1494, block_ms=20)
    follower = OutputDelay("room_speaker", canceller, ask=lambda _sink: None)  # the thread asks nothing here
    try:
        follower.follow(None)  # the server did not answer: nothing moves
        assert canceller.output_delay_ms == 1494
        follower.follow(1494 + LATENCY_MOVE_MS / 2)  # within the filter's slack: left alone
        assert canceller.output_delay_ms == 1494
        follower.follow(120.0)
        assert canceller.output_delay_ms == 120.0
        # and the canceller takes its reference by it: the echo 120 ms late is removed
        reference = _speech_like(6.0, seed=5)
        delayed = np.concatenate((np.zeros(SAMPLE_RATE * 120 // 1000, np.int16), reference))[: len(reference)]
        out = _cancel(canceller, reference, _room(delayed))
        tail = slice(len(out) // 2, None)
        assert level_dbfs(_room(delayed)[tail]) - level_dbfs(out[tail]) > 20
    finally:
        follower.close()
        canceller.close()


def test_after_a_realignment_the_barge_in_detector_learns_the_echo_again() -> None:
    """The canceller moved its alignment and re-adapts: the echo it leaves jumps by 25 dB for a
    while. Taken for the buyer, the jump would cut the avatar and send its words as the buyer's."""
    rng = np.random.default_rng(8)

    def block(dbfs: float) -> np.ndarray:
        return np.clip(rng.normal(0, 32768 * 10 ** (dbfs / 20), BLOCK), -32768, 32767).astype(np.int16)

    def fired(detector: BargeInDetector, relearn: bool) -> bool:
        for _ in range(50):  # a second of well-cancelled echo
            assert detector.process(block(-60), 20, avatar_speaking=True) is None
        if relearn:
            detector.relearn()
        return any(detector.process(block(-35), 20, avatar_speaking=True) is not None for _ in range(50))

    assert fired(BargeInDetector(), relearn=False)  # what happened before
    assert not fired(BargeInDetector(), relearn=True)

    canceller = EchoCanceller(PlayedAudio(), 1494, block_ms=20)
    canceller.set_output_delay(20)
    canceller.delay.moves += 1
    assert canceller.realignments == 2
    canceller.close()


def test_the_canceller_says_it_has_learnt_the_room_once_it_removes_the_echo_until_realigned() -> None:
    """Barge-in is trusted on the cancelled signal once the filter has converged (the buyer's
    double talk later does not undo that), and again only once it has converged anew after a
    realignment."""
    reference = _speech_like(6.0, seed=9)
    canceller = EchoCanceller(PlayedAudio(), 60, block_ms=20)
    assert not canceller.converged  # nothing played yet
    delayed = np.concatenate((np.zeros(SAMPLE_RATE * 60 // 1000), reference))[: len(reference)]
    _cancel(canceller, reference, _room(delayed))
    assert canceller.converged
    canceller.stats.removed_db.extend([0.0] * 250)  # five seconds of the buyer over the echo
    assert canceller.converged
    realigned: list[bool] = []
    canceller.on_realigned = lambda: realigned.append(True)  # a transcriber's detector relearns then
    canceller.set_output_delay(200)  # realigned: it learns the room again
    canceller.process(AudioBlock(np.zeros(BLOCK, np.int16), T0 + 60_000))
    assert not canceller.converged and realigned == [True]
    canceller.process(AudioBlock(np.zeros(BLOCK, np.int16), T0 + 60_020))
    assert realigned == [True]  # once per realignment
    canceller.close()


def test_an_echo_that_jumped_under_the_filter_is_no_barge_in_the_buyers_voice_is() -> None:
    """The echo's path jumps 40 ms under a converged filter: for the second it re-adapts the
    residual swells to nearly the echo, by level the buyer talking over the avatar; but the echo
    is no longer where the filter learnt it, so barge-in is not trusted. The buyer talking over
    the same echo through the unchanged path is."""
    reference = _speech_like(6.6, seed=9)
    path = _room(np.concatenate((np.zeros(SAMPLE_RATE * 60 // 1000), reference))[: len(reference)])
    jumped = _room(np.concatenate((np.zeros(SAMPLE_RATE * 100 // 1000), reference))[: len(reference)])
    learnt = SAMPLE_RATE * 6  # then 0.6 s more, the jump or the buyer

    def after_learning(rest: np.ndarray) -> tuple[EchoCanceller, np.ndarray]:
        canceller = EchoCanceller(PlayedAudio(), 60, block_ms=20)
        out = _cancel(canceller, reference, np.concatenate((path[:learnt], rest[learnt:])))
        return canceller, out

    moved, moved_out = after_learning(jumped)
    assert moved.converged and moved.delay.moves == 0 and moved.delay.learnt_ms is not None
    swell = level_dbfs(moved_out[-SAMPLE_RATE // 4:]) - level_dbfs(moved_out[learnt - SAMPLE_RATE:learnt - BLOCK])
    assert swell > 15  # what the level detector sees: far over the residual it learnt
    assert not moved.trusts_barge_in() and moved.moved_refused == 1
    talking, _ = after_learning(path + _speech_like(6.6, seed=4) * 0.5)
    assert talking.trusts_barge_in()
    for canceller in (moved, talking):
        canceller.close()
