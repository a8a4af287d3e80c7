"""Addressee fusion, merging and round checks on synthetic timelines (no I/O)."""

from __future__ import annotations

import pytest

from transcript.completeness import DEFAULT_HOLD_WORDS, Completeness
from transcript.fusion.addressee import GazePolicy, decide
from transcript.fusion.attention import AttentionHistory
from transcript.fusion.names import NameMatcher
from transcript.merging import Merger
from transcript.outgoing import build_message
from transcript.rounds import RoundTracker
from transcript.settings import DEFAULT_GREETINGS, TranscriptSettings
from workers.runtime.messages import RoundState, Transcript, VadEvent

AVATARS = ["Celia", "Watson"]
MATCHER = NameMatcher.build(AVATARS, {"Celia": ["cecilia"]}, DEFAULT_GREETINGS)
POLICY = GazePolicy(lead_ms=200, start_ms=600, start_weight=2.0)
T0 = 1_800_000_000_000


def history(*changes: tuple[float, str]) -> AttentionHistory:
    h = AttentionHistory()
    for since, target in changes:
        h.add(T0 + since, target)
    return h


def final(text: str, start: float, end: float, source: str = "mic", conf: float = 0.9) -> Transcript:
    return Transcript(
        source=source, final=True, utterance_id=f"u{start:g}", text=text, confidence=conf,  # type: ignore[arg-type]
        start=int(T0 + start), end=int(T0 + end), engine="vosk",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Watson, I'd like 5 eggs", "Watson"),
        ("watson i'd like 5 eggs", "Watson"),
        ("Hey Celia how much is milk", "Celia"),
        ("okay so hey celia, milk?", "Celia"),
        ("@Celia 2 cups of sugar", "Celia"),
        ("cecilia two eggs", "Celia"),
        ("Celia's price is too high", "Celia"),
        ("I'd rather buy from Celia", None),
        ("hey there Watson", None),
        ("", None),
        ("so so so so Watson", None),
    ],
)
def test_leading_name(text: str, expected: str | None) -> None:
    assert MATCHER.leading_name(text) == expected


def test_alias_for_unknown_avatar_is_rejected() -> None:
    with pytest.raises(ValueError, match="not an avatar"):
        NameMatcher.build(AVATARS, {"Bob": ["bobby"]})


def test_name_beats_gaze() -> None:
    h = history((-5000, "Celia"))
    d = decide("Watson, two eggs please", T0, T0 + 2000, h, MATCHER, AVATARS, POLICY)
    assert (d.addressee, d.source) == ("Watson", "name")
    assert d.gaze_share == {"Celia": 1.0}


def test_gaze_majority() -> None:
    h = history((-5000, ""), (0, "Watson"), (1200, "Celia"), (1800, ""))
    d = decide("two eggs please", T0, T0 + 2000, h, MATCHER, AVATARS, POLICY)
    assert (d.addressee, d.source) == ("Watson", "gaze")
    assert d.gaze_share == {"": round(400 / 2200, 3), "Watson": round(1200 / 2200, 3), "Celia": round(600 / 2200, 3)}
    assert d.gaze_coverage == 1.0


def test_start_weight_decides_a_close_call() -> None:
    # Watson at the start (-200-800 ms), Celia afterwards (800-2000): plain time favours Celia,
    # the emphasised start favours Watson
    h = history((-5000, "Watson"), (800, "Celia"))
    with_weight = decide("two eggs", T0, T0 + 2000, h, MATCHER, AVATARS, POLICY)
    assert with_weight.addressee == "Watson"
    flat = decide("two eggs", T0, T0 + 2000, h, MATCHER, AVATARS, GazePolicy(lead_ms=200, start_weight=1.0))
    assert flat.addressee == "Celia"


def test_looking_away_means_nobody() -> None:
    h = history((-5000, "Celia"), (100, ""))
    d = decide("how much for milk", T0, T0 + 3000, h, MATCHER, AVATARS, POLICY)
    assert (d.addressee, d.source) == ("", "none")


def test_no_attention_known_means_nobody() -> None:
    d = decide("how much for milk", T0, T0 + 3000, AttentionHistory(), MATCHER, AVATARS, POLICY)
    assert (d.addressee, d.source, d.gaze_coverage) == ("", "none", 0.0)


