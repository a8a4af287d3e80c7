"""A price reaches the text whole or flagged: one amount read from whatever the decoder wrote,
written one way, and the decoder's garbled pieces ("$4 .0 .0.", "$4.00.10", "$4." "10.", a lone
"$") or a money word without its amount ("I'll pay dollars for the eggs") kept out of the text
and listed as the final's doubts, never passed on as if the offer were whole.

Generated amounts ($0.01-$999.99) said every way the decoder writes them, well formed or
garbled, inside sentences, go through faster-whisper's tokenizer and word assembly, the real
word path (:func:`words_of`) and the normaliser; every output is checked, and so are the
held-out utterances that showed both failures.
"""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from formats.written import PEOPLES_AMOUNT
from tests.unit.microphone.test_mic_money import BARE_SIGN, FORMS, price, said_as, segment, spoken, whisper_words
from workers.microphone.engine_whisper import words_of
from workers.microphone.normalize import NO_AMOUNT, normalize_words
from workers.microphone.prices import AMOUNTLESS, GARBLED, doubtful_prices, prices_whole, text_prices_whole
from workers.microphone.recognizer import Hypothesis, WordTiming
from workers.microphone.review import review
from workers.runtime.messages import Transcript

WELL_FORMED = (*FORMS, "sign-then-cents", "sign-then-cents-words", "unit-twice", "decimal-dollars")
"""The forms :func:`said_as` knows, and four more: "$4 10", "$4 ten", "$4.10 dollars", "4.10 dollars"."""
GARBLED_FORMS = ("zeros", "zeros-glued", "double-cents", "conflicting", "sentence-cut", "and-fragment")
"""The decoder's malformed amounts: "$4.0 .0", "$4.0.0", "$4.00.10", "$4.10 .37", "$4. 10.",
"4 dollars and .10 cents"."""
AMOUNTLESS_FORMS = ("lone-sign", "no-amount")
"""A price with no amount: "$", "dollars"."""
CARRIERS = ("I'll pay {} for 3 eggs", "{}?", "How about {} and 2 cups", "Would you take {}.")

STRAY_DECIMAL = re.compile(r"^\W*\.\d")
DIGIT = re.compile(r"\d")
TRAILING = ".,!?"


def phrased(cents: int, form: str) -> tuple[str, str | None] | None:
    """The amount said in ``form``, and the amount the room must read from it (None: none, for
    a price without its amount); None where the form does not apply."""
    dollars, rest = divmod(cents, 100)
    unit = "dollar" if dollars == 1 else "dollars"
    if form in FORMS:
        text = said_as(cents, form)
        return None if text is None else (text, price(cents))
    if form in ("sign-then-cents", "sign-then-cents-words"):  # the sign makes "four ten" a price
        if dollars == 0 or rest == 0:
            return None
        return f"${dollars} {rest if form == 'sign-then-cents' else spoken(rest)}", price(cents)
    if form == "unit-twice":
        return (f"${dollars}.{rest:02d} {unit}", price(cents)) if rest else None
    if form == "decimal-dollars":
        return (f"{dollars}.{rest:02d} dollars", price(cents)) if rest else None
    if form == "zeros":  # the held-out "$4.0" ".0": the whole dollars alone
        return f"${dollars}.0 .0", price(dollars * 100)
    if form == "zeros-glued":
        return f"${dollars}.0.0", price(dollars * 100)
    if form == "double-cents":  # "$4.00.10": the one part that is not zeros, two digits
        return (f"${dollars}.00.{rest:02d}", price(cents)) if rest else None
    if form == "conflicting":  # two parts that say different cents: the whole dollars alone
        other = rest % 98 + 1  # never 0, never rest
        return (f"${dollars}.{rest:02d} .{other:02d}", price(dollars * 100)) if rest else None
    if form == "sentence-cut":  # "$4." "10.": the dollars stand
        return (f"${dollars}. {rest}.", price(dollars * 100)) if rest else None
    if form == "and-fragment":  # "4 dollars and .10 cents"
        return (f"{dollars} {unit} and .{rest:02d} cents", price(cents)) if dollars and rest else None
    if form == "lone-sign":
        return "$", None
    if form == "no-amount":
        return "dollars", None
    raise ValueError(form)


