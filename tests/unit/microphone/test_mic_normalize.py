"""The normalisation step after every engine: numbers and money as the platform writes them,
avatar names capitalised, nothing invented, word timings aligned with what was said."""

from __future__ import annotations

import pytest

from workers.microphone.evaluation import deal_score, deal_terms, normalize
from workers.microphone.normalize import normalize_hypothesis, normalize_text
from workers.microphone.recognizer import Hypothesis, WordTiming


@pytest.mark.parametrize(
    ("spoken", "written"),
    [
        ("three dollars fifty", "$3.50"),
        ("two cups of flour", "2 cups of flour"),
        ("a dozen eggs", "a dozen eggs"),
        ("a cup of sugar", "a cup of sugar"),
        ("i'd like to buy five eggs for two dollars", "i'd like to buy 5 eggs for $2"),
        ("how about eight dollars and fifty cents", "how about $8.50"),
        ("fifty cents", "$0.50"),
        ("seven dollars ninety nine", "$7.99"),
        ("one hundred and twenty five dollars", "$125"),
        ("a hundred dollars", "$100"),
        ("twenty-five eggs", "25 eggs"),
        ("twenty one", "21"),
        ("two point five cups", "2.5 cups"),
        ("five dollars two eggs", "$5 2 eggs"),
        ("i'll take the blue one", "i'll take the blue one"),
        ("that one is fine", "that one is fine"),
        ("i'll take one", "i'll take 1"),
        ("no one", "no one"),
        ("celia i want two eggs", "Celia i want 2 eggs"),
        ("hey watson, what's watson's price?", "hey Watson, what's Watson's price?"),
        # Whisper already writes digits: kept, money made uniform.
        ("Go forward 10 meters.", "Go forward 10 meters."),
        ("I offer $3.50.", "I offer $3.50."),
        ("That is 3 dollars.", "That is $3."),
        ("$2.00 each", "$2 each"),
        ("How about $8 .50 cents?", "How about $8.50?"),  # Whisper's word timings split numbers
        ("How about $8 and $0.50?", "How about $8.50?"),
        ("That is 3 ,000 dollars", "That is $3000"),
        ("$ 20 is too much", "$20 is too much"),  # a currency sign written as a word of its own
        ("How about $8 and 50 cents?", "How about $8.50?"),
        ("How about $8 and fifty cents?", "How about $8.50?"),
        ("a dollar fifty", "$1.50"),
        ("for a dollar.", "for $1."),
        ("a dollar and five cents", "$1.05"),
        ("4 .10 each", "4.10 each"),  # decimals as written, not "4.1"
        # Pieces that make no one number never reach the text: the amount keeps what they say
        # unambiguously (the word keeps what was heard, for the final's doubt).
        ("$4.0 .0 cents", "$4"),
        ("$3.42 .50", "$3"),
        ("$4.00.10 and 2 cups", "$4.10 and 2 cups"),
        ("I'll pay $4. 10. for 3 eggs", "I'll pay $4. for 3 eggs"),
        ("4 dollars and .10 cents", "$4.10"),
        ("I'll pay $4. 10 eggs", "I'll pay $4. 10 eggs"),  # a count of its own
        ("I'll pay $ for it", "I'll pay dollars for it"),
        ("$ four fifty", "$4.50"),
        ("$4 ten", "$4.10"),  # the sign makes "four ten" a price
        ("four ten", "4 10"),
        ("$5 2 eggs", "$5 2 eggs"),
        ("$4 twenty dollars", "$4 $20"),  # two prices, not the cents of one
        ("$4.00 and 50 cents", "$4.50"),  # "$4.00" is "$4"
        ("one dollar .10", "$1.10"),  # a decimal part after a price is a piece of it
        ("$5 $ for it", "$5 for it"),  # a second sign says nothing more
    ],
)
def test_digits(spoken: str, written: str) -> None:
    assert normalize_text(spoken) == written


def test_words_style_keeps_the_engine_words_and_capitalises_names() -> None:
    assert normalize_text("celia three dollars fifty", "words") == "Celia three dollars fifty"


def test_merged_words_keep_the_span_and_the_weakest_confidence() -> None:
    words = [
        WordTiming("watson", 0, 300, 0.9),
        WordTiming("three", 400, 600, 0.8),
        WordTiming("dollars", 600, 900, 0.95),
        WordTiming("fifty", 950, 1200, 0.6),
        WordTiming("each", 1250, 1500, 0.99),
    ]
    hyp = normalize_hypothesis(Hypothesis("watson three dollars fifty each", 0.85, words))
    assert hyp.text == "Watson $3.50 each"
    assert [w.word for w in hyp.words] == ["Watson", "$3.50", "each"]
    assert (hyp.words[1].start_ms, hyp.words[1].end_ms, hyp.words[1].conf) == (400, 1200, 0.6)
    assert hyp.text == " ".join(w.word for w in hyp.words)
    assert hyp.confidence == 0.85


@pytest.mark.parametrize(
    "hostile",
    ["$" + "9" * 400, "9" * 400 + " dollars", "thousand thousand thousand dollars", "and and", "", "   ", "$", "-", "$.5", "1,2,3,4"],
)
def test_hostile_text_is_kept_not_crashed_on(hostile: str) -> None:
    out = normalize_text(hostile)
    assert isinstance(out, str)
    assert len(out.split()) <= len(hostile.split())


def test_wer_form_and_deal_terms() -> None:
    assert normalize("Celia, I'd like 5 eggs for $2.") == normalize("celia i'd like five eggs for two dollars")
    assert deal_terms("six ounces of blueberries and two packets of sugar") == {
        "6": 1, "ounce": 1, "blueberry": 1, "2": 1, "packet": 1, "sugar": 1
    }
    score = deal_score(["i want two eggs", "three dollars fifty"], ["i want eighty chocolate", "$3.50"])
    assert (score.said, score.recalled, score.invented) == (3, 1, 2)
