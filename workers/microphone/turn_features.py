"""Whisper log-mel features of the last seconds of a turn, as the smart-turn model was trained on.

smart-turn v3 is a Whisper-encoder classifier: it takes the log-mel spectrogram Whisper's
feature extractor makes of exactly 8 s of 16 kHz audio (80 mel bands, 25 ms windows every
10 ms, 800 frames). The features are computed here, with numpy only, rather than through
Pipecat (whose package pulls in an LLM client, numba and more) or ``transformers``: the
microphone worker stays light. ``tests/integration/microphone/test_mic_turn.py`` checks that they give the model the
same probabilities as Pipecat's own ``LocalSmartTurnAnalyzerV3`` on real recordings.

The steps follow Whisper's feature extractor: the window's waveform is normalised to zero mean
and unit variance (``do_normalize``), framed with a centred, reflect-padded periodic Hann
window, turned into a power spectrum, projected on a Slaney mel filterbank, and taken as
``log10``, clamped to 8 decades below its peak and scaled to about [-1, 1].
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numpy.typing import NDArray

SAMPLE_RATE = 16_000
WINDOW_S = 8
"""The model sees the turn's last 8 s: a shorter turn is padded with silence before it."""
WINDOW_SAMPLES = SAMPLE_RATE * WINDOW_S
N_FFT = 400
HOP = 160
N_MELS = 80
_LOG_FLOOR = 1e-10
_DYNAMIC_RANGE = 8.0
"""Decades kept below the loudest mel bin (Whisper's clamp)."""
_VARIANCE_EPS = 1e-7


def last_window(audio: NDArray[np.floating[Any]]) -> NDArray[np.float32]:
    """The last :data:`WINDOW_S` of ``audio`` (float32), zero-padded at the start when shorter:
    the end of the turn is what the model judges, so it stays at the window's end."""
    samples = np.asarray(audio, dtype=np.float32)[-WINDOW_SAMPLES:]
    padded: NDArray[np.float32] = np.pad(samples, (WINDOW_SAMPLES - len(samples), 0))
    return padded


def _slaney_mel(hz: NDArray[np.float64]) -> NDArray[np.float64]:
    """Hertz to Slaney mels: linear below 1 kHz, logarithmic above."""
    mel: NDArray[np.float64] = 3.0 * hz / 200.0
    above = hz >= 1000.0
    mel[above] = 15.0 + np.log(hz[above] / 1000.0) * 27.0 / np.log(6.4)
    return mel


def _slaney_hz(mel: NDArray[np.float64]) -> NDArray[np.float64]:
    hz: NDArray[np.float64] = 200.0 * mel / 3.0
    above = mel >= 15.0
    hz[above] = 1000.0 * np.exp((mel[above] - 15.0) * np.log(6.4) / 27.0)
    return hz


@functools.cache
def mel_filterbank() -> NDArray[np.float64]:
    """Triangular filters, area-normalised (Slaney), shape ``(N_MELS, N_FFT // 2 + 1)``."""
    lowest, highest = _slaney_mel(np.array([0.0, SAMPLE_RATE / 2]))
    edges_mel = np.linspace(lowest, highest, N_MELS + 2)
    edges = _slaney_hz(edges_mel)
    bins = np.linspace(0, SAMPLE_RATE // 2, N_FFT // 2 + 1)
    rising = (bins[None, :] - edges[:-2, None]) / np.diff(edges)[:-1, None]
    falling = (edges[2:, None] - bins[None, :]) / np.diff(edges)[1:, None]
    filters = np.maximum(0.0, np.minimum(rising, falling))
    normalised: NDArray[np.float64] = filters * (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return normalised


@functools.cache
def _hann() -> NDArray[np.float64]:
    """The periodic Hann window (as ``torch.hann_window``), not numpy's symmetric one."""
    return np.hanning(N_FFT + 1)[:-1]


def log_mel(window: NDArray[np.floating[Any]]) -> NDArray[np.float32]:
    """Features of one :data:`WINDOW_SAMPLES` window (float in [-1, 1]): float32 ``(80, 800)``."""
    if window.shape != (WINDOW_SAMPLES,):
        raise ValueError(f"expected {WINDOW_SAMPLES} samples, got {window.shape}")
    x = window.astype(np.float32)
    x = (x - x.mean()) / np.sqrt(x.var() + _VARIANCE_EPS)
    padded = np.pad(x.astype(np.float64), N_FFT // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    power = np.abs(np.fft.rfft(frames * _hann(), axis=-1)) ** 2
    mel = np.log10(np.maximum(_LOG_FLOOR, mel_filterbank() @ power.T))[:, :-1]
    mel = np.maximum(mel, mel.max() - _DYNAMIC_RANGE)
    features: NDArray[np.float32] = ((mel + 4.0) / 4.0).astype(np.float32)
    return features
