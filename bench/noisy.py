"""Speech in a noisy venue, for ``bench/stt.py --snr``: the corpus mixed into the project's babble,
an enhancer in front, the issue's per-utterance scores, and what babble alone does to the VAD and
to barge-in.

Scores per utterance (the negotiation corpus: every sentence says an amount or quantity, a third
start with an avatar's name):

- ``exact``: every number (amounts, quantities, prices) heard as said — same numbers, same
  counts — and the leading name, when the sentence has one, found by the Rich Transcript worker's
  own :class:`~transcript.fusion.names.NameMatcher` (what addresses the message with no camera);
- ``prices_corrupted``: sentences saying a price whose prices were not heard exactly;
- ``names_heard``: sentences starting with an avatar's name whose transcript starts with it;
- ``gave_nothing``: sentences with no final at all.

Babble alone: the project's six-talker babble (no target speech) through the segmenter as
``[microphone]`` configures it (false utterance starts per minute, and how much of the time an
utterance is open), and through :class:`~workers.microphone.barge_in.BargeInDetector` while an
avatar speaks (``sessions/barge_in_check.py``'s echoes; any trigger is a false one).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hardware.audio import SAMPLE_RATE, AudioBlock, level_dbfs
from transcript.fusion.names import NameMatcher
from transcript.settings import DEFAULT_GREETINGS
from workers.microphone import enhance
from workers.microphone.evaluation import normalize
from workers.microphone.noise import mix_at_snr, noise_for, set_active_level, to_int16
from workers.microphone.noise_floor import SPEECH_LEVEL_DBFS
from workers.microphone.settings import MicrophoneSettings
from workers.microphone.transcriber import segmenter_for
from workers.microphone.vad import SpeechStart

AVATARS = ("Celia", "Watson")
QUIET = "quiet"
QUIETER_SNRS = (30.0, 40.0)
"""Babble levels the VAD is also measured at, to find where it stops opening utterances."""
_NUMBER = re.compile(r"^\$?\d+(?:\.\d+)?")


def parse_snrs(spec: str) -> list[float | None]:
    """``quiet,20,10`` → ``[None, 20.0, 10.0]`` (``None``: no noise added)."""
    out: list[float | None] = []
    for item in (s.strip() for s in spec.split(",")):
        if item:
            out.append(None if item == QUIET else float(item))
    return out


def matcher() -> NameMatcher:
    return NameMatcher.build(AVATARS, {}, DEFAULT_GREETINGS)


def numbers(text: str) -> Counter[str]:
    """Amounts, quantities and prices said ("$5", "2", "3.50")."""
    out: Counter[str] = Counter()
    for word in normalize(text).split():
        m = _NUMBER.match(word)
        if m:
            out[m.group(0)] += 1
    return out


@dataclass(frozen=True)
class Verdict:
    """One utterance scored: does its leading name and every number stand as said?"""

    named: bool
    name_ok: bool
    priced: bool
    prices_ok: bool
    numbers_ok: bool

    @property
    def exact(self) -> bool:
        return self.numbers_ok and self.name_ok


def verdict(names: NameMatcher, reference: str, hypothesis: str) -> Verdict:
    said, got = numbers(reference), numbers(hypothesis)
    name = names.leading_name(reference)
    prices = Counter({k: v for k, v in said.items() if k.startswith("$")})
    return Verdict(
        named=name is not None,
        name_ok=name is None or names.leading_name(hypothesis) == name,
        priced=bool(prices),
        prices_ok=prices == Counter({k: v for k, v in got.items() if k.startswith("$")}),
        numbers_ok=said == got,
    )


def utterance_scores(references: Sequence[str], hypotheses: Sequence[str], finals: Sequence[int]) -> dict[str, Any]:
    """The issue's table for one condition (``finals``: how many finals each sample got)."""
    names = matcher()
    verdicts = [verdict(names, ref, hyp) for ref, hyp in zip(references, hypotheses, strict=True)]
    return {
        "exact": f"{sum(v.exact for v in verdicts)}/{len(verdicts)}",
        "prices_corrupted": f"{sum(v.priced and not v.prices_ok for v in verdicts)}/{sum(v.priced for v in verdicts)}",
        "names_heard": f"{sum(v.named and v.name_ok for v in verdicts)}/{sum(v.named for v in verdicts)}",
        "gave_nothing": sum(1 for n in finals if n == 0),
    }


def misses(references: Sequence[str], hypotheses: Sequence[str]) -> list[dict[str, str]]:
    """The utterances that were not exact, as said and as heard (``bench/stt.py --misses``)."""
    names = matcher()
    return [{"said": ref, "heard": hyp} for ref, hyp in zip(references, hypotheses, strict=True)
            if not verdict(names, ref, hyp).exact]


