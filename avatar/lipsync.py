"""How well a mouth timeline follows its audio: the lip-sync measure of tests and benchmarks.

Every word after a pause must open the mouth when the sound starts. Where the sound starts is
read from the audio itself (not from any engine's report), so the measure holds the same for
every speech engine: the energy envelope (10 ms window, 5 ms hop) rising over 0.5 % of its peak
(-46 dB) after at least 150 ms below it. The level is low enough to hear a word's first
consonant: an /f/ sits about 30 dB under the vowels and a /th/ lower still, and at 5 % the
measure started "for" at its vowel, 100 ms after the sound (and the lips) really started.
Engine output is clean (its silence sits near -60 dB), so the level still finds only speech. The timeline opens the
mouth where a shape other than ``rest`` follows a rest held as long (a rest of a few
milliseconds between two words is not a pause the audio shows either).
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

from avatar.visemes import REST, Timeline

FRAME_MS = 5
SILENCE_BEFORE_ONSET_MS = 150
ONSET_LEVEL = 0.005
"""Fraction of the envelope's peak above which audio counts as sound."""


def voiced_onsets(path: Path) -> list[int]:
    """Where speech starts again after a pause in the WAV at ``path``, in ms."""
    with wave.open(str(path), "rb") as wav:
        rate = wav.getframerate()
        samples = np.frombuffer(wav.readframes(wav.getnframes()), np.int16).astype(np.float64)
    hop = rate * FRAME_MS // 1000
    energy = np.sqrt(np.convolve(samples**2, np.ones(2 * hop) / (2 * hop), "same"))[::hop]
    active = energy > ONSET_LEVEL * energy.max()
    onsets, quiet = [], SILENCE_BEFORE_ONSET_MS // FRAME_MS
    for index, on in enumerate(active):
        if on and quiet >= SILENCE_BEFORE_ONSET_MS // FRAME_MS:
            onsets.append(index * FRAME_MS)
        quiet = 0 if on else quiet + 1
    return onsets


def mouth_opens(timeline: Timeline) -> list[int]:
    """Where the timeline opens the mouth after a rest of at least ``SILENCE_BEFORE_ONSET_MS``
    (or at its start), in ms."""
    opens = []
    for i, (ms, shape) in enumerate(timeline):
        if shape == REST:
            continue
        if i == 0 or (timeline[i - 1][1] == REST and (i == 1 or ms - timeline[i - 1][0] >= SILENCE_BEFORE_ONSET_MS)):
            opens.append(ms)
    return opens


def errors_ms(path: Path, timeline: Timeline) -> list[int] | None:
    """Per audio onset, how far the nearest mouth opening of the timeline (after any rest) is
    from the sound starting; ``None`` when the timeline never opens the mouth. Nearest, not
    n-th: a pause that the audio shows and the timeline makes a little shorter (or the other
    way round) must not shift every later pair."""
    onsets = voiced_onsets(path)
    opens = [ms for i, (ms, shape) in enumerate(timeline) if shape != REST and (i == 0 or timeline[i - 1][1] == REST)]
    if not opens:
        return None
    return [min(abs(onset - ms) for ms in opens) for onset in onsets]
