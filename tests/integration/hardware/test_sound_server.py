"""Real devices through a real sound server: a private PulseAudio with a null sink
(``room_speaker``, the room's loudspeaker) and a 48 kHz stereo pipe source (``room_mic``, its
microphone), written to at real time.

``humaine-env devices`` names them; ``humaine-env mic --source mic:room_mic`` (a real process,
against a real mosquitto) hears an utterance, says on its status when the source is unplugged
and when it is back, hears the next one and never exits; the avatars' speaker plays through
``soundcard:room_speaker`` and the sink's monitor hears it. Without a server, the queries answer
"none" at once and ``mic:NAME`` is PortAudio's; PortAudio's capture of a device that opens only
in stereo at 48 kHz is checked with a stand-in for PortAudio (this machine has no such card)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from numpy.typing import NDArray

from hardware import audio_live, sound_server
from hardware.audio import AudioBlock
from hardware.audio_files import load_audio, resample
from hardware.audio_live import to_mono_16k
from hardware.audio_pulse import SoundServerSource
from hardware.audio_sources import open_source
from hardware.clock import VirtualClock
from hardware.sound_server import StreamPlace
from hardware.speaker_pulse import SoundServerSink
from hardware.speaker_sinks import open_sink
from hardware.speech_types import SpeakerError
from sessions.speech import synthesize
from tests.support.helpers import CLI, PS_DOMAIN, MosquittoBroker, wait_for
from tests.support.paths import ROOT
from tests.support.pulse import MIC, SPEAKER, PipeFeeder, PrivatePulse
from workers.microphone.engines import load_recognizer
from workers.microphone.evaluation import transcribe
from workers.microphone.settings import MicrophoneSettings
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.messages import Status, Transcript

HEARD_S = 10.0
"""The issue's bound: an utterance written after the source came back is final within this."""
RETRY_S = 1.0
FLOWING_S = 1.0
"""The pipe is read at pace for this long before anything is said into it."""
UTTERANCES = {  # the words of each that pocketsphinx's domain model gets right once it has heard one utterance
    # (cold, before its cepstral mean settles, it mishears most), without numbers (a final writes "four dollars" as $4)
    "warm-up": ("i accept your offer", set()),
    "first": ("that is too expensive can you do four dollars", {"too", "expensive"}),
    "after": ("i need two cups of flour and a cup of milk", {"cups", "flour"}),
    "played": ("i would like six ounces of blueberries", {"would", "like", "blueberries"}),
}


def utterance(key: str) -> NDArray[np.int16]:
    return load_audio(synthesize(UTTERANCES[key][0], "en-us").path)


def heard(text: str, key: str) -> bool:
    return UTTERANCES[key][1] <= {word.strip(".,?!") for word in text.lower().split()}


