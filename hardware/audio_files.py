"""File-backed audio sources: a file read as fast as the consumer takes it, or replayed on a
clock. Any WAV (PCM 8/16/24/32-bit or float, any rate, any channel count) is mixed down and
resampled to 16 kHz; other containers/codecs are decoded with ``ffmpeg`` when it is installed.
"""

from __future__ import annotations

import io
import logging
import shutil
import subprocess
import threading
import wave
from collections.abc import Iterator
from math import gcd
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from formats.session_files import AUDIO_FILE, media_file
from hardware.audio import (
    DEFAULT_BLOCK_MS,
    SAMPLE_RATE,
    AudioBlock,
    MissingMediaError,
    SourceKind,
    UnreadableMediaError,
    block_samples,
)
from hardware.clock import Clock

log = logging.getLogger(__name__)

AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a", ".aac", ".raw")
"""The audio files a folder is searched for (anything else ffmpeg reads can still be named)."""

RAW_SUFFIXES = (".raw", ".pcm", ".s16")
"""Headerless files taken as 16 kHz mono int16 little-endian (pocketsphinx test data style)."""


def to_mono_int16(data: NDArray[Any]) -> NDArray[np.int16]:
    """Mix a (frames,) or (frames, channels) array of any numeric type down to mono int16."""
    arr = np.asarray(data)
    if arr.ndim == 2:
        arr = arr.astype(np.float64).mean(axis=1)
    if np.issubdtype(arr.dtype, np.floating):
        # Float WAVs are full scale at 1.0; a mixed-down integer array is already in range.
        scaled = arr * 32767.0 if np.abs(arr).max(initial=0) <= 1.0 else arr
        return scaled.round().clip(-32768, 32767).astype(np.int16)
    if arr.dtype == np.uint8:
        return ((arr.astype(np.int16) - 128) << 8).astype(np.int16)
    if arr.dtype == np.int32:
        return (arr >> 16).astype(np.int16)
    return arr.astype(np.int16)


