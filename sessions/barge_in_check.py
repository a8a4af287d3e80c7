"""Barge-in on real audio: the avatars' own voices played into the microphone path (must never
trigger it) and real human speech over them (should), through the detector the microphone
worker runs.

The echo is what the Avatar Controller really produces: each reply synthesised by the speaker
(each avatar's configured voice and engine) into a WAV, resampled to the microphone's 16 kHz and
set to a given level. The buyer is read human speech (pocketsphinx's LibriVox and other test
recordings), mixed in 1 s after the avatar starts, a given number of dB louder than the echo.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from avatar.settings import AvatarSettings
from hardware.audio import SAMPLE_RATE, level_dbfs
from hardware.audio_files import load_audio
from hardware.speaker import Speaker, WavSink
from workers.microphone.barge_in import BargeInDetector
from workers.microphone.evaluation import Sample

REPLIES: tuple[str, ...] = (
    "How about if I sell you 5 eggs for 3.73 USD.",
    "I can do two cups of flour and a packet of sugar for eight dollars, that is my best price.",
    "Sorry, that is below my cost. Would you take 4 ounces of chocolate for 5 dollars instead?",
    "Deal! Thank you for your business, enjoy the blueberries.",
    "Watson is asking too much. I will give you the same milk for a dollar less.",
    "That is a very fair offer, but I need at least six dollars for the vanilla.",
)
"""Replies as the demo sellers phrase them: prices, quantities, a question, an exclamation."""
BUYER_DELAY_MS = 1000
NOISE_DBFS = -65.0
"""The room's own noise under everything."""


@dataclass
class Trial:
    echo_db: float
    buyer_over_echo_db: float | None
    """``None``: the avatar alone (any trigger is a false one)."""
    fired_at_ms: float | None
    """When the detector fired, from the start of the avatar's speech."""


@dataclass
class BargeInReport:
    trials: list[Trial] = field(default_factory=list)

    def false_triggers(self) -> int:
        return sum(t.fired_at_ms is not None for t in self.trials if t.buyer_over_echo_db is None)

    def echo_only(self) -> int:
        return sum(t.buyer_over_echo_db is None for t in self.trials)

    def detected(self, over_db: float) -> tuple[int, int, list[float]]:
        """(detected, trials, delays after the buyer started) at this level over the echo."""
        mine = [t for t in self.trials if t.buyer_over_echo_db == over_db]
        delays = [t.fired_at_ms - BUYER_DELAY_MS for t in mine if t.fired_at_ms is not None]
        return len(delays), len(mine), delays


def avatar_voices(replies: Iterable[str] = REPLIES) -> list[NDArray[np.int16]]:
    """Each reply in each avatar's voice, as the Avatar Controller's speaker writes it (the
    WAVs are read into memory and their folder removed)."""
    settings = AvatarSettings()
    out: list[NDArray[np.int16]] = []
    with tempfile.TemporaryDirectory(prefix="barge-in-echo-") as directory:
        speaker = Speaker(WavSink(directory, realtime=False))
        try:
            for index, text in enumerate(replies):
                for avatar in sorted(settings.voices):
                    spoken = speaker.speak(text, settings.voice_for(avatar), name=f"{avatar}-{index}")
                    assert spoken.path is not None
                    out.append(load_audio(spoken.path))
        finally:
            speaker.close()
    return out


def at_level(samples: NDArray[np.int16], dbfs: float) -> NDArray[np.float64]:
    voiced = samples[np.abs(samples.astype(np.int32)) > 300]
    current = level_dbfs(voiced if voiced.size else samples)
    return samples.astype(np.float64) * 10 ** ((dbfs - current) / 20)


def _run(mix: NDArray[np.int16], speaking_samples: int, detector: BargeInDetector, block_ms: int) -> float | None:
    block = SAMPLE_RATE * block_ms // 1000
    for start in range(0, len(mix) - block + 1, block):
        chunk = mix[start:start + block]
        if detector.process(chunk, block_ms, avatar_speaking=start < speaking_samples) is not None:
            return (start + block) * 1000 / SAMPLE_RATE
    return None


def run(
    echoes: Sequence[NDArray[np.int16]], buyers: Sequence[Sample], echo_levels_db: Sequence[float],
    buyer_over_echo_db: Sequence[float], margin_db: float, min_ms: int, block_ms: int = 20, seed: int = 7,
) -> BargeInReport:
    rng = np.random.default_rng(seed)
    speech = [load_audio(b.path, raw=b.raw) for b in buyers]
    report = BargeInReport()
    for echo_db in echo_levels_db:
        for index, echo in enumerate(echoes):
            echo_mix = at_level(echo, echo_db)
            noise = rng.normal(0, 32768 * 10 ** (NOISE_DBFS / 20), len(echo_mix))
            fired = _run(np.clip(echo_mix + noise, -32768, 32767).astype(np.int16), len(echo_mix),
                         BargeInDetector(margin_db, min_ms), block_ms)
            report.trials.append(Trial(echo_db, None, fired))
            for over in buyer_over_echo_db:
                buyer = at_level(speech[index % len(speech)], echo_db + over)
                offset = SAMPLE_RATE * BUYER_DELAY_MS // 1000
                mix = np.zeros(max(len(echo_mix), offset + len(buyer)))
                mix[:len(echo_mix)] += echo_mix
                mix[offset:offset + len(buyer)] += buyer
                mix += rng.normal(0, 32768 * 10 ** (NOISE_DBFS / 20), len(mix))
                fired = _run(np.clip(mix, -32768, 32767).astype(np.int16), len(echo_mix),
                             BargeInDetector(margin_db, min_ms), block_ms)
                report.trials.append(Trial(echo_db, over, fired))
    return report


def db_levels(spec: str) -> list[float]:
    return [float(v) for v in spec.split(",") if v.strip()] if spec else []