def test_devices_names_the_servers_microphone_and_speaker(private_pulse: PrivatePulse, tmp_path: Path) -> None:
    table = subprocess.run([*CLI, "devices"], env=private_pulse.env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert any(line.startswith(" * room_mic ") and "2 ch, 48000 Hz" in line for line in lines), table.stdout
    assert any(line.startswith(" * room_speaker ") for line in lines), table.stdout
    assert any("room_speaker.monitor" in line and "monitor: hears what room_speaker plays" in line for line in lines)
    assert "--source mic:NAME" in table.stdout and "--speaker soundcard:NAME" in table.stdout
    listed = subprocess.run([*CLI, "devices", "--json"], env=private_pulse.env, cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    found = json.loads(listed.stdout)
    assert found["sound_server"] is True
    sources = {d["name"]: d for d in found["sources"]}
    assert sources[MIC]["monitor"] is False and sources[MIC]["default"] is True and sources[MIC]["rate"] == 48_000
    assert sources[f"{SPEAKER}.monitor"]["monitor_of"] == SPEAKER
    assert [d["name"] for d in found["sinks"]] == [SPEAKER]


def test_a_query_returns_as_soon_as_the_server_answers(private_pulse: PrivatePulse) -> None:
    """A capture asks the server once a second where its stream records from, in the thread that
    hands its audio over: each question must cost what the server takes to answer, not the
    connection's whole timeout (pulsectl's own connect waited that out: half a second a second)."""
    with private_pulse.pointed_at():
        started = time.monotonic()
        for _ in range(5):
            assert sound_server.stream_source("no such stream") == StreamPlace(True, None)
        took_s = time.monotonic() - started
    assert took_s < 5 * sound_server.CONNECT_TIMEOUT_S / 2, f"5 questions took {took_s:.2f} s"


def test_without_a_server_devices_says_so_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PULSE_SERVER": f"unix:{tmp_path / 'nobody'}"}
    started = time.monotonic()
    table = subprocess.run([*CLI, "devices"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert table.returncode == 0 and time.monotonic() - started < 20
    assert table.stdout.splitlines()[0].startswith("No sound server"), table.stdout
    assert "room_mic" not in table.stdout


class MicProcess:
    """``humaine-env mic`` as a real process with this server, and what it publishes."""

    def __init__(self, pulse: PrivatePulse, config: Config, tmp_path: Path) -> None:
        self.statuses: list[Status] = []
        self.finals: list[Transcript] = []
        self.bus = Bus(config, "observer", persistent=False)
        self.bus.subscribe(self.bus.topics.status("microphone"), Status, lambda _t, m: self.statuses.append(m))
        self.bus.subscribe(self.bus.topics.transcript_final(), Transcript, lambda _t, m: self.finals.append(m))
        self.bus.start()
        assert self.bus.wait_connected(10)
        settings = {"environment_uuid": f'"{config.core.environment_uuid}"', "broker.url": f'"{config.broker.url}"',
                    "broker.mode": '"external"', "data_dir": f'"{tmp_path / "data"}"', "microphone.retry_s": RETRY_S,
                    **{k: json.dumps(v) for k, v in PS_DOMAIN.items()}}
        flags = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
        self.output: list[str] = []
        self.popen = subprocess.Popen([*CLI, *flags, "--log-level", "INFO", "mic", "--source", f"mic:{MIC}"], env=pulse.env, cwd=ROOT,
                                      text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        stdout = self.popen.stdout
        assert stdout is not None
        threading.Thread(target=lambda: self.output.extend(iter(stdout.readline, "")), daemon=True).start()

    def said(self) -> str:
        return "".join(self.output[-60:])

    def wait_status(self, state: str, text: str, after: int, timeout: float) -> Status:
        def found() -> Status | None:
            return next((s for s in self.statuses[after:] if s.state == state and text in s.detail), None)

        assert wait_for(found, timeout), (state, text, [(s.state, s.detail) for s in self.statuses], self.said())
        status = found()
        assert status is not None
        return status

    def wait_final(self, key: str, timeout: float) -> Transcript:
        def found() -> Transcript | None:
            return next((f for f in self.finals if heard(f.text, key)), None)

        assert wait_for(found, timeout, 0.05), (key, [f.text for f in self.finals], self.said())
        final = found()
        assert final is not None
        return final

    def stop(self) -> int:
        self.bus.stop()
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGINT)
            try:
                return self.popen.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
        return self.popen.wait(5)


@pytest.fixture
def mic_process(private_pulse: PrivatePulse, mosquitto: MosquittoBroker, make_config: Callable[..., Config],
                tmp_path: Path) -> Iterator[MicProcess]:
    process = MicProcess(private_pulse, make_config(mosquitto.url), tmp_path)
    yield process
    process.stop()


def test_mic_hears_room_mic_and_survives_its_unplugging(private_pulse: PrivatePulse, mic_process: MicProcess) -> None:
    first, after = utterance("first"), utterance("after")
    feeder = PipeFeeder(private_pulse.fifo).start()
    try:
        listening = mic_process.wait_status("online", f"listening: sound server source {MIC}", 0, 120)
        warm_up = utterance("warm-up")
        # the server reads the pipe once the worker records from it: until then what is said is lost
        assert wait_for(lambda: feeder.flowing_s >= FLOWING_S, 60), mic_process.said()
        feeder.say(np.concatenate([warm_up, np.zeros(16_000, np.int16), first]))
        mic_process.wait_final("first", (len(warm_up) + len(first)) / 16_000 + 1 + HEARD_S)

        seen = len(mic_process.statuses)
        private_pulse.unload_mic()  # unplugged until the worker says so
        error = mic_process.wait_status("error", f"sound server source {MIC}", seen, HEARD_S)
        private_pulse.load_mic()
        reloaded = time.monotonic()
        back = mic_process.wait_status("online", f"listening: sound server source {MIC}", seen, HEARD_S)
        assert back.ts - error.ts >= RETRY_S * 1000 - 50  # the worker waited [microphone] retry_s
        assert time.monotonic() - reloaded < HEARD_S
        assert feeder.reopened >= 1

        assert wait_for(lambda: feeder.flowing_s >= FLOWING_S, HEARD_S), mic_process.said()
        written = time.monotonic()
        feeder.say(after)
        final = mic_process.wait_final("after", HEARD_S)
        assert time.monotonic() - written < HEARD_S
        assert mic_process.popen.poll() is None, mic_process.said()  # the worker never exited
        assert listening.pid == back.pid
    finally:
        feeder.stop()
    assert final.source == "mic"
    assert mic_process.stop() == 0, mic_process.said()


def monitor_blocks(source: SoundServerSource, stop: threading.Event) -> tuple[list[AudioBlock], threading.Thread]:
    blocks: list[AudioBlock] = []
    thread = threading.Thread(target=lambda: blocks.extend(source.blocks(stop)), daemon=True)
    thread.start()
    return blocks, thread


def test_the_speaker_plays_on_room_speaker_and_its_monitor_hears_it(private_pulse: PrivatePulse, tmp_path: Path) -> None:
    speech = utterance("played")
    recognizer = load_recognizer(MicrophoneSettings(engine="pocketsphinx", pocketsphinx_domain_lm=True), tmp_path)
    transcribe(recognizer, utterance("warm-up"))
    with private_pulse.pointed_at():
        for spec in ("auto", "soundcard", "soundcard:room_SPEAKER"):  # the default sink; part of a name
            chosen = open_sink(spec, fallback_dir=tmp_path / "speech")
            assert isinstance(chosen, SoundServerSink) and chosen.sink == SPEAKER, spec
        with pytest.raises(SpeakerError, match="no audio output 'soundcard:lobby'"):
            open_sink("soundcard:lobby")  # not the server's: PortAudio's, which has no such output either
        sink = open_sink(f"soundcard:{SPEAKER}")
        assert isinstance(sink, SoundServerSink) and sink.sink == SPEAKER
        monitor = sound_server.monitor_source_name(SPEAKER)
        assert monitor == f"{SPEAKER}.monitor" and sound_server.monitor_source_name() == monitor
        source = SoundServerSource(monitor)
        stop = threading.Event()
        blocks, reading = monitor_blocks(source, stop)
        try:
            sink.begin("played", 22_050)
            assert 0.0 < sink.latency_s < 0.5
            written_at = len(blocks)
            sink.write(resample(speech, 16_000, 22_050).tobytes())  # paced by the stream's short buffer
            # until the monitor has delivered the whole utterance and half a second more (a loaded
            # machine plays it out later than the stream's latency says)
            assert wait_for(lambda: (len(blocks) - written_at) * source.block >= len(speech) + 8_000, 20)
        finally:
            stop.set()
            reading.join(5)
            sink.close()
            source.close()
    samples = np.concatenate([b.samples for b in blocks])
    hypothesis = transcribe(recognizer, samples).text
    assert heard(hypothesis, "played"), hypothesis
    assert source.stats()["blocks"] == len(blocks) and source.latency_ms >= 0.0


def test_mic_by_name_opens_the_servers_source_and_falls_back_without_one(private_pulse: PrivatePulse, tmp_path: Path) -> None:
    with private_pulse.pointed_at():
        for spec in (f"mic:{MIC}", "mic:room_MICROPHONE", "mic"):  # exact, part of the description, the default
            source = open_source(spec)
            try:
                assert isinstance(source, SoundServerSource) and source.source == MIC, spec
            finally:
                source.close()
        monitor = open_source("mic:room_speaker.monitor")
        monitor.close()
        assert isinstance(monitor, SoundServerSource)
    assert not isinstance(open_source_or_error(f"mic:{MIC}", tmp_path), SoundServerSource)


def open_source_or_error(spec: str, tmp_path: Path) -> object:
    """``spec`` opened with no sound server: PortAudio's device, or the error saying it has none."""
    saved = os.environ.get("PULSE_SERVER")
    os.environ["PULSE_SERVER"] = f"unix:{tmp_path / 'nobody'}"
    try:
        return open_source(spec)
    except Exception as exc:
        return exc
    finally:
        if saved is None:
            os.environ.pop("PULSE_SERVER")
        else:
            os.environ["PULSE_SERVER"] = saved


def test_without_a_server_every_query_answers_none_quickly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PULSE_SERVER", f"unix:{tmp_path}/nobody")
    started = time.monotonic()
    assert not sound_server.server_reachable()
    assert sound_server.list_sources() == [] and sound_server.list_sinks() == []
    assert sound_server.default_sink_name() is None and sound_server.default_source_name() is None
    assert sound_server.monitor_source_name() is None
    assert sound_server.latency_ms("room_speaker", "sink") is None
    assert sound_server.stream_source("humaine-env capture 1") == StreamPlace(False)
    assert time.monotonic() - started < 5 * sound_server.CONNECT_TIMEOUT_S
    assert os.environ["PULSE_SERVER"].endswith("nobody")


def test_stereo_48k_becomes_mono_16k() -> None:
    """What PortAudio's capture does with a device that opens only in stereo at 48 kHz."""
    t = np.arange(48_000) / 48_000
    left = (8000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    right = left // 2
    interleaved = np.stack([left, right], axis=1).reshape(-1)
    mono = to_mono_16k(interleaved, 48_000, 2)
    assert mono.dtype == np.int16 and len(mono) == 16_000
    expected = (6000 * np.sin(2 * np.pi * 440 * np.arange(16_000) / 16_000))
    assert np.abs(mono[100:-100] - expected[100:-100]).max() < 60  # the mean of the two, resampled
    assert np.array_equal(to_mono_16k(left[:320], 16_000, 1), left[:320])
    assert len(to_mono_16k(np.zeros(441 * 2, np.int16), 44_100, 2)) == 160


class _StereoOnlyStream:
    """PortAudio's input stream for a device that opens only in stereo at 48 kHz."""

    def __init__(self, samplerate: int, channels: int, callback: Callable[..., None], **_kwargs: object) -> None:
        if samplerate != 48_000 or channels != 2:
            raise ValueError(f"Invalid number of channels or sample rate ({channels} ch, {samplerate} Hz)")
        self.callback = callback
        self.active = False

    def start(self) -> None:
        self.active = True

    def abort(self) -> None:
        self.active = False

    def close(self) -> None:
        pass


class _StereoOnlyPortAudio:
    default = SimpleNamespace(device=(0, 0))
    RawInputStream = _StereoOnlyStream

    @staticmethod
    def query_devices() -> list[dict[str, object]]:
        return [{"name": "USB Audio", "hostapi": 0, "max_input_channels": 2, "default_samplerate": 48_000.0}]

    @staticmethod
    def query_hostapis() -> list[dict[str, object]]:
        return [{"name": "ALSA"}]


def test_a_stereo_only_48k_device_opens_in_its_own_format_and_delivers_mono_16k(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audio_live, "_sounddevice", lambda: _StereoOnlyPortAudio)
    source = audio_live.MicrophoneSource("USB", block_ms=20, clock=VirtualClock(1_000_000))
    assert (source.rate, source.channels) == (48_000, 2)
    stream = source._stream
    assert isinstance(stream, _StereoOnlyStream)
    left = np.full(960, 1000, np.int16)
    interleaved = np.stack([left, left * 3], axis=1).reshape(-1)  # 20 ms at 48 kHz, two channels
    stream.callback(interleaved.tobytes(), 960, SimpleNamespace(inputBufferAdcTime=0.0, currentTime=0.0), None)
    block = next(source.blocks(threading.Event()))
    assert len(block.samples) == 320 and abs(int(np.median(block.samples)) - 2000) <= 20  # the mean, at 16 kHz
    source.close()
