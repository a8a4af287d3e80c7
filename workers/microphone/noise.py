"""Venue noise: babble built from real talkers, speech mixed in at a speech-to-noise ratio.

The competition runs in a conference hall, so the recogniser must be measured with other people
talking near the buyer. This module holds the recipe, not the audio: the set-up step
(``scripts/fetch_assets.py``, ``noise_set``) builds the project's noise set from recordings with
clear licences that the set-up step installs anyway, and ``bench/stt.py --snr`` and the tests mix
speech into it.

- :func:`babble`: several talker streams (each one person's recordings strung together with short
  pauses, looped) at equal active level with random offsets, summed. Six streams is the classic
  "six-talker babble": individual words are no longer followed, but it is still speech-like
  (voiced, modulated at the syllable rate), which is what makes it hard for a voice-activity
  detector and a recogniser alike.
- :func:`venue_noise`: babble plus the hall's steady part — broadband (pink) noise like
  ventilation and a low mains hum with harmonics — a little under the babble.
- :func:`mix_at_snr`: speech plus noise, the noise scaled so that the speech's *active* level
  (:func:`active_level_dbfs`, the level over the frames where the talker is speaking, in the
  spirit of ITU-T P.56) stands ``snr_db`` over the noise's level.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hardware.audio import FULL_SCALE, SAMPLE_RATE, SILENCE_DBFS, level_dbfs

log = logging.getLogger(__name__)

FRAME_MS = 20
"""Frames the active level is measured on."""
ACTIVE_RANGE_DB = 30.0
"""A frame within this many dB of the talker's loud frames (95th percentile) counts as active
speech: pauses and breaths between words do not lower the speech level."""
BABBLE_TALKERS = 6
STREAM_LEVEL_DBFS = -30.0
"""Active level each talker stream is set to before summing (leaves headroom for six)."""
PAUSE_RANGE_MS = (150, 600)
"""Pause between two recordings of one talker stream, drawn uniformly."""
HUM_HZ = 50.0
"""Mains hum fundamental (Europe; 60 Hz elsewhere changes nothing measurable here)."""
HUM_HARMONICS = (1.0, 0.5, 0.25)
"""Relative amplitudes of the hum at 1x, 2x and 3x :data:`HUM_HZ`."""
VENUE_BROADBAND_DB = -12.0
"""Pink (ventilation-like) noise level relative to the babble's level in :func:`venue_noise`."""
VENUE_HUM_DB = -18.0
"""Hum level relative to the babble's level in :func:`venue_noise`."""
INT16_PEAK = 32767.0

Samples = NDArray[np.int16] | NDArray[np.floating[Any]]
"""Audio in int16 scale: int16 as recorded, or float as mixed and scaled here."""


def frame_levels_dbfs(samples: Samples, frame_ms: int = FRAME_MS) -> NDArray[np.float64]:
    """RMS level of each whole ``frame_ms`` frame of int16-scaled ``samples``, in dBFS."""
    n = SAMPLE_RATE * frame_ms // 1000
    usable = len(samples) // n * n
    if usable == 0:
        return np.array([SILENCE_DBFS])
    frames = samples[:usable].astype(np.float64).reshape(-1, n)
    rms = np.sqrt(np.mean(np.square(frames), axis=1))
    levels: NDArray[np.float64] = np.maximum(SILENCE_DBFS, 20.0 * np.log10(np.maximum(rms, 1e-12) / FULL_SCALE))
    return levels


def active_level_dbfs(samples: Samples) -> float:
    """The level of ``samples`` over the frames where someone speaks (dBFS): the frames within
    :data:`ACTIVE_RANGE_DB` of the loud ones. Silence before, between and after words is left
    out, so a sentence with long pauses is not taken for a quiet one."""
    levels = frame_levels_dbfs(samples)
    loud = float(np.percentile(levels, 95))
    active = levels[levels > loud - ACTIVE_RANGE_DB]
    if loud <= SILENCE_DBFS + 1 or active.size == 0:
        return SILENCE_DBFS
    power = np.mean(np.power(10.0, active / 10.0))
    return float(10.0 * np.log10(power))


def set_active_level(samples: Samples, dbfs: float) -> NDArray[np.float64]:
    """``samples`` (float64) scaled so that their active level is ``dbfs``."""
    current = active_level_dbfs(samples)
    if current <= SILENCE_DBFS:
        return samples.astype(np.float64)
    scaled: NDArray[np.float64] = samples.astype(np.float64) * 10.0 ** ((dbfs - current) / 20.0)
    return scaled


def to_int16(samples: NDArray[np.floating[Any]]) -> NDArray[np.int16]:
    """Round and clip float samples in int16 scale to int16."""
    clipped: NDArray[np.float64] = np.clip(np.round(samples), -32768, 32767)
    return clipped.astype(np.int16)


