"""The gaze window opens at the speech itself, not at the voice-activity pre-roll: the two
gaze-addressed utterances of the corpus that were decided as "nobody" (a gaze shift just
before or during a short utterance) came from that offset."""

from __future__ import annotations

import time

from transcript.fusion.addressee import GazePolicy, decide
from transcript.fusion.attention import AttentionHistory
from transcript.fusion.names import NameMatcher
from transcript.merging import Merger, Utterance
from transcript.settings import TranscriptSettings
from workers.runtime.messages import Transcript, Word

AVATARS = ["Celia", "Watson"]
MATCHER = NameMatcher.build(AVATARS)
POLICY = GazePolicy(lead_ms=200, start_ms=600, start_weight=2.0)
T0 = 1_700_000_000_000
PREROLL_MS = 390
"""What the microphone's segment start precedes the first word by in the corpus."""


def _final(words: list[tuple[str, int, int]], start: int, end: int) -> Transcript:
    return Transcript(
        source="replay", final=True, utterance_id=f"u{start}", text=" ".join(w for w, _, _ in words),  # type: ignore[arg-type]
        confidence=0.9, start=T0 + start, end=T0 + end, engine="pocketsphinx",
        words=[Word(word=w, start=T0 + a, end=T0 + b) for w, a, b in words],
    )


def _utterance(part: Transcript) -> Utterance:
    merger = Merger.from_settings(TranscriptSettings(merge_gap_s=0, merge_sources=[]))
    (utterance,) = merger.add(part, T0, time.monotonic())
    return utterance


def test_speech_start_is_the_first_word() -> None:
    part = _final([("deal", 19_366, 19_700), ("i", 19_700, 19_800), ("take", 19_800, 20_100)], 18_976, 20_533)
    assert _utterance(part).speech_start == T0 + 19_366
    no_words = _final([], 18_976, 20_533)
    assert _utterance(no_words).speech_start == T0 + 18_976


def test_gaze_shift_just_before_a_short_utterance_addresses_the_avatar() -> None:
    # s2 u04: head turns to Celia from 200 ms before the speech; attention confirms Celia at +100 ms
    history = AttentionHistory()
    history.add(T0 + 17_200, "")
    history.add(T0 + 19_467, "Celia")
    history.add(T0 + 21_200, "")
    speech, end = 19_366, 20_533
    part = _final([("deal", speech, speech + 400), ("it", speech + 400, end)], speech - PREROLL_MS, end)
    utterance = _utterance(part)
    at_preroll = decide(part.text, utterance.start, utterance.end, history, MATCHER, AVATARS, POLICY)
    assert at_preroll.addressee == ""  # the pre-roll's silence outweighs the look
    at_speech = decide(part.text, utterance.speech_start, utterance.end, history, MATCHER, AVATARS, POLICY)
    assert (at_speech.addressee, at_speech.source) == ("Celia", "gaze")


def test_gaze_shift_during_speech_addresses_the_avatar() -> None:
    # s2 u05: the turn to Watson starts 150 ms after the speech; attention confirms at +470 ms
    history = AttentionHistory()
    history.add(T0 + 21_200, "")
    history.add(T0 + 23_133, "Watson")
    speech, end = 22_665, 24_455
    part = _final([("i", speech, speech + 200), ("offer", speech + 200, end)], speech - PREROLL_MS, end)
    utterance = _utterance(part)
    decision = decide(part.text, utterance.speech_start, utterance.end, history, MATCHER, AVATARS, POLICY)
    assert (decision.addressee, decision.source) == ("Watson", "gaze")
