"""Merging on speech: utterances spoken with a pause mid-sentence, and complete ones, through
the real segmenter and the default recogniser, then the transcript worker's merger on the
audio's clock (``sessions/merge_check.py``; the full corpus and figures: ``bench/merging.py``)."""

from __future__ import annotations

import os

import pytest

from sessions import merge_check
from tests.helpers import load_script
from transcript.settings import TranscriptSettings
from workers.config import Config
from workers.microphone.engines import load_recognizer
from workers.microphone.settings import MicrophoneSettings

VOICE = "en-us"
ONE_MESSAGE_BOUND = 0.6
"""Of the hesitation pauses heard as two finals, the share that must become one message.
Measured by bench/merging.py on the whole corpus: 0.83 with Whisper, 0.62 with pocketsphinx; the
recogniser's errors on short first halves ("how about two eggs and" heard as "How about 2
examples"), not the merger, decide the rest (this voice's ten items: a bound with room for one
more misheard half)."""


@pytest.fixture(scope="module")
def report() -> merge_check.MergeReport:
    corpus = load_script("paused_speech")
    items = corpus.corpus((VOICE,), (700,))
    config = Config.load(None, os.environ, {})
    mic = config.section(MicrophoneSettings)
    return merge_check.run(items, load_recognizer(mic, config.core.data_dir), mic, TranscriptSettings(), config.core.avatars)


def test_paused_sentences_arrive_as_one_message(report: merge_check.MergeReport) -> None:
    hesitations = report.of_kind("hesitation")
    assert sum(len(r.finals) > 1 for r in hesitations) >= len(hesitations) - 1  # the pause really splits them
    share = report.one_message_share("hesitation")
    assert share is not None and share >= ONE_MESSAGE_BOUND, [(r.finals, r.messages) for r in hesitations]
    # a held part waits for its continuation, never longer than the gap and the start window
    settings = TranscriptSettings()
    limit = (settings.merge_gap_s + settings.merge_vad_wait_s) * 1000
    assert all(w <= limit for r in hesitations for w in r.wait_ms)


def test_complete_sentences_are_not_held(report: merge_check.MergeReport) -> None:
    complete = report.of_kind("complete")
    released = [r for r in complete if r.held_because == [""]]
    assert len(released) >= len(complete) - 1, [(r.finals, r.held_because) for r in complete]
    assert all(r.wait_ms == [0.0] for r in released)
