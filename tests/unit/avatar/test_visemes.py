"""The phoneme → viseme map on what espeak-ng really reports for the goods and phrases of a round."""

from __future__ import annotations

import collections
from pathlib import Path

from avatar import visemes
from hardware.speaker import Speaker, VoiceSettings, WavSink

SENTENCES = (
    "Hi, I'm Celia. How about five eggs, two cups of flour and sugar, some milk, "
    "chocolate, vanilla and a packet of blueberries, for thirty-three dollars?",
    "That's my final offer: judge the measure, think it through, then shake on it. Would you say yes?",
)


class _Event:
    def __init__(self, name: str, audio_ms: int) -> None:
        self.name, self.audio_ms = name, audio_ms


def test_every_english_phoneme_has_a_shape_and_few_fall_back(tmp_path: Path) -> None:
    speaker = Speaker(WavSink(tmp_path, realtime=False))
    counts: collections.Counter[str] = collections.Counter()
    for text in SENTENCES:
        result = speaker.speak(text, VoiceSettings("en-us+f3"))
        assert result.phonemes, "espeak-ng reported no phoneme events"
        assert [p.audio_ms for p in result.phonemes] == sorted(p.audio_ms for p in result.phonemes)
        assert result.phonemes[-1].audio_ms <= result.duration_s * 1000
        counts.update(visemes.viseme(p.name) for p in result.phonemes)
    assert set(counts) == set(visemes.VISEMES)  # the sentences use every shape
    cons_like = ("t", "d", "n", "l", "s", "z", "k", "g", "r", "h")
    assert all(visemes.viseme(p) == visemes.FALLBACK for p in cons_like)
    assert counts["rest"] >= len(SENTENCES)


def test_known_phonemes_map_as_documented() -> None:
    table = {"_": "rest", "_:": "rest", "_!": "rest", "p": "closed", "m": "closed", "f": "fv", "v": "fv",
             "T": "th", "D": "th", "tS": "ch", "S": "ch", "aI": "aa", "A:": "aa", "V": "aa", "E": "e",
             "@": "e", "3:": "e", "eI": "e", "i:": "ee", "I": "ee", "I#": "ee", "O:": "o", "0": "o", "oU": "o",
             "u:": "u", "U@": "u", "w": "u", "x": "cons", "": "rest"}
    assert {phoneme: visemes.viseme(phoneme) for phoneme in table} == table


def test_timeline_merges_repeats_and_continues_a_chunk() -> None:
    events = [_Event("m", 0), _Event("b", 30), _Event("aI", 60), _Event("_", 200)]
    assert visemes.timeline(events) == [(0, "closed"), (60, "aa"), (200, "rest")]
    assert visemes.timeline([_Event("_:", 250), _Event("t", 300)], after="rest") == [(300, "cons")]
    assert visemes.timeline(reversed(events)) == visemes.timeline(events)  # ordered by time
