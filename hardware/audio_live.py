"""Live capture through PortAudio (``sounddevice``): 16 kHz mono int16 blocks of 20-30 ms.

The PortAudio callback only copies the block into a bounded queue, so a slow consumer costs
counted drops rather than stalling the driver; driver-side overflows are counted too, and both
are reported in :meth:`MicrophoneSource.stats` (the worker's health). A device that vanishes
or stops delivering raises :class:`AudioSourceError` from :meth:`blocks`, which the caller
turns into a status error and a retry.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any, TypedDict

import numpy as np
from numpy.typing import NDArray

from hardware.audio import (
    DEFAULT_BLOCK_MS,
    SAMPLE_RATE,
    AudioBlock,
    AudioSourceError,
    NoInputDeviceError,
    SourceKind,
    block_samples,
)
from hardware.audio_files import resample
from hardware.capture_queue import CaptureQueue
from hardware.clock import Clock, RealClock

log = logging.getLogger(__name__)



def _sounddevice() -> Any:
    try:
        import sounddevice
    except OSError as exc:  # libportaudio missing
        raise NoInputDeviceError(
            f"PortAudio is not available ({exc}); "
            "install libportaudio2 or use --typed / --source wav:PATH"
        ) from None
    return sounddevice


class InputDevice(TypedDict):
    """A capture device as PortAudio describes it (``humaine-env devices --json`` prints these)."""

    index: int
    name: str
    hostapi: str
    channels: int
    default_samplerate: float
    default: bool
    """The system's default input."""


def query_input_devices() -> list[InputDevice]:
    """Every device with at least one input channel, as plain dicts."""
    try:
        sd = _sounddevice()
        devices = sd.query_devices()
        hostapis = sd.query_hostapis()
        default_in = sd.default.device[0] if sd.default.device else -1
    except (NoInputDeviceError, Exception) as exc:
        log.debug("cannot query audio devices: %s", exc)
        return []
    found: list[InputDevice] = []
    for index, dev in enumerate(devices):
        if int(dev.get("max_input_channels", 0)) <= 0:
            continue
        found.append(
            {
                "index": index,
                "name": str(dev["name"]),
                "hostapi": str(hostapis[int(dev["hostapi"])]["name"]),
                "channels": int(dev["max_input_channels"]),
                "default_samplerate": float(dev["default_samplerate"]),
                "default": index == default_in,
            }
        )
    return found


def resolve_device(device: str | None) -> InputDevice:
    """The input device named by ``device``: None/empty → the default (or the first input),
    a number → that index, text → the first input whose name contains it (case-insensitive)."""
    devices = query_input_devices()
    if not devices:
        raise NoInputDeviceError(
            "no audio input device found; "
            "connect a microphone, or use --typed or --source wav:PATH"
        )
    wanted = (device or "").strip()
    if not wanted:
        return next((d for d in devices if d["default"]), devices[0])
    if wanted.isdigit():
        for d in devices:
            if d["index"] == int(wanted):
                return d
    else:
        for d in devices:
            if wanted.lower() in str(d["name"]).lower():
                return d
    names = ", ".join(f"{d['index']}: {d['name']}" for d in devices)
    raise AudioSourceError(f"audio input device {wanted!r} not found; available: {names}")


def stream_formats(info: InputDevice) -> list[tuple[int, int]]:
    """(rate, channels) to try in turn: 16 kHz mono (nothing to convert), the device's own rate
    in mono, then its own rate and channel count (a device that only opens in stereo)."""
    own_rate, own_channels = int(info["default_samplerate"]), max(int(info["channels"]), 1)
    formats = [(SAMPLE_RATE, 1), (own_rate, 1), (own_rate, min(own_channels, 2)), (own_rate, own_channels)]
    return list(dict.fromkeys(formats))