def test_stale_camera_is_not_trusted() -> None:
    h = history((-5000, "Celia"))
    h.saw_headpose(T0 - 10_000)
    d = decide("milk", T0, T0 + 1000, h, MATCHER, AVATARS, POLICY)
    assert d.addressee == "" and "camera" in d.detail
    h.saw_headpose(T0 + 500)
    assert decide("milk", T0, T0 + 1000, h, MATCHER, AVATARS, POLICY).addressee == "Celia"


def test_history_trims_but_keeps_state_at_horizon() -> None:
    h = AttentionHistory(keep_ms=1000)
    h.add(0, "Celia")
    h.add(100, "Watson")
    h.add(5000, "")
    plain, _ = h.durations(4000, 6000)
    assert plain == {"Watson": 1000, "": 1000}
    assert not h.add(5000, "")  # a retained redelivery changes nothing


def test_merge_gap() -> None:
    m = Merger.from_settings(TranscriptSettings(merge_gap_s=1.2, merge_sources=["mic"], merge_hold="always"))
    assert m.add(final("I would like", 0, 1000, conf=0.8), now_ms=T0 + 1300) == []
    assert m.add(final("five eggs", 2000, 2600, conf=1.0), now_ms=T0 + 2900) == []
    assert m.due(T0 + 4000) == []  # the gap after its end, and the segmenter's start window
    (merged,) = m.due(T0 + 4100)
    assert merged.text == "I would like five eggs"
    assert (merged.start, merged.end) == (T0, T0 + 2600)
    assert merged.confidence == round((0.8 * 3 + 1.0 * 2) / 5, 3)
    # a gap of 1.2 s or more starts a new message
    assert m.add(final("one", 10_000, 10_500), now_ms=T0 + 10_600) == []
    (first,) = m.add(final("two", 11_700, 12_000), now_ms=T0 + 12_100)
    assert first.text == "one" and m.pending is not None and m.pending.text == "two"


def test_a_complete_sentence_is_released_with_its_final() -> None:
    """Only what reads as cut off waits: a complete sentence leaves at once, an unfinished one
    waits for its continuation and leaves as soon as that completes it."""
    m = Merger.from_settings(TranscriptSettings(merge_gap_s=1.2, merge_sources=["mic"]), AVATARS)
    (alone,) = m.add(final("I want two eggs for $3", 0, 1800), now_ms=T0 + 1900)
    assert alone.text == "I want two eggs for $3" and alone.held_because == "" and m.pending is None
    assert m.add(final("I would like three cups of", 5000, 6500), now_ms=T0 + 6600) == []
    assert m.pending is not None and m.pending.held_because == "ends in 'of'"
    (merged,) = m.add(final("flour", 7200, 7600), now_ms=T0 + 7700)
    assert merged.text == "I would like three cups of flour" and m.pending is None
    # still unfinished after the second part: it keeps waiting for a third
    assert m.add(final("hey Watson", 10_000, 10_600), now_ms=T0 + 10_700) == []
    assert m.add(final("I need three", 11_000, 11_700), now_ms=T0 + 11_800) == []
    (three,) = m.add(final("packets of sugar", 12_200, 13_000), now_ms=T0 + 13_100)
    assert three.text == "hey Watson I need three packets of sugar"
    # an unfinished one whose continuation never comes leaves at the end of the gap
    assert m.add(final("and uh", 20_000, 20_500), now_ms=T0 + 20_600) == []
    assert m.due(T0 + 21_900) == [] and [u.text for u in m.due(T0 + 22_000)] == ["and uh"]


