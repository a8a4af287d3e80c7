"""What the microphone asks of an ONNX Runtime session, typed (onnxruntime ships no types)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np
from numpy.typing import NDArray


class OnnxSession(Protocol):
    """An ``onnxruntime.InferenceSession`` as the suite's models use it: float32 tensors by
    input name in, every output (``output_names=None``) out, in the graph's order."""

    def run(self, output_names: list[str] | None, input_feed: Mapping[str, NDArray[np.float32]]) -> list[NDArray[np.float32]]:
        ...
