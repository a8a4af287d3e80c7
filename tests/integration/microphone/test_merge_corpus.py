"""Merging on speech: utterances spoken with a pause mid-sentence, and complete ones, through
the real segmenter and the default recogniser, then the transcript worker's merger on the
audio's clock (``sessions/merge_check.py``; the full corpus and figures: ``bench/merging.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scripts import paused_speech
from sessions import merge_check
from transcript.settings import TranscriptSettings
from workers.microphone.engines import load_recognizer
from workers.microphone.settings import MicrophoneSettings
from workers.runtime.config import Config

VOICE = "en-us"
ONE_MESSAGE_BOUND = 0.6
"""Of the hesitation pauses heard as two finals, the share that must become one message.
Measured by bench/merging.py on the whole corpus: 0.83 with Whisper, 0.62 with pocketsphinx; the
recogniser's errors on short first halves ("how about two eggs and" heard as "How about 2
examples"), not the merger, decide the rest (this voice's ten items: a bound with room for one
more misheard half)."""


DECODE_MS = 650.0
"""Each final arrives this long after its last block: the speech end -> final p95 of
``bench/stt.py`` on this 2-core machine. A figure, not the decode time of the moment, so what the
merger decides does not move with the machine's load (``bench/merging.py`` measures it live)."""


@pytest.fixture(scope="module")
def report() -> merge_check.MergeReport:
    items = paused_speech.corpus((VOICE,), (700,))
    config = Config.load(None, os.environ, {})
    mic = config.section(MicrophoneSettings)
    return merge_check.run(items, load_recognizer(mic, config.core.data_dir), mic, TranscriptSettings(), config.core.avatars,
                           decode_ms=DECODE_MS)


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


def test_a_pause_spliced_into_human_speech_lands_between_the_words(tmp_path: Path) -> None:
    """The spliced corpus pauses a real recording after a chosen word: the cut lies in the
    boundary pocketsphinx's forced alignment finds, and the recording is kept whole around it."""
    recordings = {" ".join(r.words): r for r in paused_speech.human_recordings()}
    recording = recordings["please check the number and dial again"]
    assert recording.voice == "human:asterisk" and recording.words[recording.cut_after] == "the"
    align = paused_speech.forced_aligner()
    samples = paused_speech._trimmed(recording.load())
    found = align(samples, recording.words)
    assert [w for w, _, _ in found] == list(recording.words)
    the_end, number_start = found[2][2], found[3][1]
    cut = paused_speech.cut_sample(samples, recording.words, recording.cut_after, align)
    assert cut is not None
    margin = paused_speech.CUT_SEARCH_MS
    assert min(the_end, number_start) - margin <= cut * 1000 / 16000 <= max(the_end, number_start) + margin
    item = paused_speech.splice(recording, 700, align, out_dir=tmp_path)
    assert item is not None and item.parts == ("please check the", "number and dial again")
    spliced = paused_speech.load_audio(item.path)
    expected = len(samples) + 16 * (paused_speech.LEAD_MS + 700 + paused_speech.TAIL_MS)
    assert abs(len(spliced) - expected) <= 1
    pause = spliced[16 * paused_speech.LEAD_MS + cut: 16 * paused_speech.LEAD_MS + cut + 16 * 700]
    assert not pause.any()
    assert paused_speech.splice(recording, 700, lambda *_: [], out_dir=tmp_path) is not None  # the cut is cached
