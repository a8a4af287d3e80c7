"""Amounts of money in words: "$4.50" → "four dollars and fifty cents" (a seller's voice) or
"four dollars fifty" (a buyer's words, for the microphone's language models).

Engines read currency badly and differently: espeak-ng says "$4.50" as "dollar four point five
zero" and spells "USD" out letter by letter; a buyer must understand a price the first time it
is said. So amounts are written out in words before any engine sees them, and every amount with
cents one way, whatever the cents: "$6.04" is "six dollars and four cents" and "$2.94" "two
dollars and ninety four cents" (said "two dollars ninety four" beside "six dollars and four
cents", the same seller sounded as if it priced two ways); "$0.75" is "seventy five cents".
Number words come from ``num2words``. Only the spoken text changes: captions keep "$4.50".

Buyers say prices more loosely ("three dollars fifty"): the microphone's n-best rescoring reads
a transcript's amounts as people say them, the words its language models know
(:func:`heard`, :mod:`workers.microphone.rescore`).
"""

from __future__ import annotations

import re

from num2words import num2words

from formats.written import AMOUNT, dollars_and_cents

_BARE_USD = re.compile(r"\bUSD\b", re.IGNORECASE)
MAX_DOLLARS = 10**9
"""Larger amounts are left to the engine (no seller asks for them; num2words has limits)."""


def number_words(number: int) -> str:
    """``number`` as said aloud, in plain words: 21 → "twenty one"."""
    return str(num2words(number)).replace("-", " ").replace(",", "")


def say_amount(dollars: int, cents: int, *, loosely: bool = False) -> str:
    """``dollars`` and ``cents`` as a seller says them: "four dollars and fifty cents"; ``loosely``,
    as buyers say them: "four dollars fifty" (cents under ten keep "and five cents")."""
    cents_words = f"{number_words(cents)} cent" + ("s" if cents != 1 else "")
    if dollars == 0 and cents:
        return cents_words
    unit = "dollar" if dollars == 1 else "dollars"
    if not cents:
        return f"{number_words(dollars)} {unit}"
    if loosely and cents >= 10:
        return f"{number_words(dollars)} {unit} {number_words(cents)}"
    return f"{number_words(dollars)} {unit} and {cents_words}"


def _words(match: re.Match[str], loosely: bool) -> str:
    dollars, cents = dollars_and_cents(match)
    if dollars >= MAX_DOLLARS:
        return match.group(0)
    return say_amount(dollars, cents, loosely=loosely)


def spoken(text: str) -> str:
    """``text`` as a seller's voice says it: every dollar amount in words, one way ("$2.94" →
    "two dollars and ninety four cents"), and "USD" said "dollars"."""
    return _BARE_USD.sub("dollars", AMOUNT.sub(lambda m: _words(m, loosely=False), text))


def heard(text: str) -> str:
    """``text`` with its amounts in words as buyers say them ("$3.50" → "three dollars fifty"):
    what a transcript of a buyer's speech reads as words."""
    return _BARE_USD.sub("dollars", AMOUNT.sub(lambda m: _words(m, loosely=True), text))
