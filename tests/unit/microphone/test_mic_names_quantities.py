"""A misheard leading avatar name recovered by sound, doubtful quantities flagged (never rewritten).

The unit tests hold whatever the CPU; the real-audio test asserts properties of the recovery
(it adds no name to a sentence that starts with a sound-alike, never names the wrong avatar)
that do not depend on the exact decode, so they hold under CTranslate2's GENERIC and AVX2 kernels
alike (``CT2_FORCE_CPU_ISA``), where the words Whisper writes differ.
"""

from __future__ import annotations

import pytest

from transcript.fusion.names import NameMatcher
from transcript.settings import DEFAULT_GREETINGS
from workers.microphone.names import NameRecovery, similarity
from workers.microphone.quantities import doubtful_quantities
from workers.microphone.recognizer import Hypothesis, WordTiming
from workers.microphone.review import review
from workers.runtime.messages import Transcript

AVATARS = ("Celia", "Watson")
RECOVERY = NameRecovery.build(AVATARS)
MATCHER = NameMatcher.build(AVATARS, {}, DEFAULT_GREETINGS)


def words(spec: str, gap_ms: int = 0) -> list[WordTiming]:
    """``"Sally,:0.05 no:0.9 deal.:0.9"``: words 300 ms long, ``gap_ms`` apart."""
    out = []
    for i, item in enumerate(spec.split()):
        word, _, conf = item.rpartition(":")
        out.append(WordTiming(word, i * (300 + gap_ms), i * (300 + gap_ms) + 300, float(conf)))
    return out


def text(ws: list[WordTiming]) -> str:
    return " ".join(w.word for w in ws)


@pytest.mark.parametrize(
    ("heard", "expected"),
    [
        ("Sally,:0.05 no:0.7 deal.:0.98", "Celia, no deal."),  # heard at 0.05: the decoder doubted it
        ("Sally,:0.29 what:0.97 is:0.9 your:0.9 price?:0.9", "Celia, what is your price?"),
        ("What's:0.32 a:0.51 no:0.76 deal?:0.9", "Watson, no deal?"),  # two words joined: WTS ~ WTSN
        ("Hey,:0.7 Sally,:0.1 I:0.9 need:0.9 3:0.9 eggs.:0.9", "Hey, Celia, I need 3 eggs."),
    ],
)
def test_an_unsure_sound_alike_standing_apart_is_the_name(heard: str, expected: str) -> None:
    recovered, found = RECOVERY.recover(words(heard))
    assert text(recovered) == expected
    assert found is not None and found.name == MATCHER.leading_name(expected)
    assert recovered[0].start_ms == 0 or recovered[1].start_ms > 0  # timings kept: the name spans what was heard


@pytest.mark.parametrize(
    "heard",
    [
        "Sally,:0.9 no:0.7 deal.:0.98",  # the decoder was sure: said as heard
        "Sadly,:0.09 that:0.9 is:0.9 too:0.9 expensive.:0.9",  # a real word a sentence starts with
        "Certainly,:0.13 I:0.9 only:0.9 have:0.9 $5.:0.9",
        "What's:0.37 in:0.99 the:0.99 box?:0.9",  # goes on with its sentence
        "Sell:0.2 me:0.5 2:0.9 eggs.:0.9",  # a verb and its object
        "Silly:0.3 me,:0.4 I:0.9 forgot:0.9 the:0.9 milk.:0.9",
        "Shelly:0.5 wants:0.4 2:0.2 eggs.:0.9",
        "See:0.8 you:1.0 tomorrow.:1.0",
        "Celia,:0.3 I:0.9 want:0.9 eggs.:0.9",  # the name itself
    ],
)
def test_words_said_for_themselves_stay(heard: str) -> None:
    ws = words(heard)
    recovered, found = RECOVERY.recover(ws)
    assert found is None
    assert recovered == ws


def test_a_pause_sets_a_name_apart_like_a_comma() -> None:
    assert RECOVERY.recover(words("Sally:0.1 how:0.9 much?:0.9"))[1] is not None  # a clause starts
    assert RECOVERY.recover(words("Sally:0.1 likes:0.9 chocolate.:0.9"))[1] is None  # Sally is the subject
    assert RECOVERY.recover(words("Sally:0.1 likes:0.9 chocolate.:0.9", gap_ms=200))[1] is not None


def test_similarity_is_phonetic() -> None:
    assert similarity("what's in", "Watson") == 1.0
    assert similarity("Sally", "Celia") == 1.0
    assert similarity("sadly", "Celia") < 0.7
    assert similarity("eggs", "Watson") < 0.7