def decoded(text: str) -> tuple[list[WordTiming], list[WordTiming]]:
    """faster-whisper's words for ``text`` (the real word path) and the normaliser's."""
    words = words_of([segment(whisper_words()(text))])
    return words, normalize_words(words)


def check_every_output(heard: list[WordTiming], out: list[WordTiming]) -> list[str]:
    """What must hold of any normalised words with a price in them; the ``$`` amounts."""
    texts = [w.word for w in out]
    assert not [t for t in texts if STRAY_DECIMAL.match(t)], texts  # no ".0", ".10" alone
    assert not [t for t in texts if BARE_SIGN.match(t)], texts  # no "$" alone
    amounts = [t.rstrip(TRAILING) for t in texts if t.startswith("$")]
    assert all(PEOPLES_AMOUNT.fullmatch(a) for a in amounts), texts  # no "$4.0.0", "$4.0", "$4.1"
    assert not [pair for pair in pairwise(texts) if all(DIGIT.search(t) for t in pair)], texts
    # timings aligned: in order, never overlapping, spanning what was heard
    assert all(a.end_ms <= b.start_ms for a, b in pairwise(out)), out
    assert (out[0].start_ms, out[-1].end_ms) == (heard[0].start_ms, heard[-1].end_ms)
    return amounts


@settings(max_examples=600, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cents=st.integers(min_value=1, max_value=99_999),
    form=st.sampled_from(WELL_FORMED + GARBLED_FORMS + AMOUNTLESS_FORMS),
    carrier=st.sampled_from(CARRIERS),
)
def test_every_price_is_whole_or_flagged(cents: int, form: str, carrier: str) -> None:
    said = phrased(cents, form)
    assume(said is not None)
    assert said is not None
    amount, expected = said
    heard, out = decoded(carrier.format(amount))
    amounts = check_every_output(heard, out)
    doubts = doubtful_prices(out)
    context = (carrier.format(amount), [w.word for w in heard], [w.word for w in out], doubts)
    if expected is None:  # a lone sign is the decoder's garble too
        reasons = (GARBLED, AMOUNTLESS) if form == "lone-sign" else (AMOUNTLESS,)
        assert amounts == [] and [d.reasons for d in doubts] == [reasons], context
        assert [w.word.rstrip(TRAILING) for w in out].count(NO_AMOUNT) == 1, context
        return
    assert amounts == [expected], context
    if form in GARBLED_FORMS:
        [doubt] = doubts
        assert doubt.reasons == (GARBLED,) and doubt.text == expected, context
        assert amount.replace(" ", "") in doubt.heard.replace(" ", ""), context  # what the decoder wrote
    else:
        assert doubts == [], context
    assert prices_whole(out) == (form not in GARBLED_FORMS)


PIECES = (
    "$", "$4", "$4.", "$4.0", "$0", "$.5", "$4.00.10", "$1,000", "$12.345", "$3.42", ".0", ".0.", ".10", ".50?", ",000",
    "4", "10", "10.", "4.10", "2", "ten", "fifty", "one", "five", "hundred", "point", "a", "and", "and.", "for", "the",
    "eggs", "cups", "dollars", "dollar", "bucks", "cents",
)
"""Words and pieces the decoder writes around prices, to be strung together in any order."""


@settings(max_examples=400, derandomize=True, deadline=None)
@given(pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=7))
def test_any_run_of_pieces_leaves_no_malformed_price(pieces: list[str]) -> None:
    """Whatever the decoder strings together, a price reaches the text well formed: no lone
    sign, no "$" amount but "$4" or "$4.10", no decimal part right after a price; the timings
    stay in order; and a word that no longer shows what was heard is a garbled price's doubt."""
    out = normalize_words([WordTiming(p, 100 * i, 100 * i + 90) for i, p in enumerate(pieces)])
    texts = [w.word for w in out]
    assert not [t for t in texts if BARE_SIGN.match(t)], texts
    assert all(PEOPLES_AMOUNT.fullmatch(t.rstrip(TRAILING)) for t in texts if t.startswith("$")), texts
    assert not [b for a, b in pairwise(texts) if a.startswith("$") and STRAY_DECIMAL.match(b)], texts
    assert all(a.end_ms <= b.start_ms for a, b in pairwise(out)), out
    garbled = [d.heard for d in doubtful_prices(out) if GARBLED in d.reasons]
    assert garbled == [w.heard for w in out if w.heard], out


