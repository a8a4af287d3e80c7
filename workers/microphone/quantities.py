"""Quantities in a final that should not be trusted, flagged rather than rewritten.

Whisper tiny.en sometimes writes a quantity that was not said and reads like one that was:
"six teaspoons" as "60 spoons" (the "-ty" of "sixty" is the "tea" of "teaspoons"), "two eggs"
as "2 weeks". A wrong quantity is a wrong deal, and guessing the right one would be inventing a
deal term, so the final keeps the words it was heard as and lists the doubtful quantities:

- ``unsure``: the decoder gave the number, or the unit or goods after it, a probability below
  ``min_conf``;
- ``implausible``: more of a unit than a buyer at this table asks for (:data:`LIMITS`: 60
  teaspoons, 200 eggs);
- ``not_a_unit``: the word after the number is no unit or goods of the domain but sounds like the
  end of one ("spoons" is the end of "teaspoons": Metaphone ``SPNS`` of ``TSPNS``); the doubt then
  says which unit it may have been, and for a tens number ("60") that the "-ty" may have been
  that unit's start ("6 teaspoons").

A quantity here is a number (digits, as the normaliser writes them) followed by a word; money
(``$5``) is not one.

Before a final gets here, Whisper's n-best rescoring has already preferred a hypothesis whose
quantities are whole, and read each hypothesis with the domain's split of the same sounds
(:func:`tens_resplit`: "60 spoons" competes as "6 teaspoons"; :mod:`workers.microphone.rescore`).
What is left here is what the beam could not mend, kept as heard.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import jellyfish

from workers.microphone.domain import GOODS_COUNTABLE, INGREDIENTS, UNITS
from workers.microphone.recognizer import WordTiming

MIN_CONF = 0.4
"""A number or unit the decoder gave less than this probability is unsure."""
LIMITS: dict[str, float] = {
    "teaspoon": 12, "tablespoon": 12, "spoon": 12, "cup": 12, "ounce": 48, "pound": 12, "packet": 24, "bag": 12,
    "bar": 24, "egg": 48, "dozen": 6, "blueberry": 500,
}
"""The most of a unit (singular) a buyer plausibly asks for in one breath; above it a number is
more likely misheard ("60 teaspoons") than meant. Anything not listed: :data:`DEFAULT_LIMIT`."""
DEFAULT_LIMIT = 100.0
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
_LETTERS = re.compile(r"[^a-z]+")


def singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


DOMAIN_UNITS: frozenset[str] = frozenset(
    singular(w) for phrase in (*UNITS, *GOODS_COUNTABLE, *INGREDIENTS, "dozen") for w in phrase.split() if w != "of"
)
"""Units and goods (singular) that may follow a number."""
COUNT_WORDS = frozenset({"more", "less", "of", "or", "and", "to", "for", "each", "at", "a", "in", "percent", "times", "minutes"})
"""Words after a number that make it no quantity of goods ("2 or 3", "5 each", "2 for $5")."""


@dataclass(frozen=True)
class Doubt:
    """One quantity the final should not be trusted on."""

    text: str
    """The quantity as heard ("60 spoons")."""
    start_ms: int
    end_ms: int
    conf: float
    """The lower probability of its number and unit."""
    reasons: tuple[str, ...]
    """``unsure``, ``implausible``, ``not_a_unit``."""
    maybe: str = ""
    """What it may have been, when the sound says ("6 teaspoons"); never written into the text."""


def letters(word: str) -> str:
    """``word`` in lowercase letters alone (punctuation, digits and apostrophes dropped)."""
    return _LETTERS.sub("", word.lower())


def unit_heard_as(word: str) -> tuple[str, str] | None:
    """The domain unit whose sound ends with ``word``'s, and the sound missing from its start
    ("spoons" → ("teaspoon", "T")), if any: the least sound missing, "teaspoon" (T) before
    "tablespoon" (TBL)."""
    heard = jellyfish.metaphone(singular(word))
    if len(heard) < 2:
        return None
    found = [
        (len(whole) - len(heard), unit, whole[: len(whole) - len(heard)])
        for unit in sorted(DOMAIN_UNITS)
        if (whole := jellyfish.metaphone(unit)) != heard and whole.endswith(heard) and unit.endswith(singular(word)[-2:])
    ]
    if not found:
        return None
    _, unit, missing = min(found)
    return unit, missing


def _plural(unit: str, count: float) -> str:
    if count == 1:
        return unit
    return unit[:-1] + "ies" if unit.endswith("y") and unit[-2:-1] not in "aeiou" else unit + "s"


TENS_SOUND = "T"
"""Metaphone of a tens number's "-ty" ("sixty"): the first sound of "teaspoons", which the
decoder can give to the number before it ("six teaspoons" → "60 spoons")."""


TENS_SAID_AS: dict[int, float] = {20: 10}
"""The count a tens number is heard for when its "-ty" was the unit's "tea", where that is not
the tens number's tenth: "twenty" is "twen-ty", the sounds of "ten tea(spoons)", not of "two
tea" (Festival kal and ked, ``bench/quantities.py --grid``: "ten teaspoons" → "20 spoons")."""


def tens_resplit(value: float, word: str) -> str | None:
    """What a tens number and the unit fragment after it were said as, when the fragment is a
    domain unit missing just the sound of the number's "-ty": (60, "spoons") → "6 teaspoons",
    (20, "spoons") → "10 teaspoons" (:data:`TENS_SAID_AS`; the same sounds, split as the domain
    says); ``None`` otherwise."""
    if not (value % 10 == 0 and 20 <= value <= 90):
        return None
    heard = unit_heard_as(letters(word))
    if heard is None or heard[1] != TENS_SOUND:
        return None
    count = TENS_SAID_AS.get(int(value), value / 10)
    return f"{count:g} {_plural(heard[0], count)}"


def doubtful_quantities(words: Sequence[WordTiming], min_conf: float = MIN_CONF) -> list[Doubt]:
    """The doubtful quantities among ``words`` (normalised words of one final), in order."""
    doubts: list[Doubt] = []
    for i, number in enumerate(words[:-1]):
        digits = number.word.strip().rstrip(",.!?")
        if not _NUMBER.match(digits) or number.word.strip()[-1:] in ",.!?":
            continue
        unit_word = words[i + 1]
        unit = singular(letters(unit_word.word))
        if not unit or unit in COUNT_WORDS:
            continue
        value = float(digits)
        reasons: list[str] = []
        maybe = ""
        if min(number.conf, unit_word.conf) < min_conf:
            reasons.append("unsure")
        if unit in DOMAIN_UNITS:
            if value > LIMITS.get(unit, DEFAULT_LIMIT):
                reasons.append("implausible")
        else:
            heard = unit_heard_as(unit)
            if heard is not None:
                reasons.append("not_a_unit")
                maybe = tens_resplit(value, unit) or f"{value:g} {_plural(heard[0], value)}"
        if reasons:
            text = f"{digits} {unit_word.word.strip().rstrip(',.!?')}"
            conf = round(min(number.conf, unit_word.conf), 3)
            doubts.append(Doubt(text, number.start_ms, unit_word.end_ms, conf, tuple(reasons), maybe))
    return doubts
