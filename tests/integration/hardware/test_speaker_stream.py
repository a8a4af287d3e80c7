"""The browser's sink and the tee: a real espeak-ng utterance into both, read back as a WAV stream."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import pytest

from hardware.speaker import Speaker, SpeakerError, VoiceSettings, WavSink
from hardware.speaker_sinks import open_sink
from hardware.speaker_stream import STREAM_LATENCY_S, STREAMS_KEPT, StreamSink, TeeSink, stream_sink, wav_header


def test_open_sink_builds_browser_and_joined_sinks(tmp_path: Path) -> None:
    browser = open_sink("browser")
    assert isinstance(browser, StreamSink) and stream_sink(browser) is browser
    both = open_sink(f"browser+wav:{tmp_path}")
    assert isinstance(both, TeeSink) and both.describe() == f"browser+wav:{tmp_path}"
    assert both.realtime and both.latency_s == STREAM_LATENCY_S and stream_sink(both) is both.sinks[0]
    assert stream_sink(open_sink(f"wav:{tmp_path}")) is None
    with pytest.raises(SpeakerError, match="browser"):
        open_sink("browser:somewhere")


def test_one_utterance_reaches_the_stream_and_the_wav_alike(tmp_path: Path) -> None:
    sink = TeeSink([StreamSink(), WavSink(tmp_path, realtime=False)])
    result = Speaker(sink).speak("Two cups of flour.", VoiceSettings("en-us+f3"), name="Celia-m1")
    stream = stream_sink(sink).stream("Celia-m1")
    chunks, done = stream.read(0)
    assert done and stream.samples == result.samples > 0
    with wave.open(str(result.path)) as wav:
        assert b"".join(chunks) == wav.readframes(wav.getnframes())
        rate = wav.getframerate()
    # the streamed header is a WAV header of unknown length: fix the sizes and it reads back
    header = bytearray(wav_header(rate))
    pcm = b"".join(chunks)
    header[4:8] = (36 + len(pcm)).to_bytes(4, "little")
    header[40:44] = len(pcm).to_bytes(4, "little")
    with wave.open(io.BytesIO(bytes(header) + pcm)) as back:
        assert (back.getframerate(), back.getnchannels(), back.getsampwidth(), back.getnframes()) == (rate, 1, 2, result.samples)
    assert stream.read(len(chunks)) == ([], True)


def test_only_recent_streams_are_kept() -> None:
    sink = StreamSink()
    for index in range(STREAMS_KEPT + 2):
        sink.begin(f"u{index}", 22050)
        sink.write(b"\0\0")
        sink.end()
    assert sink.stream("u0") is None and sink.stream("u1") is None
    assert sink.stream(f"u{STREAMS_KEPT + 1}").read(0) == ([b"\0\0"], True)
