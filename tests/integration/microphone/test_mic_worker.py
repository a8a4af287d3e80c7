"""The microphone worker against a real mosquitto: replayed speech → VAD events, interim and
final transcripts; echo gating from speaking events; privacy pause; typed input and its
automatic use without a microphone; a missing device as a status error with retries."""

from __future__ import annotations

import io
import itertools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from hardware.audio import SAMPLE_RATE, AudioBlock, AudioSource, AudioSourceError
from hardware.audio_files import ReplaySource, load_audio, write_wav
from hardware.audio_sources import list_input_devices
from hardware.clock import VirtualClock
from scripts import synth_speech
from tests.support.helpers import wait_for
from workers.microphone.engine_pocketsphinx import PocketsphinxRecognizer
from workers.microphone.evaluation import wer
from workers.microphone.worker import MicrophoneWorker
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import PITCH_END, TURN_COMPLETE, MicrophoneControl, Speaking, Status, Transcript, VadEvent
from workers.runtime.worker import EXIT_UNAVAILABLE, run_worker
from workers.runtime.worker_ids import TRANSCRIPT as TRANSCRIPT_WORKER

T0 = 1_700_000_000_000
GAP_S = 1.2
TEXTS = (0, 4, 6)  # indices into the synthesized sentences


@pytest.fixture(scope="module")
def recognizer(tmp_path_factory: pytest.TempPathFactory) -> PocketsphinxRecognizer:
    return PocketsphinxRecognizer(biasing=True, cache_dir=tmp_path_factory.mktemp("ps"))


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[tuple[int, int]]]:
    """Three negotiation sentences separated by quiet gaps; their texts and spans (ms)."""
    utterances = [synth_speech.synthesize(synth_speech.SENTENCES[i], "en-us") for i in TEXTS]
    rng = np.random.default_rng(5)
    parts, spans, pos = [], [], 0
    for u in utterances:
        gap = rng.normal(0, 20, int(GAP_S * SAMPLE_RATE)).astype(np.int16)
        clip = load_audio(u.path)
        parts += [gap, clip]
        pos += len(gap)
        spans.append((pos * 1000 // SAMPLE_RATE, (pos + len(clip)) * 1000 // SAMPLE_RATE))
        pos += len(clip)
    parts.append(rng.normal(0, 20, int(GAP_S * SAMPLE_RATE)).astype(np.int16))
    path = tmp_path_factory.mktemp("conv") / "conversation.wav"
    write_wav(path, np.concatenate(parts))
    return path, [u.text for u in utterances], spans


class MicrophoneListener:
    """The rest of the suite: collects what the worker publishes, plays the avatars."""

    def __init__(self, config: Config) -> None:
        self.bus = Bus(config, "test-room", persistent=False)
        self.topics = self.bus.topics
        self.finals: list[Transcript] = []
        self.interims: list[Transcript] = []
        self.vad: list[VadEvent] = []
        self.status: list[Status] = []
        self.bus.subscribe(self.topics.transcript_final(), Transcript, lambda _t, m: self.finals.append(m))
        self.bus.subscribe(self.topics.transcript_interim(), Transcript, lambda _t, m: self.interims.append(m))
        self.bus.subscribe(self.topics.vad(), VadEvent, lambda _t, m: self.vad.append(m))
        self.bus.subscribe(self.topics.status("microphone"), Status, lambda _t, m: self.status.append(m))
        self.bus.start()
        assert self.bus.wait_connected(10)


@pytest.fixture
def room_and_config(mosquitto: object, make_config: Callable[..., Config]) -> Iterator[tuple[MicrophoneListener, Callable[..., Config]]]:
    base: dict[str, object] = {}

    def config(**overrides: object) -> Config:
        if "cfg" not in base:
            base["cfg"] = make_config(mosquitto.url, **{"microphone.retry_s": 0.2})  # type: ignore[attr-defined]
        return base["cfg"].with_overrides(overrides)  # type: ignore[attr-defined]

    room_holder: list[MicrophoneListener] = []

    def factory(**overrides: object) -> Config:
        cfg = config(**overrides)
        if not room_holder:
            room_holder.append(MicrophoneListener(cfg))
        return cfg

    factory(**{})
    yield room_holder[0], factory
    room_holder[0].bus.stop()


def run_worker_thread(worker: MicrophoneWorker) -> threading.Thread:
    worker.start()
    assert worker.bus.wait_connected(10)
    thread = threading.Thread(target=worker.run, args=(worker.stop_event,), daemon=True)
    thread.start()
    return thread


def test_replay_yields_vad_interims_and_one_final_per_utterance(
    room_and_config: tuple[MicrophoneListener, Callable[..., Config]], recognizer: PocketsphinxRecognizer, conversation: tuple
) -> None:
    room, config = room_and_config
    path, texts, spans = conversation
    worker = MicrophoneWorker(
        config(**{"microphone.source": f"replay:{path}"}), clock=VirtualClock(T0, speed=None), recognizer=recognizer
    )
    thread = run_worker_thread(worker)
    thread.join(60)
    assert not thread.is_alive()
    assert wait_for(lambda: len(room.finals) >= 3 and len(room.vad) >= 6, 10)
    worker.close()
    finals = sorted(room.finals, key=lambda t: t.start)
    assert len(finals) == 3
    # measured 0.33 (the first sentence is the hard one for pocketsphinx)
    assert wer(list(texts), [f.text for f in finals]) <= 0.45, [f.text for f in finals]
    starts = {v.utterance_id: v.at for v in room.vad if v.event == "speech_start"}
    ends = {v.utterance_id: v.at for v in room.vad if v.event == "speech_end"}
    for final, (span_start, span_end) in zip(finals, spans, strict=True):
        assert final.source == "replay" and final.engine == "pocketsphinx" and final.final
        assert final.utterance_id in starts and final.utterance_id in ends
        assert T0 + span_start - 400 <= final.start <= T0 + span_start
        assert abs(final.end - (T0 + span_end)) < 500
        assert final.words and all(final.start <= w.start < w.end <= final.end + 50 for w in final.words)
        mine = [i for i in room.interims if i.utterance_id == final.utterance_id]
        for a, b in itertools.pairwise(mine):
            assert b.end - a.end >= 200  # at most 5 interim results per second of speech
    assert room.interims, "streaming partials are published"
    assert worker.health()["finals"] == 3


def test_finals_carry_what_the_transcript_workers_status_says_it_reads(
    room_and_config: tuple[MicrophoneListener, Callable[..., Config]], recognizer: PocketsphinxRecognizer, conversation: tuple
) -> None:
    """The merger's reads come from the transcript worker's status, not from a configuration
    file the two may not share: without it finals carry no pitch and no end-of-turn verdict;
    with it (retained, as a transcript worker started first leaves it) they carry both."""
    room, config = room_and_config
    path, _texts, _spans = conversation
    reader = Bus(config(), TRANSCRIPT_WORKER, persistent=False)
    reader.set_reads((PITCH_END, TURN_COMPLETE))
    reader.start()
    try:
        assert reader.wait_connected(10)
        worker = MicrophoneWorker(
            config(**{"microphone.source": f"replay:{path}"}), clock=VirtualClock(T0, speed=None), recognizer=recognizer
        )
        worker.start()
        assert worker.bus.wait_connected(10)
        assert wait_for(lambda: worker.reader_reads == {PITCH_END, TURN_COMPLETE}, 10)
        thread = threading.Thread(target=worker.run, args=(worker.stop_event,), daemon=True)
        thread.start()
        thread.join(60)
        assert wait_for(lambda: len(room.finals) >= 3, 10)
        worker.close()
        finals = room.finals[-3:]
        assert all(f.turn_complete is not None for f in finals), [f.turn_complete for f in finals]
        assert any(f.pitch_end is not None for f in finals), [f.pitch_end for f in finals]
    finally:
        reader.clear_retained(reader.topics.status(TRANSCRIPT_WORKER))
        reader.stop()


def test_echo_is_dropped_or_tagged(
    room_and_config: tuple[MicrophoneListener, Callable[..., Config]], recognizer: PocketsphinxRecognizer, conversation: tuple
) -> None:
    room, config = room_and_config
    path, _texts, spans = conversation
    # Celia speaks over the second sentence (her audio ends 300 ms before it does: the tail covers it).
    begin, end = T0 + spans[1][0] - 200, T0 + spans[1][1] - 300
    for mode, expected in (("drop", 2), ("tag", 3)):
        room.finals.clear()
        worker = MicrophoneWorker(
            config(**{"microphone.source": f"replay:{path}", "microphone.echo_mode": mode}),
            clock=VirtualClock(T0, speed=None),
            recognizer=recognizer,
        )
        worker.start()
        room.bus.publish(room.topics.speaking("Celia"), Speaking(source="avatar", avatar="Celia", state="begin", at=begin))
        assert wait_for(worker.echo.speaking_now, 10)  # retained: arrives whenever the worker subscribes
        room.bus.publish(room.topics.speaking("Celia"), Speaking(source="avatar", avatar="Celia", state="end", at=end))
        assert wait_for(lambda w=worker: not w.echo.speaking_now() and w.echo.is_echo(begin, begin), 10)
        worker.run(worker.stop_event)
        assert wait_for(lambda n=expected: len(room.finals) >= n, 10), (mode, room.finals, worker.health())
        worker.close()
        finals = sorted(room.finals, key=lambda t: t.start)
        assert len(finals) == expected
        echoes = [f for f in finals if f.echo]
        if mode == "drop":
            assert not echoes and all(not (f.start <= begin + 300 <= f.end) for f in finals)
        else:
            assert len(echoes) == 1 and echoes[0].start <= begin + 300 <= echoes[0].end


def test_privacy_pause_publishes_nothing(
    room_and_config: tuple[MicrophoneListener, Callable[..., Config]], recognizer: PocketsphinxRecognizer, conversation: tuple
) -> None:
    room, config = room_and_config
    path, _texts, _spans = conversation
    worker = MicrophoneWorker(
        config(**{"microphone.source": f"replay:{path}"}), clock=VirtualClock(T0, speed=None), recognizer=recognizer
    )
    worker.start()
    assert worker.bus.wait_connected(10)

    def pause() -> bool:  # control is not retained: repeat until the subscription is live
        room.bus.publish(room.topics.microphone_control(), MicrophoneControl(source="test", action="pause"))
        return wait_for(lambda: worker.paused, 0.5)

    assert wait_for(pause, 10)
    room.finals.clear()
    room.vad.clear()
    worker.run(worker.stop_event)
    assert worker.transcriber is not None and worker.transcriber.stats.paused_blocks > 100
    room.bus.publish(room.topics.microphone_control(), MicrophoneControl(source="test", action="resume"))
    assert wait_for(lambda: not worker.paused, 10)
    worker.close()
    assert room.finals == [] and room.vad == []


def test_typed_lines_become_final_transcripts(room_and_config: tuple[MicrophoneListener, Callable[..., Config]]) -> None:
    room, config = room_and_config
    room.finals.clear()
    lines = "@Celia I want 2 eggs\nWatson, how much for the flour?\n\n# a comment\nI accept\n"
    worker = MicrophoneWorker(config(**{"microphone.typed": True}), typed_stream=io.StringIO(lines))
    thread = run_worker_thread(worker)
    thread.join(10)
    assert wait_for(lambda: len(room.finals) >= 3, 10)
    worker.close()
    assert [f.text for f in room.finals] == ["Celia, I want 2 eggs", "Watson, how much for the flour?", "I accept"]
    assert all(f.source == "typed" and f.final and f.engine == "typed" for f in room.finals)
    assert len({f.utterance_id for f in room.finals}) == 3


def test_without_a_microphone_typed_input_is_used(room_and_config: tuple[MicrophoneListener, Callable[..., Config]]) -> None:
    room, config = room_and_config
    room.finals.clear()
    worker = MicrophoneWorker(config(**{"microphone.source": "mic"}), typed_stream=io.StringIO("plain words\n"))
    thread = run_worker_thread(worker)
    if list_input_devices():  # a machine with a sound card: the live path is taken instead
        assert wait_for(lambda: worker.source is not None, 10) and worker.mode == "audio"
        worker.stop()
        thread.join(5)
    else:
        thread.join(10)
        assert worker.mode == "typed"
        assert wait_for(lambda: len(room.finals) == 1, 10)
        assert room.finals[0].text == "plain words" and room.finals[0].source == "typed"
    worker.close()


def test_missing_file_is_one_line_and_unavailable(
    room_and_config: tuple[MicrophoneListener, Callable[..., Config]], recognizer: PocketsphinxRecognizer, tmp_path: Path
) -> None:
    """A file is not a device that comes back when plugged in: a missing one stops the worker
    with its one line and the exit status a restart cannot change (a lost device is retried:
    ``UnpluggedMidSentence`` below)."""
    room, config = room_and_config
    missing = tmp_path / "nope.wav"
    worker = MicrophoneWorker(config(**{"microphone.source": f"wav:{missing}"}), recognizer=recognizer)
    thread = threading.Thread(target=run_worker, args=(worker, False), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    assert worker.exit_code == EXIT_UNAVAILABLE
    assert worker.failure == f"cannot run: audio file {missing} not found"
    assert wait_for(lambda: any(s.state == "error" and "not found" in s.detail for s in room.status), 10)
    worker.close()


class UnpluggedMidSentence(ReplaySource):
    """A microphone whose cable comes out at ``fail_at_ms`` into the recording."""

    def __init__(self, path: Path, clock: VirtualClock, fail_at_ms: int) -> None:
        super().__init__(path, clock)
        self.fail_at_ms = fail_at_ms

    def blocks(self, stop: threading.Event) -> Iterator[AudioBlock]:
        origin = self.clock.now_ms()
        for block in super().blocks(stop):
            if block.t_ms - origin >= self.fail_at_ms:
                raise AudioSourceError("microphone unplugged")
            yield block


def test_device_failing_mid_utterance_finishes_it_and_recovers(
    room_and_config: tuple[MicrophoneListener, Callable[..., Config]], recognizer: PocketsphinxRecognizer, conversation: tuple
) -> None:
    """The device fails in the middle of the first sentence: what was heard becomes a final
    with its speech_end, the worker reports the error, reopens the device and transcribes the
    whole recording again with the same recogniser (it is not left mid-utterance)."""
    room, config = room_and_config
    path, texts, spans = conversation
    clock = VirtualClock(T0, speed=None)
    worker = MicrophoneWorker(config(**{"microphone.source": f"replay:{path}"}), clock=clock, recognizer=recognizer)
    middle_of_first = (spans[0][0] + spans[0][1]) // 2
    sources: list[AudioSource] = [UnpluggedMidSentence(path, clock, middle_of_first)]
    worker._open = lambda _spec: sources.pop() if sources else ReplaySource(path, clock)  # type: ignore[method-assign]
    thread = run_worker_thread(worker)
    thread.join(60)
    assert not thread.is_alive(), "the worker hung after the device failed"
    assert wait_for(lambda: len(room.finals) >= 4, 10), [f.text for f in room.finals]
    worker.close()
    assert any(s.state == "error" and "unplugged" in s.detail for s in room.status)
    cut, *after = sorted(room.finals, key=lambda t: t.start)
    assert cut.end <= T0 + middle_of_first + 100 and cut.text
    assert wer(list(texts), [f.text for f in after]) <= 0.45, [f.text for f in after]
    starts = sorted(v.utterance_id for v in room.vad if v.event == "speech_start")
    ends = sorted(v.utterance_id for v in room.vad if v.event == "speech_end")
    assert starts == ends and len(starts) == 4
