"""The end-of-turn model (smart-turn v3.2) on real human speech: our features give the model
Pipecat's own probabilities, it hears a sentence cut off after a function word as unfinished,
and the microphone's finals carry its verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from hardware.audio import SAMPLE_RATE
from hardware.audio_files import ReplaySource
from hardware.clock import VirtualClock
from scripts import fetch_assets, paused_speech
from tests.support.paths import ROOT
from workers.microphone import turn as turn_model
from workers.microphone.engines import load_recognizer
from workers.microphone.settings import MicrophoneSettings
from workers.microphone.transcriber import Transcriber
from workers.microphone.turn_features import WINDOW_SAMPLES
from workers.runtime.config import Config
from workers.runtime.messages import Transcript

SAME_AS_PIPECAT = 1e-4
"""Our probabilities and Pipecat's on the same audio (measured: equal to the last bit; the
features are computed the same way, and onnxruntime runs the same graph)."""
LEAD = np.zeros(SAMPLE_RATE * 3 // 10, np.int16)
"""The silence before speech the corpus puts in front of each recording (300 ms)."""


@pytest.fixture(scope="module")
def model() -> turn_model.EndOfTurn:
    fetch_assets.smart_turn_model()
    loaded = turn_model.load()
    assert loaded is not None
    return loaded


def _cut_recordings(count: int) -> list[tuple[np.ndarray, int]]:
    """The first ``count`` Asterisk prompts the spliced corpus pauses, each with the sample
    after its chosen function word (pocketsphinx's forced alignment, as the benchmark cuts)."""
    align = paused_speech.forced_aligner()
    out: list[tuple[np.ndarray, int]] = []
    for recording in paused_speech.human_recordings():
        if recording.cut_after is None or not recording.voice.startswith("human:asterisk"):
            continue
        samples = paused_speech._trimmed(recording.load())
        cut = paused_speech.cut_sample(samples, recording.words, recording.cut_after, align)
        if cut is not None:
            out.append((samples, cut))
        if len(out) == count:
            break
    return out


def test_our_features_give_pipecats_probabilities(model: turn_model.EndOfTurn, tmp_path: Path) -> None:
    """Pipecat's ``LocalSmartTurnAnalyzerV3`` (its own feature code, its bundled model) and ours
    on real recordings: whole prompts, conversation turns, first halves, and one longer than the
    model's 8 s window (both keep its end)."""
    reference = fetch_assets.pipecat_reference()
    recordings = [np.concatenate([LEAD, paused_speech._trimmed(r.load())]) for r in paused_speech.human_recordings()[:4]]
    talk = [r for r in paused_speech.conversation_recordings()[:3]]
    recordings += [r.load() for r in talk]
    recordings += [clip[: len(clip) // 2] for clip in recordings[:3]]
    recordings.append(np.concatenate(recordings[:6]))
    assert len(recordings[-1]) > WINDOW_SAMPLES
    path = tmp_path / "recordings.npz"
    np.savez(path, **{str(i): r for i, r in enumerate(recordings)})
    env = {**os.environ, "PYTHONPATH": str(reference)}
    answer = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "pipecat_turn_reference.py"), str(path)],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    theirs = json.loads(answer.stdout.strip().splitlines()[-1])
    ours = [model.probability(r) for r in recordings]
    assert np.allclose(ours, theirs, atol=SAME_AS_PIPECAT, rtol=0), list(zip(ours, theirs, strict=True))
    assert min(ours) < 0.5 < max(ours)  # the recordings span both verdicts: a real comparison


def test_a_sentence_cut_after_a_function_word_reads_unfinished(model: turn_model.EndOfTurn) -> None:
    """Twelve real prompts, each whole and cut after a function word near its middle ("please
    enter the | number you wish to call"), ending where the speech ends. Measured: 11 of 12
    halves unfinished (p < 0.5), 9 of 12 whole prompts complete, mean 0.11 against 0.79."""
    cases = _cut_recordings(12)
    assert len(cases) == 12
    halves = np.array([model.probability(np.concatenate([LEAD, samples[:cut]])) for samples, cut in cases])
    wholes = np.array([model.probability(np.concatenate([LEAD, samples])) for samples, _ in cases])
    assert (halves < turn_model.COMPLETE_AT).sum() >= 9, halves.round(2)
    assert (wholes >= turn_model.COMPLETE_AT).sum() >= 7, wholes.round(2)
    assert wholes.mean() - halves.mean() > 0.4


def test_the_microphone_s_finals_carry_the_turn_verdict(model: turn_model.EndOfTurn) -> None:
    """A real prompt paused after "followed by" through the real segmenter and recogniser: two
    finals, each with the model's probability, the first unfinished (measured 0.01)."""
    said = "please enter your password followed by the pound key"
    recording = next(r for r in paused_speech.human_recordings() if " ".join(r.words) == said)
    item = paused_speech.splice(recording, 1000, paused_speech.forced_aligner())
    assert item is not None
    config = Config.load(None, {}, {"microphone.end_of_turn": True})
    mic = config.section(MicrophoneSettings)
    finals: list[Transcript] = []
    transcriber = Transcriber.from_settings(mic, load_recognizer(mic, config.core.data_dir), "replay", lambda _e: None,
                                            lambda t: finals.append(t) if t.final else None)
    assert transcriber.turn is model  # loaded once per process
    for block in ReplaySource(item.path, clock=VirtualClock(start_ms=0, speed=None), block_ms=mic.block_ms).blocks(threading.Event()):
        transcriber.process(block)
    transcriber.flush()
    assert len(finals) == 2, [f.text for f in finals]
    assert all(f.turn_complete is not None and 0 <= f.turn_complete <= 1 for f in finals)
    assert finals[0].turn_complete is not None and finals[0].turn_complete < turn_model.COMPLETE_AT
    default = Config.load(None, {}, {}).section(MicrophoneSettings)  # off unless the merger reads it
    assert Transcriber.from_settings(default, transcriber.recognizer, "replay", lambda _e: None, lambda _t: None).turn is None
