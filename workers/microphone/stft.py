"""A streaming short-time Fourier transform and its overlap-add inverse, block by block.

A neural enhancer that works on spectra (GTCRN, ``workers/microphone/gtcrn.py``) was trained and
published with an offline analysis-synthesis pair: a centered STFT (the signal starts with
``n_fft // 2`` zeros) and an inverse that overlap-adds the windowed frames and divides by the sum
of the squared windows that covered each sample (librosa's ``istft``). The live worker hands over
20 ms blocks, so this module does the same arithmetic frame by frame as the samples arrive: one
frame as soon as its last sample is in, and a sample out as soon as no later frame overlaps it.
Its output is the offline pair's output, late by a fixed :attr:`StreamingStft.delay_samples`.

numpy only: neither librosa nor the framework a model ships with is needed at run time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

SpectrumFn = Callable[[NDArray[np.complex128]], NDArray[np.complexfloating[Any, Any]]]
"""One frame's complex spectrum (``n_fft // 2 + 1`` bins) in, the spectrum to synthesise out."""


class StreamingStft:
    """Runs ``frame_fn`` on each STFT frame of a stream of float blocks and returns as many
    samples as it is given, the resynthesised signal delayed by :attr:`delay_samples` (zeros
    until then). The output does not depend on how the stream is cut into blocks."""

    def __init__(self, frame_fn: SpectrumFn, window: NDArray[np.float32], hop: int) -> None:
        n_fft = len(window)
        if not 0 < hop <= n_fft // 2:
            raise ValueError(f"hop {hop} must be in (0, {n_fft // 2}]: overlap-add needs every sample in two frames")
        self.frame_fn = frame_fn
        self.window = window
        self.hop = hop
        self.n_fft = n_fft
        self._squared = window.astype(np.float64) ** 2
        # a float32 sum of squares is what the offline inverse treats as zero: no division there
        self._tiny = np.finfo(np.float32).tiny
        # centered: the first frame is centered on the first sample, half of it in the zeros
        self._pending = np.zeros(n_fft // 2, np.float32)
        self._skip = n_fft // 2  # those zeros come out of the overlap-add first: not signal
        self._sum = np.zeros(n_fft)  # overlap-added frames not yet final
        self._weight = np.zeros(n_fft)  # the squared windows that covered each of them
        self._ready = np.zeros(self.delay_samples)

    @property
    def delay_samples(self) -> int:
        """The least fixed delay that holds for any block size: the first sample of a hop is
        final only once the frame that starts with it is complete, ``n_fft - 1`` samples on."""
        return self.n_fft - 1

    def process(self, samples: NDArray[np.floating[Any]]) -> NDArray[np.float64]:
        """One block in (float); as many samples out (float64), :attr:`delay_samples` late."""
        self._pending = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        done: list[NDArray[np.float64]] = [self._ready]
        start = 0
        while len(self._pending) - start >= self.n_fft:
            done.append(self._frame(self._pending[start:start + self.n_fft]))
            start += self.hop
        self._pending = self._pending[start:]
        ready = np.concatenate(done)
        out, self._ready = ready[:len(samples)], ready[len(samples):]
        return out

    def _frame(self, frame: NDArray[np.float32]) -> NDArray[np.float64]:
        """One frame analysed, transformed, synthesised and overlap-added; returns the samples
        it made final (the first ``hop`` of the sum, less any of the leading zeros)."""
        spectrum = np.fft.rfft(frame * self.window)
        synthesised = np.fft.irfft(self.frame_fn(spectrum), n=self.n_fft) * self.window
        self._sum += synthesised
        self._weight += self._squared
        final, weight = self._sum[:self.hop], self._weight[:self.hop]
        out: NDArray[np.float64] = np.divide(final, weight, out=final.copy(), where=weight > self._tiny)
        self._sum = np.concatenate([self._sum[self.hop:], np.zeros(self.hop)])
        self._weight = np.concatenate([self._weight[self.hop:], np.zeros(self.hop)])
        skipped = min(self._skip, self.hop)
        self._skip -= skipped
        return out[skipped:]