def noisy(recording: np.ndarray, noise: np.ndarray | None, snr_db: float | None, seed: int) -> np.ndarray:
    """The laid-out corpus (samples already at :data:`SPEECH_LEVEL_DBFS`) with ``noise`` running
    through it at ``snr_db`` under the speech, from a seeded offset; unchanged for quiet."""
    if noise is None or snr_db is None:
        return recording
    offset = int(np.random.default_rng(seed).integers(0, len(noise)))
    return mix_at_snr(recording, noise, snr_db, offset, speech_level_dbfs=SPEECH_LEVEL_DBFS)


def at_speech_level(samples: np.ndarray) -> np.ndarray:
    return to_int16(set_active_level(samples, SPEECH_LEVEL_DBFS))


def enhanced(name: str, recording: np.ndarray, blend: float = 0.0) -> tuple[np.ndarray, dict[str, Any]]:
    """``recording`` through enhancer ``name`` block by block, with ``blend`` of the original mixed
    back (``[microphone] enhance_blend``); its CPU cost as a real-time factor (process CPU seconds
    per second of audio, one thread)."""
    if name == "none":
        return recording, {"enhance": "none"}
    enhancer = enhance.load(name, blend)
    assert enhancer is not None
    started = time.process_time()
    out = enhance.run(enhancer, recording)
    cpu = time.process_time() - started
    return out, {"enhance": name, "package": enhance.PACKAGES[name], "enhance_blend": blend,
                 "enhance_rtf_cpu": round(cpu / (len(recording) / SAMPLE_RATE), 4),
                 "enhance_delay_ms": enhancer.delay_samples * 1000 // SAMPLE_RATE}


def vad_false_starts(noise: np.ndarray, noise_dbfs: float, settings: MicrophoneSettings) -> dict[str, Any]:
    """Babble alone at ``noise_dbfs`` (RMS) through the configured segmenter: utterances opened
    per minute and the share of time one is open (each would be sent to the recogniser)."""
    samples = to_int16(noise.astype(np.float64) * 10 ** ((noise_dbfs - level_dbfs(noise)) / 20))
    s = settings
    segmenter = segmenter_for(s)
    block = SAMPLE_RATE * s.block_ms // 1000
    starts = open_blocks = 0
    for i in range(0, len(samples) - block + 1, block):
        for event in segmenter.process(AudioBlock(samples[i:i + block], i * 1000 // SAMPLE_RATE)):
            starts += isinstance(event, SpeechStart)
        open_blocks += segmenter.in_speech
    minutes = len(samples) / SAMPLE_RATE / 60
    return {"noise_dbfs": noise_dbfs, "starts_per_min": round(starts / minutes, 1),
            "open_share": round(open_blocks * block / len(samples), 3)}


def barge_in_false_triggers(noise: np.ndarray, echo_dbfs: float, babble_over_echo_db: Sequence[float],
                            settings: MicrophoneSettings, seed: int = 7) -> list[dict[str, Any]]:
    """Each avatar reply (both avatars' voices) at ``echo_dbfs`` with babble at each level
    relative to the echo running through it and no buyer: every barge-in is a false one."""
    from sessions.barge_in_check import _run, at_level, avatar_voices
    from workers.microphone.barge_in import BargeInDetector
    echoes = avatar_voices()
    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = []
    for over in babble_over_echo_db:
        fired = 0
        for echo in echoes:
            echo_mix = at_level(echo, echo_dbfs)
            segment = noise_for(noise, len(echo_mix), int(rng.integers(0, len(noise))))
            segment *= 10 ** ((echo_dbfs + over - level_dbfs(segment)) / 20)
            mix = to_int16(echo_mix + segment)
            detector = BargeInDetector(settings.barge_in_margin_db, settings.barge_in_min_ms)
            fired += _run(mix, len(mix), detector, settings.block_ms) is not None
        out.append({"echo_dbfs": echo_dbfs, "babble_over_echo_db": over, "false_triggers": f"{fired}/{len(echoes)}"})
    return out


def babble_alone(noise: np.ndarray, snrs: Sequence[float], settings: MicrophoneSettings) -> dict[str, Any]:
    """One JSON line: the VAD on babble alone at the level each SNR puts it (speech at
    :data:`SPEECH_LEVEL_DBFS`), and barge-in false triggers with babble around the echo's level."""
    return {
        "bench": "stt",
        "measure": "babble_alone",
        "speech_level_dbfs": SPEECH_LEVEL_DBFS,
        "noise_seconds": round(len(noise) / SAMPLE_RATE),
        "vad": [{"snr_db": snr, **vad_false_starts(noise, SPEECH_LEVEL_DBFS - snr, settings)}
                for snr in sorted({*snrs, *QUIETER_SNRS}, reverse=True)],
        "barge_in": barge_in_false_triggers(noise, -30.0, (-10.0, -5.0, 0.0, 5.0), settings),
    }