def to_mono_16k(samples: NDArray[np.int16], rate: int, channels: int) -> NDArray[np.int16]:
    """Interleaved int16 ``samples`` of ``channels`` channels at ``rate`` → mono at 16 kHz
    (the channels averaged, then resampled)."""
    mono = samples.astype(np.int16, copy=True)
    if channels > 1:
        frames = samples[: len(samples) // channels * channels].reshape(-1, channels)
        mono = frames.astype(np.int32).mean(axis=1).round().astype(np.int16)
    return resample(mono, rate) if rate != SAMPLE_RATE else mono


class MicrophoneSource:
    """A live input device. Opens the stream at 16 kHz mono when the device allows it, else at
    the device's own rate (and, if it insists, its own channel count), and converts each block."""

    kind: SourceKind = "mic"

    def __init__(
        self, device: str | None = None, block_ms: int = DEFAULT_BLOCK_MS, clock: Clock | None = None
    ) -> None:
        self.clock = clock or RealClock()
        self.block_ms = block_ms
        self.block = block_samples(block_ms)
        info = resolve_device(device)
        self.device_index = info["index"]
        self.description = f"microphone {info['index']}: {info['name']}"
        self.overflows = 0
        self._capture = CaptureQueue(self.description)
        self._failed: str | None = None
        self.rate, self.channels = SAMPLE_RATE, 1
        self._stream = self._open_stream(_sounddevice(), info, block_ms)
        try:
            self._stream.start()
        except Exception as exc:
            self._stream.close()
            raise AudioSourceError(f"cannot start {self.description}: {exc}") from None
        log.info("capturing from %s at %d Hz, %d channel(s)", self.description, self.rate, self.channels)

    def _open_stream(self, sd: Any, info: InputDevice, block_ms: int) -> Any:
        """The first of :func:`stream_formats` the device accepts (sets :attr:`rate` and
        :attr:`channels`; the callback downmixes and resamples)."""
        last: Exception | None = None
        for rate, channels in stream_formats(info):
            try:
                stream = sd.RawInputStream(
                    samplerate=rate,
                    blocksize=rate * block_ms // 1000,
                    device=self.device_index,
                    channels=channels,
                    dtype="int16",
                    callback=self._callback,
                    finished_callback=self._finished,
                )
            except Exception as exc:  # PortAudioError: the device refuses this format
                last = exc
                continue
            self.rate, self.channels = rate, channels
            return stream
        raise AudioSourceError(f"cannot open {self.description}: {last}")

    def _callback(self, indata: Any, frames: int, time_info: Any, status: Any) -> None:
        if status and status.input_overflow:
            self.overflows += 1
        samples = to_mono_16k(np.frombuffer(bytes(indata), dtype=np.int16), self.rate, self.channels)
        now = self.clock.now_ms()
        # PortAudio's ADC time says how long ago the first sample was captured; some host APIs
        # report 0, then assume the block was just completed.
        adc = time_info.inputBufferAdcTime
        lag_s = float(time_info.currentTime - adc) if adc else 0.0
        lag_ms = lag_s * 1000.0 if 0.0 < lag_s < 1.0 else frames * 1000.0 / self.rate
        self._capture.put(AudioBlock(samples, now - round(lag_ms)))

    def _finished(self) -> None:
        if self._failed is None:
            self._failed = f"{self.description} stopped"

    def _fault(self, idle: bool) -> str | None:
        """Once what it delivered is read: why the stream stopped (PortAudio's finished callback,
        or a stream no longer active), or None."""
        stream = self._stream
        if not idle or (self._failed is None and stream is not None and stream.active):
            return None
        return self._failed or f"{self.description} delivers no audio"

    def blocks(self, stop: threading.Event) -> Iterator[AudioBlock]:
        yield from self._capture.blocks(stop.is_set, self._fault)

    def stats(self) -> dict[str, object]:
        return {
            "source": self.description,
            "rate": self.rate,
            "blocks": self._capture.delivered,
            "overflows": self.overflows,
            "dropped": self._capture.dropped,
        }

    def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            self._failed = self._failed or "closed"
            try:
                stream.abort()
                stream.close()
            except Exception as exc:
                log.debug("closing %s: %s", self.description, exc)
