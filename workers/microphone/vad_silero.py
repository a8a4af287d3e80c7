"""Silero VAD as a frame classifier for the segmenter, streamed 32 ms at a time.

Silero VAD (MIT) is the neural voice-activity detector Pipecat and LiveKit pair with their
end-of-turn models; webrtcvad is a Gaussian-mixture model of 2011 that takes steady noise for
speech. The ``silero-vad`` wheel needs torch (about 800 MB) even for its ONNX model, so the
copy faster-whisper (a dependency already) ships in its own wheel is used:
``faster_whisper/assets/silero_vad_v6.onnx``, run here on onnxruntime one window at a time
with its recurrent state carried, as faster-whisper runs it on a whole file.

Each model window is 512 samples plus 64 samples of context before it; a block of the
segmenter (10-30 ms) is voiced when the latest window's speech probability is over
``threshold``, or over ``threshold - HYSTERESIS`` while speech goes on (Silero's own rule).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from workers.microphone.onnx_session import OnnxSession

WINDOW = 512
"""Samples per model step at 16 kHz (32 ms)."""
CONTEXT = 64
"""Samples of the previous step the model sees before each window."""
HYSTERESIS = 0.15
"""Speech goes on while the probability stays above ``threshold - HYSTERESIS``."""
THRESHOLD = 0.5
"""Default of ``[microphone] silero_threshold``: Silero's own default."""


@functools.cache
def _session() -> OnnxSession:
    """One onnxruntime session per process, one thread: a step costs well under a millisecond."""
    import onnxruntime as ort
    from faster_whisper.utils import get_assets_path

    options = ort.SessionOptions()
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1
    options.log_severity_level = 4
    path = f"{get_assets_path()}/silero_vad_v6.onnx"
    inference: OnnxSession = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
    return inference


@dataclass
class SileroFrames:
    """``is_speech(block)`` over a stream of int16 blocks, like ``webrtcvad.Vad.is_speech``."""

    threshold: float = THRESHOLD
    continuous: bool = True
    last_probability: float = 0.0
    _pending: NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, np.float32), repr=False)
    _context: NDArray[np.float32] = field(default_factory=lambda: np.zeros(CONTEXT, np.float32), repr=False)
    _h: NDArray[np.float32] = field(default_factory=lambda: np.zeros((1, 1, 128), np.float32), repr=False)
    _c: NDArray[np.float32] = field(default_factory=lambda: np.zeros((1, 1, 128), np.float32), repr=False)
    _speaking: bool = False

    def probabilities(self, samples: NDArray[np.int16]) -> list[float]:
        """Feed int16 samples; the speech probability of every model window completed."""
        audio = np.concatenate([self._pending, samples.astype(np.float32) / 32768.0])
        done = len(audio) // WINDOW * WINDOW
        self._pending = audio[done:]
        probs: list[float] = []
        for start in range(0, done, WINDOW):
            window = audio[start : start + WINDOW]
            batch = np.concatenate([self._context, window])[None, :]
            out, self._h, self._c = _session().run(None, {"input": batch, "h": self._h, "c": self._c})
            self._context = window[-CONTEXT:]
            probs.append(float(np.asarray(out).reshape(-1)[-1]))
        return probs

    def is_speech(self, samples: NDArray[np.int16]) -> bool:
        for p in self.probabilities(samples):
            self.last_probability = p
            self._speaking = p >= self.threshold or (self._speaking and p >= self.threshold - HYSTERESIS)
        return self._speaking