def talker_stream(recordings: Sequence[Samples], seconds: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """One talker for ``seconds``: their recordings, each at the same active level, in a random
    order with short pauses, repeated as often as needed and started at a random point."""
    if not recordings:
        raise ValueError("a talker needs at least one recording")
    total = int(seconds * SAMPLE_RATE)
    parts: list[NDArray[np.float64]] = []
    length = 0
    while length < total + SAMPLE_RATE * 60:  # a minute over, so the random start can fall anywhere
        for index in rng.permutation(len(recordings)):
            speech = set_active_level(recordings[index], STREAM_LEVEL_DBFS)
            pause = np.zeros(int(rng.uniform(*PAUSE_RANGE_MS) * SAMPLE_RATE / 1000))
            parts += [speech, pause]
            length += len(speech) + len(pause)
    stream = np.concatenate(parts)
    start = int(rng.integers(0, len(stream) - total))
    return stream[start:start + total]


def babble(talkers: Sequence[Sequence[Samples]], seconds: float, seed: int = 0) -> NDArray[np.float64]:
    """Several talkers at once (float64, int16 scale): each talker's stream
    (:func:`talker_stream`) at an equal active level, summed, the sum set back to
    :data:`STREAM_LEVEL_DBFS`. Deterministic for a given ``seed``."""
    if len(talkers) < 2:
        raise ValueError("babble needs at least two talkers")
    rng = np.random.default_rng(seed)
    mixed: NDArray[np.float64] = np.sum([talker_stream(recordings, seconds, rng) for recordings in talkers], axis=0)
    return set_active_level(mixed, STREAM_LEVEL_DBFS)


def pink_noise(n: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """``n`` samples of 1/f noise (unit RMS): white noise shaped in the frequency domain."""
    spectrum = np.fft.rfft(rng.normal(0.0, 1.0, n))
    freqs = np.fft.rfftfreq(n, 1.0 / SAMPLE_RATE)
    spectrum[1:] /= np.sqrt(freqs[1:])
    spectrum[0] = 0.0
    pink = np.fft.irfft(spectrum, n)
    unit: NDArray[np.float64] = pink / (np.sqrt(np.mean(np.square(pink))) or 1.0)
    return unit


def hum(n: int) -> NDArray[np.float64]:
    """``n`` samples of mains hum with its harmonics (:data:`HUM_HARMONICS`), unit RMS."""
    t = np.arange(n) / SAMPLE_RATE
    wave = sum(a * np.sin(2 * math.pi * HUM_HZ * (k + 1) * t) for k, a in enumerate(HUM_HARMONICS))
    samples = np.asarray(wave, dtype=np.float64)
    unit: NDArray[np.float64] = samples / (np.sqrt(np.mean(np.square(samples))) or 1.0)
    return unit


def venue_noise(babble_samples: NDArray[np.float64], seed: int = 0) -> NDArray[np.float64]:
    """A hall: ``babble_samples`` plus pink broadband noise :data:`VENUE_BROADBAND_DB` and hum
    :data:`VENUE_HUM_DB` under the babble's active level (float64, int16 scale)."""
    rng = np.random.default_rng(seed)
    n = len(babble_samples)
    level = FULL_SCALE * 10.0 ** (active_level_dbfs(babble_samples) / 20.0)
    broadband = pink_noise(n, rng) * level * 10.0 ** (VENUE_BROADBAND_DB / 20.0)
    mains = hum(n) * level * 10.0 ** (VENUE_HUM_DB / 20.0)
    hall: NDArray[np.float64] = babble_samples.astype(np.float64) + broadband + mains
    return hall


def noise_for(noise: Samples, n: int, offset: int) -> NDArray[np.float64]:
    """``n`` samples of ``noise`` from ``offset``, wrapping around (a long noise is read as a loop)."""
    if len(noise) == 0:
        raise ValueError("empty noise")
    index = (offset + np.arange(n)) % len(noise)
    return np.asarray(noise[index], dtype=np.float64)


def mix_at_snr(speech: Samples, noise: Samples, snr_db: float, offset: int = 0,
               speech_level_dbfs: float | None = None) -> NDArray[np.int16]:
    """``speech`` plus ``noise`` (read from ``offset``, looped) scaled so that the speech's active
    level is ``snr_db`` over the noise's level (its plain RMS over the span: babble never pauses
    long enough for an active level to differ much, and a steady noise has no pauses); int16. ``speech_level_dbfs``: the speech level to
    mix against when ``speech`` is a recording with gaps whose level was set beforehand (the
    noise runs through the gaps at the same level). A mix that would clip is scaled down whole,
    which keeps the ratio."""
    speech_db = active_level_dbfs(speech) if speech_level_dbfs is None else speech_level_dbfs
    segment = noise_for(noise, len(speech), offset)
    gain = 10.0 ** ((speech_db - snr_db - level_dbfs(segment)) / 20.0)
    mixed = speech.astype(np.float64) + segment * gain
    peak = float(np.max(np.abs(mixed))) if len(mixed) else 0.0
    if peak > INT16_PEAK:
        log.debug("mix at %.0f dB would clip (peak %.0f): scaled down whole", snr_db, peak)
        mixed *= INT16_PEAK / peak
    return to_int16(mixed)