def test_sixty_spoons_is_flagged_not_rewritten() -> None:
    ws = words("I:0.9 need:0.9 60:0.8 spoons:0.9 of:0.9 sugar.:0.9")
    hyp, doubts = review(Hypothesis(text(ws), 0.9, ws), 1_000, None, 0.4)
    assert hyp.text == "I need 60 spoons of sugar."
    [doubt] = doubts
    assert (doubt.kind, doubt.text, doubt.reasons, doubt.maybe) == ("quantity", "60 spoons", ["not_a_unit"], "6 teaspoons")
    assert (doubt.start, doubt.end) == (1_600, 2_200)  # on the audio clock


@pytest.mark.parametrize(
    ("heard", "reasons"),
    [
        ("200:0.9 eggs:0.9", ("implausible",)),
        ("2:0.2 cups:0.9", ("unsure",)),
        ("2:0.9 cups:0.3", ("unsure",)),
        ("2:0.9 cups:0.9", None),
        ("12:0.9 eggs:0.9", None),
        ("$5:0.2 for:0.9 eggs:0.9", None),  # money is not a quantity
        ("2:0.9 or:0.9 3:0.9 eggs:0.9", None),
    ],
)
def test_doubtful_quantities(heard: str, reasons: tuple[str, ...] | None) -> None:
    doubts = doubtful_quantities(words(heard), 0.4)
    assert (doubts[0].reasons if doubts else None) == reasons


def test_a_recovered_name_is_a_doubt_and_transcripts_without_doubts_validate() -> None:
    ws = words("Sally,:0.05 2:0.9 eggs.:0.9")
    hyp, doubts = review(Hypothesis(text(ws), 0.5, ws), 0, RECOVERY, 0.4)
    assert hyp.text == "Celia, 2 eggs."
    assert [(d.kind, d.text, d.heard) for d in doubts] == [("name", "Celia", "Sally,")]
    old = Transcript.model_validate({"source": "mic", "final": True, "utterance_id": "u", "text": "x", "start": 0, "end": 1,
                                     "engine": "whisper"})
    assert old.doubts == []  # an older microphone's finals still validate


class Asked:
    """A second decode that records whether it was asked."""

    def __init__(self, heard: str) -> None:
        self.heard, self.calls = heard, 0

    def __call__(self) -> list[WordTiming]:
        self.calls += 1
        return words(self.heard)


def test_an_unsure_real_word_is_the_name_when_the_second_decode_opens_with_it() -> None:
    second = Asked("Celia,:0.4 the:0.5 light:0.6 will:0.9 take:0.9 it.:0.9")
    recovered, found = RECOVERY.recover(words("Sadly,:0.02 the:0.28 light:0.6 will:0.9 take:0.9 it.:0.9"), second)
    assert text(recovered) == "Celia, the light will take it." and second.calls == 1
    assert found is not None and found.second_pass and found.heard == "Sadly,"
    hyp, doubts = review(Hypothesis(text(words("Sadly,:0.02 the:0.3 deal.:0.9")), 0.4,
                                    words("Sadly,:0.02 the:0.3 deal.:0.9")), 1000, RECOVERY, None, Asked("Celia,:0.4 the:0.5 deal.:0.9"))
    assert hyp.text.startswith("Celia,") and doubts[0].reasons == ["sounds_like", "second_pass"]


@pytest.mark.parametrize(
    ("heard", "second_heard", "asked"),
    [
        ("Sadly,:0.02 that:0.9 is:0.9 too:0.9 expensive.:0.9", "Sadly, that is too expensive.", True),  # the second pass keeps the word
        ("Sadly,:0.85 that:0.9 is:0.9 too:0.9 expensive.:0.9", "Celia, that is too expensive.", False),  # sure: never asked
        ("Sadly:0.05 the:0.9 eggs:0.9 are:0.9 gone.:0.9", "Celia, the eggs are gone.", False),  # runs on: no name
        ("Fairly,:0.05 good:0.9 price.:0.9", "Celia, good price.", False),  # not alike enough to ask
    ],
)
def test_a_real_opening_word_stays_unless_the_second_decode_names_the_avatar(heard: str, second_heard: str, asked: bool) -> None:
    second = Asked(" ".join(f"{w}:0.9" for w in second_heard.split()))
    recovered, found = RECOVERY.recover(words(heard), second)
    assert second.calls == int(asked)
    if not asked or second_heard.startswith("Sadly"):
        assert found is None and text(recovered) == text(words(heard))
