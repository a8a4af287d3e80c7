"""End of turn: does the speaker's pause end their turn? Pipecat's smart-turn v3.2 decides.

Voice activity only hears silence; it cannot tell "I'd like two eggs and..." from "I'd like two
eggs." A trained end-of-turn model listens to how the words end (pitch, lengthening, the
words themselves): smart-turn v3.2 (Daily, BSD-2-Clause) is a Whisper-encoder classifier
trained on human speech in 23 languages. It gives the probability that the turn is complete
from the last 8 s of audio. The model runs only where a pause ended an utterance, once per
final, so it costs nothing while the buyer talks.

The model file ships inside the ``pipecat-ai`` wheel; the set-up step extracts it and its
licence (``scripts/fetch_assets.py``: :data:`DEFAULT_MODEL`), so nothing is downloaded at run
time and the worker does not depend on Pipecat. The features are our own
(:mod:`workers.microphone.turn_features`).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hardware.audio import SAMPLE_RATE
from workers.microphone.onnx_session import OnnxSession
from workers.microphone.turn_features import last_window, log_mel
from workers.runtime.messages import TURN_COMPLETE_AT

log = logging.getLogger(__name__)

MODEL_FILE = "smart-turn-v3.2-cpu.onnx"
PIPECAT_VERSION = "1.14.0"
"""The ``pipecat-ai`` release whose wheel the model is taken from."""
DEFAULT_MODEL = Path(__file__).resolve().parents[2] / ".cache" / "assets" / "smart-turn" / MODEL_FILE
"""Where the set-up step puts the model (``[microphone] turn_model_path`` overrides it)."""
COMPLETE_AT = TURN_COMPLETE_AT
"""The model's own decision threshold (Pipecat's): above it, the turn is complete."""


class TurnModelMissing(RuntimeError):
    """The model file is not where it should be (the set-up step was not run)."""


@dataclass
class EndOfTurn:
    """smart-turn v3.2 on onnxruntime, one thread (the recogniser has the other core)."""

    path: Path = DEFAULT_MODEL
    threads: int = 1
    inference_ms: list[float] = field(default_factory=list)
    """Wall time of the latest inferences, features included (the last 100)."""
    _session: OnnxSession = field(init=False, repr=False)
    _executor: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.path.is_file():
            raise TurnModelMissing(f"no end-of-turn model at {self.path} (run scripts/setup.sh)")
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = self.threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(self.path), sess_options=options, providers=["CPUExecutionProvider"])

    def probability(self, samples: NDArray[np.int16] | NDArray[np.floating[Any]]) -> float:
        """Probability that the turn whose audio ends with ``samples`` (16 kHz; int16, or float
        in [-1, 1]) is complete."""
        audio = samples.astype(np.float32) / 32768.0 if samples.dtype == np.int16 else samples.astype(np.float32)
        started = time.perf_counter()
        features = log_mel(last_window(audio))[None, :, :]
        output = self._session.run(None, {"input_features": features})
        self.inference_ms = [*self.inference_ms[-99:], (time.perf_counter() - started) * 1000.0]
        return float(np.asarray(output[0]).reshape(-1)[0])

    def submit(self, samples: NDArray[np.int16] | NDArray[np.floating[Any]]) -> Future[float]:
        """:meth:`probability` on the model's own thread: the microphone asks as soon as a pause
        begins, so the answer is ready when the hangover ends the utterance (the recogniser's
        speculative decode runs on its own thread meanwhile)."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="end-of-turn")
            return self._executor.submit(self.probability, samples)


@dataclass
class UtteranceTurn:
    """One utterance's audio, kept for the end-of-turn model, and the model's answers on it:
    asked early, when a pause begins, and again at the end unless that pause was the end."""

    model: EndOfTurn
    start_ms: int
    """Audio-clock time of the utterance's first sample (its pre-roll included)."""
    tail_ms: int = 0
    """Silence after the last voiced frame the model hears (``[microphone] turn_tail_ms``)."""
    _chunks: list[NDArray[np.int16]] = field(default_factory=list, repr=False)
    _early: tuple[int, Future[float]] | None = field(default=None, repr=False)
    """Asked when a pause began: where the speech ended, the answer."""

    def accept(self, samples: NDArray[np.int16]) -> None:
        self._chunks.append(samples)

    def ask_early(self, speech_end_ms: int, silent_ms: int) -> None:
        """A pause began at ``speech_end_ms``: ask now, on the model's thread, so the answer is
        ready if the pause ends the utterance (once ``tail_ms`` of it has been heard)."""
        if silent_ms >= self.tail_ms:
            self._early = (speech_end_ms, self.model.submit(self._audio(speech_end_ms)))

    def complete(self, speech_end_ms: int, forced: bool) -> float | None:
        """The probability that the speaker is done, on the utterance up to ``tail_ms`` after
        its last voiced frame (``None``: the utterance was cut by its maximum length, which
        says nothing about its end)."""
        if forced:
            return None
        if self._early is not None and self._early[0] == speech_end_ms:  # asked when this pause began
            return round(self._early[1].result(), 4)
        return round(self.model.probability(self._audio(speech_end_ms)), 4)

    def _audio(self, speech_end_ms: int) -> NDArray[np.int16]:
        """The utterance's audio up to ``tail_ms`` past its speech end (never more than was
        heard)."""
        audio = np.concatenate(self._chunks)
        keep = (speech_end_ms - self.start_ms + self.tail_ms) * SAMPLE_RATE // 1000
        return audio[: max(0, keep)]


def load(path: str = "", threads: int = 1) -> EndOfTurn | None:
    """The configured model, or ``None`` with one warning when it is missing: finals then
    carry no ``turn_complete`` and the transcript worker's text rules decide alone. Loaded once
    per process (an onnxruntime session may be shared: every transcriber built reuses it)."""
    return _load(path, threads)


@functools.cache
def _load(path: str, threads: int) -> EndOfTurn | None:
    try:
        return EndOfTurn(Path(path).expanduser() if path else DEFAULT_MODEL, threads)
    except TurnModelMissing as exc:
        log.warning("%s; turns are judged by their text alone", exc)
        return None
