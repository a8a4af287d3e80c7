"""Capture from a sound server's source by name (``pasimple``): 16 kHz mono int16 blocks.

The server resamples and downmixes whatever the device delivers (44.1/48 kHz stereo), so the
blocks are what every other source gives; each block's time is its first sample's capture time
(:class:`CaptureTimes`). A reader thread owns the stream and only queues
blocks, so a consumer that is slow, or a source that stalls, costs counted drops or an error
rather than a hung worker.

A source that is unplugged does not always end the stream: PulseAudio moves it to another
source (module-rescue-streams, or the core itself since 14, which moves it back when the source
returns), which would meanwhile deliver some other microphone's sound, unnoticed. So
about once a second :meth:`SoundServerSource.blocks` asks the server which source the stream
records from, and raises :class:`AudioSourceError` ("… disappeared") when it is not the one
asked for any more.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from hardware import sound_server
from hardware.audio import DEFAULT_BLOCK_MS, SAMPLE_RATE, AudioBlock, AudioSourceError, SourceKind, block_samples
from hardware.capture_queue import CaptureQueue
from hardware.clock import Clock, RealClock

log = logging.getLogger(__name__)

PRESENCE_CHECK_S = 1.0
"""How often the stream's source is checked (a short query to the server)."""
SAMPLE_WIDTH = 2
RESYNC_MS = 1000
"""Capture times follow the sample count unless it and the clock part by more than this (audio
the server lost, a long burst, or a device clock off the machine's)."""
_streams = itertools.count(1)


class CaptureTimes:
    """The capture time of each block: counted from the first block's (each block one block
    later), as long as that stays within :data:`RESYNC_MS` of what the clock says (``read_ms -
    latency - block length``); beyond it, the clock's.

    Reads come in bursts: at a stream's start (what the source held), and after a stall (a busy
    machine, a writer that paused). Stamping each block with the clock would squeeze a second of
    audio into a few ms of timestamps, and the recogniser's words would end after the
    utterance's timestamped end (and be dropped as made up). Counting keeps timestamps and
    samples in step; a device clock a little off the machine's costs one jump of a second every
    few hours."""

    def __init__(self, block_ms: int) -> None:
        self.block_ms = block_ms
        self._next: int | None = None

    def stamp(self, read_ms: int, latency_ms: float) -> int:
        by_clock = read_ms - round(latency_ms + self.block_ms)
        counted = self._next
        t_ms = counted if counted is not None and abs(counted - by_clock) <= RESYNC_MS else by_clock
        self._next = t_ms + self.block_ms
        return t_ms


def server_source_for(device: str | None) -> sound_server.SoundDevice | None:
    """The sound server's source that ``mic:DEVICE`` means, or ``None`` (no server, or no source
    matches, or DEVICE is a number: PortAudio's index). No DEVICE: the server's default."""
    wanted = (device or "").strip()
    if wanted.isdigit() or not sound_server.server_reachable():
        return None
    sources = sound_server.list_sources()
    if not wanted:
        return next((s for s in sources if s.default), None)
    return sound_server.match_device(sources, wanted)


def _pasimple() -> Any:
    try:
        import pasimple
    except (ImportError, OSError) as exc:  # libpulse missing
        raise AudioSourceError(f"the sound server's client library is not available ({exc})") from None
    return pasimple


class SoundServerSource:
    """One named source of the sound server, a sink's monitor included.

    :attr:`latency_ms` is the stream's latency as last measured (what the capture times
    subtract), for a caller that aligns this source with another (an echo canceller)."""

    kind: SourceKind = "mic"

    def __init__(
        self,
        source: str,
        block_ms: int = DEFAULT_BLOCK_MS,
        clock: Clock | None = None,
        check_s: float = PRESENCE_CHECK_S,
        description: str = "",
    ) -> None:
        self.source = source
        self.clock = clock or RealClock()
        self.block_ms = block_ms
        self.block = block_samples(block_ms)
        self.check_s = check_s
        self.description = f"sound server source {source}" + (f" ({description})" if description else "")
        self.stream_name = f"humaine-env capture {os.getpid()}-{next(_streams)}"
        """The stream's ``media.name``: how the presence check finds it among the server's."""
        self.latency_ms = 0.0
        self._times = CaptureTimes(block_ms)
        self._capture = CaptureQueue(self.description)
        self._checked = time.monotonic()
        self._failed: str | None = None
        self._closing = threading.Event()
        pasimple = _pasimple()
        try:
            self._stream: Any = pasimple.PaSimple(
                pasimple.PA_STREAM_RECORD, pasimple.PA_SAMPLE_S16LE, 1, SAMPLE_RATE,
                app_name=sound_server.CLIENT_NAME, stream_name=self.stream_name, device_name=source,
                fragsize=self.block * SAMPLE_WIDTH,
            )
        except pasimple.PaSimpleError as exc:
            raise AudioSourceError(f"cannot open {self.description}: {exc}") from None
        self._reader = threading.Thread(target=self._read, name=f"capture {source}", daemon=True)
        self._reader.start()
        log.info("capturing from %s", self.description)

    def _read(self) -> None:
        """The reader thread: blocks into the queue until closed or the stream fails; it alone
        touches the stream, and closes it (libpulse's simple API is not for two threads)."""
        stream, length = self._stream, self.block * SAMPLE_WIDTH
        try:
            while not self._closing.is_set():
                data = stream.read(length)
                now = self.clock.now_ms()
                self.latency_ms = stream.get_latency() / 1000.0
                samples = np.frombuffer(data, dtype=np.int16).copy()
                self._capture.put(AudioBlock(samples, self._times.stamp(now, self.latency_ms)))
        except Exception as exc:  # pasimple raises PaSimpleError; anything else ends it the same way
            self._failed = f"{self.description} failed: {exc}"
        finally:
            try:
                stream.close()
            except Exception as exc:
                log.debug("closing %s: %s", self.description, exc)

    def _still_there(self) -> bool:
        """False when the server says the stream records from another source or no longer
        exists; a server too busy to answer in time is no verdict (a dead one stalls the reads)."""
        place = sound_server.stream_source(self.stream_name)
        if not place.answered:
            log.debug("%s: the sound server did not answer the presence check", self.description)
        return not place.answered or place.source == self.source

    def _fault(self, idle: bool) -> str | None:
        """Why the capture failed (the reader's error once its blocks are read, the source gone:
        asked at every block, as a stream moved to another source goes on delivering), or None."""
        if idle and self._failed is not None:
            return self._failed
        if time.monotonic() - self._checked >= self.check_s:
            self._checked = time.monotonic()
            if not self._still_there():
                return f"{self.description} disappeared"
        return None

    def blocks(self, stop: threading.Event) -> Iterator[AudioBlock]:
        # closed meanwhile: an end, not a fault
        yield from self._capture.blocks(lambda: stop.is_set() or self._closing.is_set(), self._fault)

    def stats(self) -> dict[str, object]:
        return {
            "source": self.description,
            "rate": SAMPLE_RATE,
            "blocks": self._capture.delivered,
            "overflows": 0,
            "dropped": self._capture.dropped,
            "latency_ms": round(self.latency_ms, 1),
        }

    def close(self) -> None:
        """Stop the reader; it closes the stream after its current read (one block)."""
        self._closing.set()
        self._reader.join(1.0)
        if self._reader.is_alive():
            log.debug("%s: the reader is still in a read; it closes the stream when that returns", self.description)
