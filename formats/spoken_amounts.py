"""Amounts of money as a seller says them: "$4.50" → "four dollars fifty".

Engines read currency badly and differently: espeak-ng says "$4.50" as "dollar four point five
zero" and spells "USD" out letter by letter; a buyer must understand a price the first time it
is said. So amounts are written out in words before any engine sees them, the way a person
says them: "four dollars fifty", "a dollar twenty" is left as written, "$0.75" is "seventy five
cents", "$4.05" is "four dollars and five cents". Number words come from ``num2words``.
Only the spoken text changes: captions keep "$4.50". The microphone's n-best rescoring reads
a transcript's amounts the same way, as the words its language models know
(:mod:`workers.microphone.rescore`).
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


def say_amount(dollars: int, cents: int) -> str:
    """``dollars`` and ``cents`` as said aloud."""
    if dollars == 0 and cents:
        return f"{number_words(cents)} cent" + ("s" if cents != 1 else "")
    unit = "dollar" if dollars == 1 else "dollars"
    if not cents:
        return f"{number_words(dollars)} {unit}"
    if cents < 10:
        return f"{number_words(dollars)} {unit} and {number_words(cents)} cent" + ("s" if cents != 1 else "")
    return f"{number_words(dollars)} {unit} {number_words(cents)}"


def _replace(match: re.Match[str]) -> str:
    dollars, cents = dollars_and_cents(match)
    if dollars >= MAX_DOLLARS:
        return match.group(0)
    return say_amount(dollars, cents)


def spoken(text: str) -> str:
    """``text`` with every dollar amount in words and "USD" said "dollars"."""
    return _BARE_USD.sub("dollars", AMOUNT.sub(_replace, text))
