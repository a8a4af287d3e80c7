"""Amounts of money in words: "$4.50" → "four dollars fifty", "$6.04" → "six dollars oh four".

Engines read currency badly and differently: espeak-ng says "$4.50" as "dollar four point five
zero" and spells "USD" out letter by letter; a buyer must understand a price the first time it
is said. So amounts are written out in words before any engine sees them, every amount with
cents one way, the dollars then the cents as two digits: "$2.94" is "two dollars ninety four"
and "$6.04" "six dollars oh four" (said "six dollars and four cents" beside "two dollars ninety
four", the same seller sounded as if it priced two ways); "$0.75" is "seventy five cents".
"... and ninety four cents" throughout was measured too, and the room's listener misheard it more
often: Festival's "forty cents" and "eighty cents" (``bench/voices.py``: Celia's word error
rate 0.043 against 0.017, 13 of 15 lines' deal terms exact against 14). Number words come from
``num2words``. Only the spoken text changes: captions keep "$4.50".

Buyers say small cents the long way too ("six dollars and four cents"): the microphone's n-best
rescoring reads a transcript's amounts so, the words its language models know (:func:`heard`,
:mod:`workers.microphone.rescore`).
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
    """``dollars`` and ``cents`` as a seller says them: "four dollars fifty", "six dollars oh
    four"; ``loosely``, as buyers say them: cents under ten as "and five cents"."""
    if dollars == 0 and cents:
        return f"{number_words(cents)} cent" + ("s" if cents != 1 else "")
    unit = "dollar" if dollars == 1 else "dollars"
    if not cents:
        return f"{number_words(dollars)} {unit}"
    if cents >= 10:
        return f"{number_words(dollars)} {unit} {number_words(cents)}"
    if loosely:
        return f"{number_words(dollars)} {unit} and {number_words(cents)} cent" + ("s" if cents != 1 else "")
    return f"{number_words(dollars)} {unit} oh {number_words(cents)}"


def _words(match: re.Match[str], loosely: bool) -> str:
    dollars, cents = dollars_and_cents(match)
    if dollars >= MAX_DOLLARS:
        return match.group(0)
    return say_amount(dollars, cents, loosely=loosely)


def spoken(text: str) -> str:
    """``text`` as a seller's voice says it: every dollar amount in words, one way ("$2.94" →
    "two dollars ninety four", "$6.04" → "six dollars oh four"), and "USD" said "dollars"."""
    return _BARE_USD.sub("dollars", AMOUNT.sub(lambda m: _words(m, loosely=False), text))


def heard(text: str) -> str:
    """``text`` with its amounts in words as buyers say them ("$3.50" → "three dollars fifty",
    "$4.05" → "four dollars and five cents"): what a transcript of a buyer's speech reads as words."""
    return _BARE_USD.sub("dollars", AMOUNT.sub(lambda m: _words(m, loosely=True), text))