def test_speech_restarting_before_the_final_holds_a_complete_sentence() -> None:
    """A recogniser slower than the speaker's pause: the next speech has begun (within the
    gap) when the final of the first part arrives, so the first part waits for it."""
    m = Merger.from_settings(TranscriptSettings(merge_gap_s=1.2, merge_sources=["mic"]), AVATARS)
    m.speech(vad("speech_start", 0, 0), now_ms=T0 + 100)
    m.speech(vad("speech_end", 0, 1000), now_ms=T0 + 1500)
    m.speech(vad("speech_start", 1700, 1700), now_ms=T0 + 1800)
    assert m.add(final("I want two eggs", 0, 1000), now_ms=T0 + 1900) == []
    assert m.pending is not None and m.pending.held_because == "speech started again within the gap"
    assert m.due(T0 + 3000) == []  # it waits for that speech's final, past the gap
    (merged,) = m.add(final("for $3", 1700, 2500), now_ms=T0 + 3100)
    assert merged.text == "I want two eggs for $3"
    # speech that restarted and ended before the final came: its final has final_wait_s to come
    m.speech(vad("speech_start", 5000, 5000), now_ms=T0 + 5100)
    m.speech(vad("speech_end", 5000, 5800), now_ms=T0 + 6300)
    m.speech(vad("speech_start", 6400, 6400), now_ms=T0 + 6500)
    m.speech(vad("speech_end", 6400, 6900), now_ms=T0 + 7300)
    assert m.add(final("I want milk", 5000, 5800), now_ms=T0 + 7400) == []
    assert m.next_due_ms() == T0 + 7300 + 1500
    assert [u.text for u in m.due(T0 + 8800)] == ["I want milk"]  # its final never came
    # speech that began after the gap does not hold the final before it
    m.speech(vad("speech_start", 10_000, 10_000), now_ms=T0 + 10_100)
    m.speech(vad("speech_start", 12_000, 12_000), now_ms=T0 + 12_100)
    (alone,) = m.add(final("that is fine", 10_000, 10_500), now_ms=T0 + 12_200)
    assert alone.text == "that is fine"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I would like five eggs", None),
        ("I accept your offer", None),
        ("how about $3.50", None),
        ("two dollars", None),
        ("can you do 3?", None),
        ("a dozen eggs", None),
        ("Celia, I'll take it.", None),
        ("three cups of", "ends in 'of'"),
        ("Watson, can you sell me 3 cups of?", "ends in 'of'"),  # Whisper's reading of a cut-off sentence
        ("Can you give me?", "ends in 'give' 'me' without the thing given"),
        ("sell us", "ends in 'sell' 'us' without the thing given"),
        ("Can you help me?", None),
        ("Give me two eggs", None),
        ("two eggs and", "ends in 'and'"),
        ("I would like", "ends in 'like'"),
        ("I need the", "ends in 'the'"),
        ("um", "says nothing yet but a greeting or a name"),
        ("I need three", "ends in a number without its unit ('three')"),
        ("I'll pay 4", "ends in a number without its unit ('4')"),
        ("Hey Watson", "says nothing yet but a greeting or a name"),
        ("Hey Watson!", "says nothing yet but a greeting or a name"),
        ("Watson,", "says nothing yet but a greeting or a name"),
        ("Watson, I want eggs,", "trails off with ','"),
        ("I was thinking...", "trails off with '...'"),
        ("I'm in New Jersey now, though.", None),
    ],
)
def test_what_reads_as_unfinished(text: str, reason: str | None) -> None:
    rules = Completeness.build(DEFAULT_HOLD_WORDS, DEFAULT_GREETINGS, AVATARS)
    assert rules.unfinished(text) == reason


def test_giving_verbs_come_from_the_settings() -> None:
    """``merge_hold_giving_verbs`` decides which "<verb> me" waits for the thing given."""
    default = Merger.from_settings(TranscriptSettings(merge_sources=["mic"]))
    assert default.completeness is not None
    assert default.completeness.unfinished("Can you sell me?") == "ends in 'sell' 'me' without the thing given"
    assert default.completeness.unfinished("Can you tell me?") is None
    custom = Merger.from_settings(TranscriptSettings(merge_sources=["mic"], merge_hold_giving_verbs=["Tell"]))
    assert custom.completeness is not None
    assert custom.completeness.unfinished("Can you tell me?") == "ends in 'tell' 'me' without the thing given"
    assert custom.completeness.unfinished("Can you sell me?") is None