def resample(samples: NDArray[np.int16], rate: int, target: int = SAMPLE_RATE) -> NDArray[np.int16]:
    """Polyphase resampling (anti-aliased) of int16 mono ``samples`` from ``rate`` to ``target``."""
    if rate == target:
        return samples.astype(np.int16, copy=False)
    from scipy.signal import resample_poly

    g = gcd(rate, target)
    out: NDArray[np.float64] = resample_poly(samples.astype(np.float64), target // g, rate // g)
    return out.round().clip(-32768, 32767).astype(np.int16)


def _read_wav(path: Path) -> tuple[NDArray[np.int16], int]:
    try:
        with wave.open(str(path), "rb") as wav:
            rate, channels, width = wav.getframerate(), wav.getnchannels(), wav.getsampwidth()
            frames = wav.readframes(wav.getnframes())
    except EOFError:  # a header cut short (a 30-byte RIFF)
        raise UnreadableMediaError(f"{path}: not a readable WAV file (it ends inside its header)") from None
    except wave.Error:
        # WAVE_FORMAT_EXTENSIBLE / float WAVs: scipy reads them.
        from scipy.io import wavfile

        try:
            rate, data = wavfile.read(str(path))
        except (ValueError, EOFError, OSError) as exc:
            raise UnreadableMediaError(f"{path}: not a readable WAV file ({exc or type(exc).__name__})") from None
        return to_mono_int16(data), int(rate)
    if not rate or not channels:
        raise UnreadableMediaError(f"{path}: not a readable WAV file ({rate} Hz, {channels} channels)")
    if width == 3:
        raw = np.frombuffer(frames, dtype=np.uint8).reshape(-1, 3)
        data = (
            raw[:, 0].astype(np.int32)
            | (raw[:, 1].astype(np.int32) << 8)
            | (raw[:, 2].astype(np.int8).astype(np.int32) << 16)
        ) << 8
    else:
        dtype = {1: np.uint8, 2: np.int16, 4: np.int32}.get(width)
        if dtype is None:
            raise UnreadableMediaError(f"{path}: unsupported sample width of {width} bytes")
        data = np.frombuffer(frames, dtype=dtype)
    if channels > 1:
        data = data.reshape(-1, channels)
    return to_mono_int16(data), rate


def decode_with_ffmpeg(path: Path, input_format: str | None = None) -> NDArray[np.int16]:
    """Decode any file ffmpeg understands (``input_format`` e.g. ``g722`` for headerless
    codecs) to 16 kHz mono int16."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise UnreadableMediaError(
            f"{path}: not a WAV/raw file and ffmpeg is not installed "
            "(apt install ffmpeg, or convert it to WAV)"
        )
    cmd = [ffmpeg, "-nostdin", "-v", "error"]
    if input_format:
        cmd += ["-f", input_format]
    cmd += ["-i", str(path), "-ac", "1", "-ar", str(SAMPLE_RATE), "-f", "s16le", "-"]
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        reason = detail[-1] if detail else "no detail"
        raise UnreadableMediaError(f"{path}: ffmpeg could not decode it ({reason})")
    return np.frombuffer(proc.stdout, dtype="<i2").astype(np.int16)


def load_audio(path: str | Path, raw: bool = False) -> NDArray[np.int16]:
    """The whole file as 16 kHz mono int16 (raw files: already 16 kHz mono int16 LE)."""
    p, missing = media_file(path, AUDIO_FILE, "audio")
    if missing:
        raise MissingMediaError(missing)
    suffix = p.suffix.lower()
    if raw or suffix in RAW_SUFFIXES:
        data = p.read_bytes()
        if len(data) % 2:
            data = data[:-1]
        return np.frombuffer(data, dtype="<i2").astype(np.int16)
    if suffix == ".g722":
        return decode_with_ffmpeg(p, "g722")
    with p.open("rb") as fh:
        head = fh.read(12)
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        samples, rate = _read_wav(p)
        return resample(samples, rate)
    return decode_with_ffmpeg(p)


def write_wav(path: str | Path, samples: NDArray[np.int16], rate: int = SAMPLE_RATE) -> None:
    """Write mono int16 samples as a PCM WAV (recordings, test fixtures)."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(np.asarray(samples, dtype="<i2").tobytes())
    Path(path).write_bytes(buf.getvalue())


def _chunks(samples: NDArray[np.int16], n: int) -> Iterator[tuple[int, NDArray[np.int16]]]:
    for offset in range(0, len(samples), n):
        chunk = samples[offset : offset + n]
        if len(chunk) < n:
            chunk = np.concatenate([chunk, np.zeros(n - len(chunk), dtype=np.int16)])
        yield offset, chunk


class FileSource:
    """A file delivered as fast as it is consumed; timestamps count from ``start_ms`` (default:
    0, so utterance times are offsets into the file unless the caller anchors them)."""

    kind: SourceKind = "file"

    def __init__(
        self,
        path: str | Path,
        block_ms: int = DEFAULT_BLOCK_MS,
        start_ms: int | None = None,
        raw: bool = False,
    ) -> None:
        self.path = media_file(path, AUDIO_FILE, "audio")[0]
        self.samples = load_audio(self.path, raw=raw)
        self.block = block_samples(block_ms)
        self.start_ms = 0 if start_ms is None else int(start_ms)
        self.description = f"file {self.path}"
        self.delivered = 0

    def blocks(self, stop: threading.Event) -> Iterator[AudioBlock]:
        for offset, chunk in _chunks(self.samples, self.block):
            if stop.is_set():
                return
            self.delivered += 1
            yield AudioBlock(chunk, self.start_ms + offset * 1000 // SAMPLE_RATE)

    def stats(self) -> dict[str, object]:
        return {
            "source": self.description,
            "blocks": self.delivered,
            "duration_s": len(self.samples) / SAMPLE_RATE,
        }

    def close(self) -> None:
        return None


class ReplaySource(FileSource):
    """A file played back on ``clock``: each block is released when the clock reaches the end
    of the block (as a microphone would), stamped with clock time. A :class:`VirtualClock`
    makes this faster than real time with identical timestamps."""

    kind: SourceKind = "replay"

    def __init__(
        self, path: str | Path, clock: Clock, block_ms: int = DEFAULT_BLOCK_MS, raw: bool = False
    ) -> None:
        super().__init__(path, block_ms=block_ms, raw=raw)
        self.clock = clock
        self.description = f"replay {self.path}"

    def blocks(self, stop: threading.Event) -> Iterator[AudioBlock]:
        origin = self.clock.now_ms()
        for offset, chunk in _chunks(self.samples, self.block):
            t_ms = origin + offset * 1000 // SAMPLE_RATE
            end_ms = origin + (offset + self.block) * 1000 // SAMPLE_RATE
            if not self.clock.sleep_until(end_ms, stop):
                return
            self.delivered += 1
            yield AudioBlock(chunk, t_ms)
