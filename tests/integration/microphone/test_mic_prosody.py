"""The pitch an utterance ends on (``workers/microphone/prosody.py``): on tones of known pitch,
and on real human speech, where a finished statement ends low and the same sentence cut after
a function word does not; the microphone's finals carry it."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from hardware.audio import SAMPLE_RATE
from hardware.audio_files import FileSource, write_wav
from scripts import paused_speech
from workers.microphone.engine_pocketsphinx import PocketsphinxRecognizer
from workers.microphone.prosody import PitchTracker
from workers.microphone.settings import MicrophoneSettings
from workers.microphone.transcriber import Transcriber
from workers.runtime.messages import Transcript

LEVEL_PITCH_ST = -4.0
"""The threshold the merger would use (``merge_hold_level_pitch_st``)."""
STATEMENTS = (
    "please check the number and dial again",
    "please enter the number you wish to call",
    "you have been kicked from this conference",
)
"""Asterisk prompts (one human speaker), each paused by the corpus after a function word."""


def tone(hz: list[tuple[float, float]]) -> np.ndarray:
    """A voiced-like signal (fundamental and second harmonic): (frequency, seconds) pieces."""
    f0 = np.concatenate([np.full(int(seconds * SAMPLE_RATE), freq) for freq, seconds in hz])
    phase = 2 * np.pi * np.cumsum(f0) / SAMPLE_RATE
    return (3000 * np.sin(phase) + 1500 * np.sin(2 * phase)).astype(np.int16)


def ending(samples: np.ndarray, block: int = 480) -> float | None:
    tracker = PitchTracker()
    for offset in range(0, len(samples), block):
        tracker.accept(samples[offset: offset + block])
    return tracker.ending_st()


@pytest.mark.parametrize(("pieces", "expected"), [
    ([(200, 0.9), (150, 0.1)], 12 * np.log2(150 / 200)),
    ([(120, 0.9), (180, 0.1)], 12 * np.log2(180 / 120)),
    ([(250, 1.0)], 0.0),
    ([(90, 0.5), (100, 0.5)], 12 * np.log2(100 / 95)),
])
def test_the_ending_of_tones_in_semitones(pieces: list[tuple[float, float]], expected: float) -> None:
    assert ending(tone(pieces)) == pytest.approx(expected, abs=0.4)


def test_too_little_voice_says_nothing_and_blocks_do_not_matter() -> None:
    assert ending(np.zeros(SAMPLE_RATE, dtype=np.int16)) is None
    assert ending(tone([(200, 0.05)])) is None
    signal = tone([(220, 0.7), (170, 0.2)])
    assert ending(signal, block=160) == ending(signal, block=len(signal))


def test_statements_end_low_and_their_first_parts_do_not() -> None:
    recordings = {" ".join(r.words): r for r in paused_speech.human_recordings()}
    align = paused_speech.forced_aligner()
    for text in STATEMENTS:
        recording = recordings[text]
        samples = paused_speech._trimmed(recording.load())
        cut = paused_speech.cut_sample(samples, recording.words, recording.cut_after, align)
        whole, first = ending(samples), ending(samples[:cut])
        assert whole is not None and whole < LEVEL_PITCH_ST, (text, whole)
        assert first is not None and first > LEVEL_PITCH_ST, (text, first)


def test_a_final_carries_the_pitch_it_ended_on(tmp_path: Path) -> None:
    """Through the microphone's transcriber (real segmenter, pocketsphinx), a human statement
    and the same statement cut after "the" give finals whose ``pitch_end`` tells them apart."""
    recordings = {" ".join(r.words): r for r in paused_speech.human_recordings()}
    recording = recordings[STATEMENTS[0]]
    path = paused_speech.splice(recording, 1000, paused_speech.forced_aligner(), out_dir=tmp_path).path
    whole = tmp_path / "whole.wav"
    write_wav(whole, paused_speech.load_audio(paused_speech.whole(recording, out_dir=tmp_path).path))
    recognizer = PocketsphinxRecognizer(biasing=False, cache_dir=tmp_path / "ps")
    pitches: dict[str, list[float | None]] = {}
    for name, wav in (("paused", path), ("whole", whole)):
        finals: list[Transcript] = []
        transcriber = Transcriber.from_settings(
            MicrophoneSettings(), recognizer, "file", lambda _e: None, finals.append, measure_pitch=True
        )
        for block in FileSource(wav).blocks(threading.Event()):
            transcriber.process(block)
        transcriber.flush()
        pitches[name] = [f.pitch_end for f in finals if f.final]
    assert len(pitches["paused"]) == 2 and len(pitches["whole"]) == 1, pitches
    first, rest = pitches["paused"]
    assert first is not None and first > LEVEL_PITCH_ST, pitches
    assert pitches["whole"][0] is not None and pitches["whole"][0] < LEVEL_PITCH_ST, pitches
    assert rest is not None and rest < LEVEL_PITCH_ST, pitches  # the second part ends the statement
    unmeasured: list[Transcript] = []
    transcriber = Transcriber.from_settings(MicrophoneSettings(), recognizer, "file", lambda _e: None, unmeasured.append)
    for block in FileSource(whole).blocks(threading.Event()):
        transcriber.process(block)
    transcriber.flush()
    assert [f.pitch_end for f in unmeasured if f.final] == [None]  # not measured unless the merger reads it
