"""The pure parts of synthesis: where espeak-ng's word starts, and a sentence engine's pieces
and phrase events (:mod:`hardware.speech_chunked`), without an engine."""

from __future__ import annotations

import numpy as np

from formats.speech_script import Pause, Phrase
from hardware.speech_chunked import Rendering, lead_pieces, phrase_events
from hardware.tts_espeak import word_start


def test_a_word_reported_one_character_late_starts_at_its_first_letter() -> None:
    ssml = "fifty. Deal?"
    assert word_start(ssml, ssml.index("eal") + 1) == ssml.index("Deal")
    assert word_start(ssml, 1) == 0


def test_only_the_first_phrase_is_split_into_a_lead() -> None:
    ssml = '<speak><break time="200ms"/>one two three four five six seven eight nine ten. ' \
           "eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen.</speak>"
    pieces = lead_pieces(ssml, lead_words=3)
    assert isinstance(pieces[0], Pause)
    assert [p.text for p in pieces[1:] if isinstance(p, Phrase)] == [
        "one two three", "four five six seven eight nine ten.",
        "eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen.",
    ]
    assert [getattr(p, "text", None) for p in lead_pieces(ssml, lead_words=0)] == [
        None, "one two three four five six seven eight nine ten.",
        "eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen.",
    ]


def test_marks_land_on_their_words_and_at_the_phrase_end() -> None:
    phrase = Phrase("Deal? Yes.", marks=[(0, "nod"), (1, "smile"), (2, "end")])
    rendering = Rendering(np.zeros(0, np.int16), phonemes=[(0, "d"), (300, "j")], word_starts=[0, 300])
    events = phrase_events(phrase, rendering, at=1000, duration=600)
    assert [(e.kind, e.name, e.audio_ms) for e in events] == [
        ("mark", "nod", 1000), ("word", "Deal", 1000),
        ("mark", "smile", 1300), ("word", "Yes", 1300),
        ("mark", "end", 1600),
        ("phoneme", "d", 1000), ("phoneme", "j", 1300),
    ]
