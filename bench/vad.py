"""Benchmark: webrtcvad against Silero VAD on real prompts in quiet, babble and noise.

Real human prompts (Asterisk, one speaker) separated by 1.5 s gaps are mixed with a background
at several signal-to-noise ratios (speech power over background power, both over the whole
prompt): ``babble``, the other human recordings (the telephone conversation, LibriVox reads)
overlaid four deep, so other voices talk all the time; ``noise``, pink noise (fans, a
venue's hum). Each mix goes through the microphone's segmenter (``[microphone]`` pre-roll,
hangover and energy floor) with each frame classifier, and each detected utterance is matched
to the prompts it overlaps:

- ``found``: prompts overlapped by an utterance (of ``prompts``);
- ``false_starts``: utterances overlapping no prompt (the background taken for the buyer; in the
  room, a false barge-in or a final made of noise);
- ``clipped``: found prompts whose utterance's audio (pre-roll included: what the recogniser
  gets) starts after their speech onset, or which goes on past its utterance's audio (the last
  voiced frame plus the hangover): words cut off;
- ``merged``: utterances spanning two or more prompts (a 1.5 s gap bridged).

Prints ONE JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/vad.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from hardware.audio import SAMPLE_RATE, AudioBlock  # noqa: E402
from scripts import paused_speech  # noqa: E402
from workers.microphone.evaluation import asterisk_corpus  # noqa: E402
from workers.microphone.settings import MicrophoneSettings  # noqa: E402
from workers.microphone.transcriber import segmenter_for  # noqa: E402
from workers.microphone.vad import SpeechEnd, SpeechStart  # noqa: E402
from workers.runtime.config import Config  # noqa: E402

GAP_S = 1.5
BABBLE_DEPTH = 4
"""Background voices talking at once."""


def _speech_span(clip: np.ndarray) -> tuple[int, int]:
    """Where the prompt's energy says speech is (ms from its start): 10 ms frames within 20 dB of its loudest."""
    frames = clip[: len(clip) // 160 * 160].reshape(-1, 160).astype(float)
    rms = np.sqrt((frames**2).mean(axis=1))
    loud = np.nonzero(rms > 0.1 * rms.max())[0]
    return int(loud[0]) * 10, int(loud[-1] + 1) * 10


def _power(x: np.ndarray) -> float:
    return float(np.mean(np.square(x.astype(np.float64)))) + 1e-9


def _pink(n: int, rng: np.random.Generator) -> np.ndarray:
    spectrum = np.fft.rfft(rng.normal(size=n))
    spectrum /= np.sqrt(np.maximum(np.arange(len(spectrum)), 1))
    return np.fft.irfft(spectrum, n)


def _babble(n: int, rng: np.random.Generator) -> np.ndarray:
    voices = [r.load().astype(np.float64) for r in paused_speech.human_recordings() if not r.voice.startswith("human:asterisk")]
    stream = np.concatenate(voices)
    out = np.zeros(n)
    for _ in range(BABBLE_DEPTH):
        start = int(rng.integers(0, len(stream)))
        out += np.resize(np.roll(stream, -start), n)
    return out


def _mix(prompts: list[np.ndarray], background: np.ndarray | None, snr_db: float | None) -> tuple[np.ndarray, list[tuple[int, int]]]:
    gap = np.zeros(int(GAP_S * SAMPLE_RATE))
    parts: list[np.ndarray] = [gap]
    spans: list[tuple[int, int]] = []
    pos = len(gap)
    for clip in prompts:
        on, off = _speech_span(clip)
        spans.append((pos * 1000 // SAMPLE_RATE + on, pos * 1000 // SAMPLE_RATE + off))
        parts += [clip.astype(np.float64), gap]
        pos += len(clip) + len(gap)
    speech = np.concatenate(parts)
    if background is not None and snr_db is not None:
        speech_power = np.mean([_power(c) for c in prompts])
        bg = background[: len(speech)]
        speech = speech + bg * np.sqrt(speech_power / _power(bg) / 10 ** (snr_db / 10))
    return np.clip(speech, -32768, 32767).astype(np.int16), spans


def _score(audio: np.ndarray, spans: list[tuple[int, int]], mic: MicrophoneSettings) -> dict[str, int]:
    segmenter = segmenter_for(mic)
    block = SAMPLE_RATE * mic.block_ms // 1000
    found: list[tuple[int, int]] = []
    audio_from: list[int] = []
    onset = 0
    for offset in range(0, len(audio) - block + 1, block):
        for event in segmenter.process(AudioBlock(audio[offset:offset + block], offset * 1000 // SAMPLE_RATE)):
            if isinstance(event, SpeechStart):
                onset = event.onset_ms
                audio_from.append(event.t_ms)
            elif isinstance(event, SpeechEnd):
                found.append((onset, event.t_ms))
    hit = [[i for i, (a, b) in enumerate(spans) if start < b and end > a] for start, end in found]
    covered = {i for h in hit for i in h}
    clipped = 0
    for i in covered:
        a, b = spans[i]
        mine = [k for k, h in enumerate(hit) if i in h]
        if min(audio_from[k] for k in mine) > a or max(found[k][1] for k in mine) + mic.hangover_ms < b:
            clipped += 1
    return {"found": len(covered), "false_starts": sum(not h for h in hit), "clipped": clipped, "merged": sum(len(h) > 1 for h in hit)}


def run(count: int, snrs: list[float]) -> dict[str, Any]:
    config = Config.load(None, os.environ, {})
    base = config.section(MicrophoneSettings)
    prompts = [s.audio() for s in asterisk_corpus()[:count]]
    rng = np.random.default_rng(7)
    total = sum(len(p) for p in prompts) + (len(prompts) + 1) * int(GAP_S * SAMPLE_RATE)
    backgrounds = {"babble": _babble(total, rng), "noise": _pink(total, rng)}
    conditions: list[tuple[str, np.ndarray | None, float | None]] = [("quiet", None, None)]
    conditions += [(name, bg, snr) for name, bg in backgrounds.items() for snr in snrs]
    results: dict[str, Any] = {}
    for name, background, snr in conditions:
        audio, spans = _mix(prompts, background, snr)
        label = name if snr is None else f"{name}@{snr:g}dB"
        results[label] = {
            engine: _score(audio, spans, base.model_copy(update={"vad_engine": engine})) for engine in ("webrtc", "silero")
        }
    return {"bench": "vad", "prompts": len(prompts), "hangover_ms": base.hangover_ms, "conditions": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=40, help="prompts (default 40)")
    parser.add_argument("--snr", default="10,5,0", help="comma list of SNRs in dB (default 10,5,0)")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.count, [float(s) for s in args.snr.split(",")])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
