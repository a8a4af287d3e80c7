"""The streaming STFT and overlap-add behind GTCRN (``workers/microphone/stft.py``): what it gives
back when the spectrum is left alone, and that the blocks it is fed do not change it."""

from __future__ import annotations

import numpy as np
import pytest

from workers.microphone.gtcrn import HOP, window
from workers.microphone.stft import StreamingStft

SECONDS = 2
RATE = 16_000
N_FFT = len(window())


def _stream(samples: np.ndarray, block: int, frame_fn: object = None) -> tuple[np.ndarray, int]:
    stft = StreamingStft(frame_fn if frame_fn is not None else (lambda spectrum: spectrum), window(), HOP)  # type: ignore[arg-type]
    padded = np.concatenate([samples, np.zeros(stft.delay_samples + block)])
    out = np.concatenate([stft.process(padded[i:i + block]) for i in range(0, len(padded) - block + 1, block)])
    return out, stft.delay_samples


@pytest.mark.parametrize("block", [1, 7, 160, 320, 480, 1000])
def test_an_untouched_spectrum_comes_back_as_the_signal_late_by_the_delay(block: int) -> None:
    """Square-root Hann frames overlap-added and divided by the squared windows' sum: the signal
    itself, ``n_fft - 1`` samples late, zeros before, whatever the block size."""
    samples = np.random.default_rng(1).uniform(-1, 1, SECONDS * RATE).astype(np.float32)
    out, delay = _stream(samples, block)
    assert delay == N_FFT - 1
    assert not out[:delay].any()
    assert np.allclose(out[delay:delay + len(samples)], samples, atol=1e-6, rtol=0)


def test_the_blocks_do_not_change_the_output() -> None:
    """A frame function that depends on what came before (as a recurrent model does) sees the
    same frames in the same order: 10, 20 and 30 ms blocks give the same samples, bit for bit."""
    samples = np.random.default_rng(2).uniform(-1, 1, SECONDS * RATE).astype(np.float32)

    def make() -> object:
        previous = [np.zeros(N_FFT // 2 + 1, complex)]

        def frame_fn(spectrum: np.ndarray) -> np.ndarray:
            out = 0.5 * spectrum + 0.25 * previous[0]
            previous[0] = spectrum
            return out

        return frame_fn

    outs = [_stream(samples, RATE * ms // 1000, make())[0][:len(samples)] for ms in (10, 20, 30)]
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[1], outs[2])


def test_a_hop_without_overlap_is_refused() -> None:
    with pytest.raises(ValueError, match="hop"):
        StreamingStft(lambda spectrum: spectrum, window(), N_FFT)
