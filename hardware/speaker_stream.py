"""Speech for a remote player (the display page's browser), and one speaker feeding two outputs.

:class:`StreamSink` keeps each utterance's audio in memory as it is written, paced like a sound
card, so that a reader (the Avatar Controller serves it over HTTP) can stream it as a WAV while
it is spoken. The reader starts playing :data:`STREAM_LATENCY_S` after the utterance begins;
the speaker counts that as the output's latency, so word and mark events, gestures and the
speaking begin/end still bracket what the listener hears.

:class:`TeeSink` writes one utterance to several sinks (``browser+wav:DIR``: the page plays it
and a WAV keeps it). This module knows nothing about HTTP.
"""

from __future__ import annotations

import collections
import struct
import threading
from pathlib import Path

from hardware.speaker import SAMPLE_WIDTH, AudioSink

STREAM_LATENCY_S = 0.3
"""How long after an utterance begins its remote player starts it: room for the HTTP fetch and
network jitter. Events are timed against it, so they stay in step with what is heard."""
STREAM_LEAD_S = 0.2
"""Audio is written this far ahead of the speaker's position, so the player's buffer never runs dry."""
STREAMS_KEPT = 8
"""Recent utterances kept for a player that asks late (a page reloaded mid-sentence)."""
WAV_HEADER_BYTES = 44
STREAMING_SIZE = 0xFFFFFFFF
"""RIFF and data sizes of a WAV whose length is not known yet (the usual streaming convention)."""


def wav_header(sample_rate: int) -> bytes:
    """A 16-bit mono PCM WAV header for a stream of unknown length."""
    return b"".join((
        b"RIFF", struct.pack("<I", STREAMING_SIZE), b"WAVE",
        b"fmt ", struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * SAMPLE_WIDTH, SAMPLE_WIDTH, 8 * SAMPLE_WIDTH),
        b"data", struct.pack("<I", STREAMING_SIZE),
    ))


class AudioStream:
    """One utterance's audio: written by the speech thread, read by any number of readers."""

    def __init__(self, name: str, sample_rate: int) -> None:
        self.name = name
        self.sample_rate = sample_rate
        self._chunks: list[bytes] = []
        self._done = False
        self._lock = threading.Lock()

    def append(self, pcm: bytes) -> None:
        with self._lock:
            self._chunks.append(pcm)

    def finish(self) -> None:
        with self._lock:
            self._done = True

    def read(self, start: int) -> tuple[list[bytes], bool]:
        """The chunks from index ``start`` on, and whether the utterance has ended (never blocks)."""
        with self._lock:
            return self._chunks[start:], self._done

    @property
    def samples(self) -> int:
        with self._lock:
            return sum(len(c) for c in self._chunks) // SAMPLE_WIDTH


class StreamSink:
    """Utterances kept for a remote player, by name (the ``name`` given to ``Speaker.speak``)."""

    realtime = True
    latency_s = STREAM_LATENCY_S
    lead_s = STREAM_LEAD_S

    def __init__(self) -> None:
        self._streams: collections.OrderedDict[str, AudioStream] = collections.OrderedDict()
        self._current: AudioStream | None = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        return "browser"

    def begin(self, name: str, sample_rate: int) -> None:
        stream = AudioStream(name, sample_rate)
        with self._lock:
            self._streams[name] = stream
            while len(self._streams) > STREAMS_KEPT:
                self._streams.popitem(last=False)
        self._current = stream

    def write(self, pcm: bytes) -> None:
        if self._current is not None:
            self._current.append(pcm)

    def end(self) -> Path | None:
        if self._current is not None:
            self._current.finish()
            self._current = None
        return None

    def close(self) -> None:
        self.end()

    def stream(self, name: str) -> AudioStream | None:
        with self._lock:
            return self._streams.get(name)


class TeeSink:
    """Several sinks as one: the slowest latency counts (events follow the last listener)."""

    def __init__(self, sinks: list[AudioSink]) -> None:
        self.sinks = sinks

    # properties: a sound card knows its latency only once its stream is open
    @property
    def realtime(self) -> bool:
        return any(s.realtime for s in self.sinks)

    @property
    def latency_s(self) -> float:
        return max(s.latency_s for s in self.sinks)

    @property
    def lead_s(self) -> float:
        return max(s.lead_s for s in self.sinks)

    def describe(self) -> str:
        return "+".join(s.describe() for s in self.sinks)

    def begin(self, name: str, sample_rate: int) -> None:
        for sink in self.sinks:
            sink.begin(name, sample_rate)

    def write(self, pcm: bytes) -> None:
        for sink in self.sinks:
            sink.write(pcm)

    def end(self) -> Path | None:
        paths = [sink.end() for sink in self.sinks]
        return next((p for p in paths if p is not None), None)

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()


def stream_sink(sink: AudioSink) -> StreamSink | None:
    """The :class:`StreamSink` in ``sink`` (itself or one part of a :class:`TeeSink`), if any."""
    if isinstance(sink, StreamSink):
        return sink
    if isinstance(sink, TeeSink):
        return next((s for s in sink.sinks if isinstance(s, StreamSink)), None)
    return None

