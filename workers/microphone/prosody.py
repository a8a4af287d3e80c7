"""How an utterance's pitch ends: a statement read aloud falls to the low end of the speaker's
range, a sentence broken off mid-thought mostly stays level ("I would like ... two eggs"). In
conversation statements end level or rising about as often (``bench/merging.py --corpus spliced``).

The transcript worker may hold a final that reads as complete but did not fall
(``[transcript] merge_hold_level_pitch_st``): the text rules cannot see a first half the
recogniser misheard as a finished sentence ("can you give me a ..." heard as "Can you give me
up?"), the pitch can. When that setting is on, the microphone measures it on every utterance
(F0 by YIN on 40 ms frames every 10 ms, as the audio arrives: 13 ms per second of speech on this
machine) and sends it with the final; otherwise it does no pitch work.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from hardware.audio import SAMPLE_RATE

FRAME = SAMPLE_RATE * 40 // 1000
HOP = SAMPLE_RATE * 10 // 1000
F0_MIN_HZ = 70.0
F0_MAX_HZ = 400.0
YIN_THRESHOLD = 0.25
"""A frame is voiced when its cumulative-mean-normalised difference dips below this (YIN's
absolute threshold; 0.1-0.3 in the literature)."""
MIN_RMS = 30.0
"""Frames quieter than this (about -60 dBFS) are not looked at."""
MIN_VOICED_FRAMES = 10
"""Less voiced speech than this (100 ms) says nothing about a pitch contour."""
ENDING_FRAMES = 5
"""The ending is the median F0 of the last voiced 50 ms."""
MAX_FRAMES = 3000
"""F0 values kept per utterance (30 s; the microphone cuts utterances at 20 s)."""

_LAG_MIN = int(SAMPLE_RATE / F0_MAX_HZ)
_LAG_MAX = int(SAMPLE_RATE / F0_MIN_HZ)
_WINDOW = FRAME - _LAG_MAX
_FFT = 1 << (FRAME - 1).bit_length() + 1


def yin_f0(frames: NDArray[np.int16]) -> NDArray[np.float64]:
    """F0 (Hz) of each row of ``frames`` (n x :data:`FRAME` samples), NaN where unvoiced."""
    x = frames.astype(np.float64)
    x -= x.mean(axis=1, keepdims=True)
    out = np.full(len(x), np.nan)
    loud = np.sqrt((x * x).mean(axis=1)) >= MIN_RMS
    if not loud.any():
        return out
    x = x[loud]
    head = np.zeros_like(x)
    head[:, :_WINDOW] = x[:, :_WINDOW]
    corr = np.fft.irfft(np.conj(np.fft.rfft(head, _FFT)) * np.fft.rfft(x, _FFT), _FFT)[:, : _LAG_MAX + 1]
    squares = np.concatenate([np.zeros((len(x), 1)), np.cumsum(x * x, axis=1)], axis=1)
    lags = np.arange(_LAG_MAX + 1)
    shifted_energy = squares[:, lags + _WINDOW] - squares[:, lags]
    diff = np.maximum(shifted_energy[:, :1] + shifted_energy - 2.0 * corr, 0.0)
    running = np.cumsum(diff[:, 1:], axis=1)
    normalised = np.ones_like(diff)
    normalised[:, 1:] = diff[:, 1:] * lags[1:] / np.maximum(running, 1e-9)
    search = normalised[:, _LAG_MIN:]
    f0 = np.full(len(search), np.nan)
    for row, values in enumerate(search):
        below = np.flatnonzero(values < YIN_THRESHOLD)
        if below.size == 0:
            continue
        lag = int(below[0])  # the first dip, not the deepest: a multiple of the period dips too
        while lag + 1 < len(values) and values[lag + 1] < values[lag]:
            lag += 1
        f0[row] = SAMPLE_RATE / (lag + _LAG_MIN)
    out[np.flatnonzero(loud)] = f0
    return out


class PitchTracker:
    """An utterance's F0, frame by frame as its audio arrives."""

    def __init__(self) -> None:
        self._pending = np.zeros(0, dtype=np.int16)
        self._f0: list[float] = []

    def accept(self, samples: NDArray[np.int16]) -> None:
        self._pending = np.concatenate([self._pending, samples.astype(np.int16, copy=False)])
        count = (len(self._pending) - FRAME) // HOP + 1
        if count <= 0:
            return
        starts = np.arange(count) * HOP
        frames = self._pending[starts[:, None] + np.arange(FRAME)]
        self._f0 = [*self._f0, *yin_f0(frames).tolist()][-MAX_FRAMES:]
        self._pending = self._pending[count * HOP:]

    def ending_st(self) -> float | None:
        """Semitones from the utterance's median F0 to the F0 of its last voiced 50 ms
        (negative: the pitch fell at the end), or ``None`` with too little voiced speech."""
        voiced = [f for f in self._f0 if not math.isnan(f)]
        if len(voiced) < MIN_VOICED_FRAMES:
            return None
        median = float(np.median(voiced))
        ending = float(np.median(voiced[-ENDING_FRAMES:]))
        return round(12.0 * math.log2(ending / median), 2)
