"""Benchmark: what the end-of-turn model and Silero VAD cost on this machine's CPU.

smart-turn v3.2 (``workers/microphone/turn.py``) runs once per final, on the utterance's last
8 s; Silero VAD (``workers/microphone/vad_silero.py``) runs on every 32 ms of audio. Measured on
the human recordings of the spliced corpus (``scripts/paused_speech.py``): wall and CPU time per
inference (log-mel features and the ONNX run apart), alone and with Whisper decoding on the
other core (``--busy``: the recogniser finishing another utterance, as in the room), and per
hour of speech at the corpus's own rate of utterances (the voice-activity segmenter's count at
the configured hangover).

Prints ONE JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/turn.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from bench.stats import percentile  # noqa: E402
from hardware.audio import SAMPLE_RATE, AudioBlock  # noqa: E402
from scripts import paused_speech  # noqa: E402
from workers.microphone import turn as turn_model  # noqa: E402
from workers.microphone.engines import load_recognizer  # noqa: E402
from workers.microphone.settings import MicrophoneSettings  # noqa: E402
from workers.microphone.transcriber import segmenter_for  # noqa: E402
from workers.microphone.turn_features import last_window, log_mel  # noqa: E402
from workers.microphone.vad import SpeechEnd  # noqa: E402
from workers.microphone.vad_silero import SileroFrames  # noqa: E402
from workers.runtime.config import Config  # noqa: E402

SECONDS_PER_HOUR = 3600


def _percentiles(values: list[float]) -> dict[str, float | None]:
    return {"p50": percentile(values, 50, 2), "p95": percentile(values, 95, 2), "mean": round(float(np.mean(values)), 2)}


def _inferences(model: turn_model.EndOfTurn, clips: list[np.ndarray], repeat: int) -> dict[str, Any]:
    """Per inference: wall and this thread's CPU time, and the features' share of it."""
    wall: list[float] = []
    cpu: list[float] = []
    features: list[float] = []
    for _ in range(repeat):
        for clip in clips:
            audio = clip.astype(np.float32) / 32768.0
            started, started_cpu = time.perf_counter(), time.thread_time()
            model.probability(clip)
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.thread_time() - started_cpu) * 1000)
            started = time.perf_counter()
            log_mel(last_window(audio))
            features.append((time.perf_counter() - started) * 1000)
    return {"count": len(wall), "wall_ms": _percentiles(wall), "cpu_ms": _percentiles(cpu), "features_ms": _percentiles(features)}


def _utterances(clips: list[np.ndarray], mic: MicrophoneSettings) -> int:
    """How many utterances (so finals, so inferences) the segmenter makes of the clips."""
    block = SAMPLE_RATE * mic.block_ms // 1000
    count = 0
    for clip in clips:
        segmenter = segmenter_for(mic)
        padded = np.concatenate([clip, np.zeros(SAMPLE_RATE, np.int16)])
        for offset in range(0, len(padded) - block + 1, block):
            count += sum(isinstance(e, SpeechEnd) for e in segmenter.process(AudioBlock(padded[offset:offset + block], offset // 16)))
    return count


def _silero_cost(clips: list[np.ndarray]) -> dict[str, float]:
    """CPU of Silero VAD per second of audio, fed 20 ms at a time as the segmenter feeds it."""
    frames = SileroFrames()
    audio = np.concatenate(clips)
    started = time.thread_time()
    for offset in range(0, len(audio) - 320 + 1, 320):
        frames.is_speech(audio[offset:offset + 320])
    cpu_s = time.thread_time() - started
    return {"cpu_ms_per_s_of_audio": round(cpu_s * 1000 / (len(audio) / SAMPLE_RATE), 2)}


def _busy_recogniser(mic: MicrophoneSettings, data_dir: Path, clip: np.ndarray, stop: threading.Event) -> None:
    """Whisper decoding one utterance after another, on its own thread (the other core)."""
    recognizer = load_recognizer(mic, data_dir)
    while not stop.is_set():
        stream = recognizer.stream()
        stream.accept(clip)
        stream.final()


def run(repeat: int, busy: bool) -> dict[str, Any]:
    config = Config.load(None, os.environ, {})
    mic = config.section(MicrophoneSettings)
    model = turn_model.load(mic.turn_model_path)
    if model is None:
        raise SystemExit("no end-of-turn model: run scripts/setup.sh")
    clips = [paused_speech._trimmed(r.load()) for r in paused_speech.human_recordings()]
    speech_s = sum(len(c) for c in clips) / SAMPLE_RATE
    model.probability(clips[0])  # onnxruntime's first run allocates
    alone = _inferences(model, clips, repeat)
    result: dict[str, Any] = {"bench": "turn", "clips": len(clips), "speech_s": round(speech_s, 1), "alone": alone}
    if busy:
        stop = threading.Event()
        worker = threading.Thread(target=_busy_recogniser, args=(mic, config.core.data_dir, clips[0], stop), daemon=True)
        worker.start()
        time.sleep(2.0)  # the recogniser loaded and decoding
        result["recogniser_busy"] = _inferences(model, clips, repeat)
        stop.set()
        worker.join()
    utterances = _utterances(clips, mic)
    per_hour = utterances * SECONDS_PER_HOUR / speech_s
    result.update({
        "utterances": utterances,
        "inferences_per_hour_of_speech": round(per_hour),
        "cpu_s_per_hour_of_speech": round(per_hour * alone["cpu_ms"]["mean"] / 1000, 1),
        "silero_vad": _silero_cost(clips),
    })
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="passes over the recordings (default 2)")
    parser.add_argument("--busy", action="store_true", help="also measure with Whisper decoding on another thread")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.repeat, args.busy)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