# The held-out utterances and the doubts on the final.

def final(words: list[tuple[str, float, float, float]], base_ms: int = 10_000) -> tuple[Hypothesis, list]:
    """A final as the transcriber makes it: the real word path, the normaliser, the review."""
    heard = words_of([segment(words)])
    out = normalize_words(heard)
    return review(Hypothesis(" ".join(w.word for w in out), 0.8, out), base_ms, None, 0.4)


def test_four_dollars_and_ten_cents_garbled_is_flagged_not_passed_on() -> None:
    """Held out: "four dollars and ten cents" decoded as "$4 .0 .0."; the text keeps the whole
    dollars, the doubt what was heard, on the audio clock."""
    hyp, doubts = final([(" $4", 0.0, 0.82, 0.64), (" .0", 0.82, 1.1, 0.5), (" .0.", 1.1, 1.38, 0.9)])
    assert hyp.text == "$4."
    assert [(w.start_ms, w.end_ms) for w in hyp.words] == [(0, 1380)]  # first start, last end
    [doubt] = doubts
    assert (doubt.kind, doubt.text, doubt.heard, doubt.reasons) == ("price", "$4", "$4 .0 .0.", ["garbled"])
    assert (doubt.start, doubt.end, doubt.conf) == (10_000, 11_380, 0.5)


@pytest.mark.parametrize(
    ("pieces", "text", "heard"),
    [
        (["$4.0", ".0."], "$4.", "$4.0 .0."),
        (["$4.", "10."], "$4.", "$4. 10."),
        (["$4.00.10"], "$4.10", "$4.00.10"),
        (["4", "dollars", "and", ".10", "cents"], "$4.10", "4 dollars and .10 cents"),
        (["I'll", "pay", "$", "for", "it"], "I'll pay dollars for it", "$"),
    ],
)
def test_the_decoders_pieces_never_reach_the_text(pieces: list[str], text: str, heard: str) -> None:
    out = normalize_words([WordTiming(p, 100 * i, 100 * i + 90) for i, p in enumerate(pieces)])
    assert " ".join(w.word for w in out) == text
    assert [d.heard for d in doubtful_prices(out)] == [heard]


def test_a_price_without_its_amount_is_a_doubt() -> None:
    """Held out: "I'll pay eight dollars for the eggs" decoded without "eight"."""
    hyp, doubts = final([(" I'll", 0.0, 0.3, 0.9), (" pay", 0.3, 0.6, 0.9), (" dollars", 0.6, 1.0, 0.7),
                         (" for", 1.0, 1.2, 0.9), (" the", 1.2, 1.3, 0.9), (" eggs.", 1.3, 1.7, 0.9)])
    assert hyp.text == "I'll pay dollars for the eggs."
    assert [(d.kind, d.text, d.heard, d.reasons, d.start, d.end) for d in doubts] == [
        ("price", "dollars", "", ["no_amount"], 10_600, 11_000)
    ]
    transcript = Transcript.model_validate({"source": "mic", "final": True, "utterance_id": "u", "text": hyp.text,
                                            "start": 0, "end": 1, "engine": "whisper", "doubts": doubts})
    assert transcript.doubts[0].kind == "price"


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("I'll pay eight dollars for the eggs", True),
        ("I'll pay dollars for the eggs", False),
        ("for dollars", False),
        ("dollars?", False),
        ("how many dollars is that", True),  # said without an amount on purpose
        ("what is that in dollars", True),
        ("a dollar fifty", True),
        (" I'll pay $4.10 for 3 eggs.", True),  # a hypothesis as the decoder wrote it
        (" I'll pay $4 .0 .0. for 3 eggs.", False),
        (" I'll pay $ for 3 eggs.", False),
    ],
)
def test_text_prices_whole_for_the_rescorer(text: str, whole: bool) -> None:
    assert text_prices_whole(text) is whole


def test_the_words_style_keeps_amounts_as_said_and_still_checks_them() -> None:
    words = [WordTiming(w, 0, 0) for w in "eight dollars or a dollar or dollars".split()]
    assert [d.text for d in doubtful_prices(normalize_words(words, "words"))] == ["dollars"]