def test_a_level_pitch_holds_a_final_that_reads_complete_only_when_configured() -> None:
    """``merge_hold_level_pitch_st``: a final that did not fall waits; a question mark still
    closes it; without the setting (the default), or without a measured pitch, the text decides."""
    on = Merger.from_settings(TranscriptSettings(merge_sources=["mic"], merge_hold_level_pitch_st=-4))
    assert on.completeness is not None
    assert on.completeness.unfinished("Can you give me up.", pitch_end=-1.5) == "its pitch did not fall (-1.5 semitones at the end)"
    assert on.completeness.unfinished("Can you give me up.", pitch_end=-7.0) is None
    assert on.completeness.unfinished("Can you give me up?", pitch_end=2.0) is None
    assert on.completeness.unfinished("Can you give me up.", pitch_end=None) is None
    assert on.completeness.unfinished("two eggs and", pitch_end=-9.0) == "ends in 'and'"
    first = final("Can you give me up", 0, 1400)
    first.pitch_end = -1.0
    assert on.add(first, now_ms=T0 + 1500) == []
    assert on.pending is not None and on.pending.held_because.startswith("its pitch did not fall")
    rest = final("better price for the eggs", 2100, 3400)
    rest.pitch_end = -6.5
    (merged,) = on.add(rest, now_ms=T0 + 3500)
    assert merged.text == "Can you give me up better price for the eggs"
    off = Merger.from_settings(TranscriptSettings(merge_sources=["mic"]))
    assert [u.text for u in off.add(first, now_ms=T0 + 1500)] == ["Can you give me up"]


def said(text: str, start: float, end: float, turn_complete: float | None) -> Transcript:
    part = final(text, start, end)
    part.turn_complete = turn_complete
    return part


def test_the_end_of_turn_model_holds_an_unfinished_turn_and_releases_a_complete_one() -> None:
    """``merge_turn``: a first half the recogniser wrote as a finished sentence waits when the
    model heard the turn go on, and the continuation the model heard end releases it at once;
    a complete turn leaves with its final. A final without the model's verdict is judged by
    its text, whatever the mode."""
    for mode in ("alone", "or_text"):
        merger = Merger.from_settings(TranscriptSettings(merge_sources=["mic"], merge_turn=mode))
        assert merger.add(said("This is Diane.", 0, 1400, 0.08), now_ms=T0 + 1500) == []
        assert merger.pending is not None and "end-of-turn model" in merger.pending.held_because
        (merged,) = merger.add(said("in New Jersey.", 2200, 3300, 0.93), now_ms=T0 + 3400)
        assert merged.text == "This is Diane. in New Jersey."
        assert [u.text for u in merger.add(said("I'll take two eggs.", 9000, 10400, 0.9), now_ms=T0 + 10500)] == [
            "I'll take two eggs."
        ]
        # no verdict (a microphone without the model): the text rules
        assert merger.add(said("two eggs and", 20000, 21000, None), now_ms=T0 + 21100) == []
        assert merger.drain()[0].held_because == "ends in 'and'"


def test_how_the_model_and_the_text_rules_combine() -> None:
    """Text says unfinished ("and"), the model says complete: only ``or_text`` and ``off`` hold
    it; both say unfinished: every mode holds it; only the model: ``alone`` and ``or_text``."""
    cases = {  # mode -> (text only, both, model only)
        "off": (True, True, False),
        "alone": (False, True, True),
        "or_text": (True, True, True),
        "and_text": (False, True, False),
    }
    for mode, expected in cases.items():
        held = []
        for text, p in (("two eggs and", 0.9), ("two eggs and", 0.1), ("Two eggs.", 0.1)):
            merger = Merger.from_settings(TranscriptSettings(merge_sources=["mic"], merge_turn=mode))
            held.append(merger.add(said(text, 0, 1000, p), now_ms=T0 + 1100) == [])
        assert tuple(held) == expected, mode


def vad(event: str, utterance_start: float, at: float) -> VadEvent:
    return VadEvent(source="microphone", event=event, utterance_id=f"u{utterance_start:g}", at=int(T0 + at))  # type: ignore[arg-type]


