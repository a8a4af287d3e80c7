"""Audio sources behind one interface: 16 kHz mono int16 blocks, each with a capture time.

Everything downstream (voice activity detection, recognizers) sees the same stream whether it
comes from a live microphone, a file read as fast as possible, or a recording replayed on a
(possibly faster than real time) clock. Timestamps are ms since the epoch of the block's first
sample, taken from the source's clock, so utterance times are consistent across sources.

Source specs (command line / config): ``mic``, ``mic:DEVICE`` (a sound server's source by name when a
server runs and has it, else PortAudio's device by index or part of a name),
``wav:PATH`` / ``file:PATH`` (any rate and channel count; resampled), ``raw:PATH`` (16 kHz
mono int16 headerless), ``replay:PATH`` (a file paced by a clock).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
"""Every source delivers this rate: what webrtcvad, Vosk and pocketsphinx models expect."""
DEFAULT_BLOCK_MS = 20
"""Block length; webrtcvad accepts 10/20/30 ms frames, live capture uses 20-30 ms blocks."""
RETRY_S = 3.0
"""Seconds between attempts to reopen a device that failed."""

SPEC_HELP = "use wav:PATH, raw:PATH, replay:PATH or mic[:DEVICE]"

SourceKind = Literal["mic", "file", "replay"]


class AudioSourceError(Exception):
    """A source cannot be opened or stopped delivering; the message is meant for an operator."""


class UnreadableMediaError(AudioSourceError):
    """A media file that cannot be decoded, or is not there: waiting will not make it
    readable (a file is not a device that comes back when plugged in)."""


class MissingMediaError(UnreadableMediaError):
    """A media file (``wav:``, ``raw:``, ``replay:``) that does not exist."""


class NoInputDeviceError(AudioSourceError):
    """No capture device exists at all (the caller may fall back to typed input)."""


@dataclass(frozen=True)
class AudioBlock:
    """``samples``: int16 mono at :data:`SAMPLE_RATE`; ``t_ms``: capture time of sample 0."""

    samples: NDArray[np.int16]
    t_ms: int

    @property
    def duration_ms(self) -> float:
        return len(self.samples) * 1000.0 / SAMPLE_RATE

    @property
    def end_ms(self) -> int:
        return self.t_ms + round(self.duration_ms)


class AudioSource(Protocol):
    """What every source offers. ``blocks`` ends at end of input or when ``stop`` is set and
    raises :class:`AudioSourceError` when the device fails."""

    kind: SourceKind
    description: str

    def blocks(self, stop: threading.Event) -> Iterator[AudioBlock]: ...

    def stats(self) -> dict[str, object]: ...

    def close(self) -> None: ...


SILENCE_DBFS = -100.0
"""The level given to digital silence (and the floor of every level): under any microphone's noise."""
FULL_SCALE = 32768.0


def level_dbfs(samples: NDArray[np.number[Any]]) -> float:
    """RMS level of int16-scaled ``samples`` in dB relative to full scale, at least
    :data:`SILENCE_DBFS`: the one measure of loudness the voice-activity segmenter, the barge-in
    detector, the noise-floor check and the noise mixing share."""
    if samples.size == 0:
        return SILENCE_DBFS
    rms = float(np.sqrt(np.mean(np.square(samples.astype(np.float64)))))
    return max(SILENCE_DBFS, 20.0 * np.log10(rms / FULL_SCALE)) if rms > 0 else SILENCE_DBFS


def block_samples(block_ms: int) -> int:
    if block_ms not in (10, 20, 30):
        raise ValueError(
            f"block length must be 10, 20 or 30 ms (voice activity frames), got {block_ms}"
        )
    return SAMPLE_RATE * block_ms // 1000


def is_device(spec: str) -> bool:
    """Whether ``spec`` names a live device (which may come back) rather than a file."""
    return spec.partition(":")[0].strip().lower() == "mic"


def resilient_blocks(
    open_fn: Callable[[], AudioSource],
    stop: threading.Event,
    on_error: Callable[[str], None],
    on_recovered: Callable[[AudioSource], None],
    retry_s: float = RETRY_S,
) -> Iterator[AudioBlock]:
    """Blocks from ``open_fn()``'s source; when opening fails or the source raises
    :class:`AudioSourceError`, report it, wait ``retry_s`` and open it again, until the source
    ends normally or ``stop`` is set. A flaky device therefore costs a status line and a few
    seconds of audio, never a crash loop."""
    while not stop.is_set():
        try:
            source = open_fn()
        except AudioSourceError as exc:
            log.warning("audio source unavailable: %s (retrying in %.0f s)", exc, retry_s)
            on_error(str(exc))
            stop.wait(retry_s)
            continue
        try:
            on_recovered(source)
            yield from source.blocks(stop)
            return
        except AudioSourceError as exc:
            log.warning("audio source failed: %s (retrying in %.0f s)", exc, retry_s)
            on_error(str(exc))
            stop.wait(retry_s)
        finally:
            source.close()