def test_merge_with_live_microphone_timing() -> None:
    """As a live microphone delivers them: speech 0-1.0 s and 2.0-3.0 s (a 1 s pause). Each
    final comes after its segment's 400 ms hangover and the decoding, so the second final
    arrives (3.6 s) after the first's merge window closed (2.6 s); its voice-activity start
    (heard at 2.2 s) arrives inside the window and keeps the first part waiting for it."""
    first, second = final("I would like", 0, 1400), final("five eggs", 1700, 3400)
    alone = Merger.from_settings(TranscriptSettings(merge_gap_s=1.2, merge_sources=["mic"]))
    assert alone.add(first, now_ms=T0 + 1500) == []
    assert [u.text for u in alone.due(T0 + 2900)] == ["I would like"]  # without the voice activity
    m = Merger.from_settings(TranscriptSettings(merge_gap_s=1.2, merge_sources=["mic"]))
    assert m.add(first, now_ms=T0 + 1500, now_mono=1.5) == []
    m.speech(vad("speech_start", 1700, 2000), now_ms=T0 + 2200)
    assert m.due(T0 + 3300) == []
    m.speech(vad("speech_end", 1700, 3400), now_ms=T0 + 3400)
    (merged,) = m.add(second, now_ms=T0 + 3600, now_mono=3.6)  # complete now: sent with its final
    assert merged.text == "I would like five eggs" and merged.utterance_ids == ["u0", "u1700"]
    assert merged.arrived_mono == 3.6  # the TTL runs from the latest words


def test_speech_that_yields_no_final_releases_the_held_part() -> None:
    """Speech within the gap whose final never comes (dropped as echo, empty) holds the first
    part only until its end plus the final wait; speech after the gap does not hold it."""
    settings = TranscriptSettings(merge_gap_s=1.2, merge_sources=["mic"], merge_final_wait_s=1.5)
    m = Merger.from_settings(settings)
    m.add(final("I would like", 0, 1400), now_ms=T0 + 1500)
    m.speech(vad("speech_start", 1700, 2000), now_ms=T0 + 2200)
    m.speech(vad("speech_end", 1700, 3400), now_ms=T0 + 3400)
    assert m.due(T0 + 4800) == []
    assert [u.text for u in m.due(T0 + 4900)] == ["I would like"]
    m.add(final("one", 10_000, 10_500), now_ms=T0 + 10_600)
    m.speech(vad("speech_start", 11_800, 11_800), now_ms=T0 + 11_600)  # 1.3 s after: a new turn
    assert [u.text for u in m.due(T0 + 12_000)] == ["one"]


def test_typed_is_not_held_and_clock_skew_is_bounded() -> None:
    m = Merger.from_settings(TranscriptSettings(merge_gap_s=1.2, merge_sources=["mic"]))
    (typed,) = m.add(final("@Celia hello", 0, 0, source="typed"), now_ms=T0)
    assert typed.text == "@Celia hello"
    m.add(final("ahead of our clock and", 60_000, 61_000), now_ms=T0)
    assert m.next_due_ms() == T0 + 1200 + 300


def test_round_tracker() -> None:
    tracker = RoundTracker(None, ["round"])
    assert not tracker.check(T0).active and "no round state" in tracker.check(T0).reason
    tracker.update(RoundState(source="avatar", round_id="r1", phase="warmup"))
    assert "warmup" in tracker.check(T0).reason
    tracker.update(RoundState(source="avatar", round_id="r1", phase="round", phase_deadline=T0 + 60_000))
    assert tracker.check(T0).round_id == "r1"
    assert not tracker.check(T0 + 63_000).active
    assert RoundTracker(7, ["round"]).check(T0).round_id == 7


def test_message_body_and_extras() -> None:
    m = Merger.from_settings(TranscriptSettings(merge_gap_s=0, merge_sources=[]))
    part = final("Watson, five eggs", 0, 1500, conf=0.75)
    part.ts = T0 + 1550
    (utterance,) = m.add(part, now_ms=T0 + 1600)
    utterance.released_ms = T0 + 1600
    h = history((-1000, "Celia"))
    d = decide(utterance.text, utterance.start, utterance.end, h, MATCHER, AVATARS, POLICY)
    body = build_message(utterance, d, "abcdefg", 3, timestamp=T0 + 1600)
    assert body == {
        "speaker": "Human", "addressee": "Watson", "text": "Watson, five eggs", "role": "buyer",
        "environmentUUID": "abcdefg", "timestamp": T0 + 1600, "roundId": 3,
        "addresseeSource": "name", "gazeShare": {"Celia": 1.0}, "gazeCoverage": 1.0,
        "sttConfidence": 0.75, "utteranceStart": T0, "utteranceEnd": T0 + 1500, "source": "mic",
        "utteranceIds": ["u0"],
        "stageTimes": {"speech_start": T0, "speech_end": T0 + 1500, "final": T0 + 1550, "released": T0 + 1600},
    }
