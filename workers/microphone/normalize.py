"""One text normalisation step after every engine: numbers as digits, money as ``$x.yy``,
avatar names capitalised — the form the platform's own example utterances use ("I'd like to
buy 5 eggs for $2"), so an agent parses the same text whichever engine heard it.

Engines disagree on how they write numbers: pocketsphinx and Vosk spell them out ("three
dollars fifty"), Whisper usually writes digits ("$3.50") but not always ("3 dollars").
:func:`normalize_hypothesis` rewrites the words of a :class:`Hypothesis`; a run of spoken words
that becomes one token ("three dollars fifty" → ``$3.50``) keeps the start of its first word and
the end of its last, so word timings stay aligned with what was said, and the text is always
the words joined. What it leaves alone is deliberate: "a dozen eggs", "a cup of sugar", "the
blue one" — an article or a pronoun is not a quantity, and inventing one would change a deal.

A price is read once into an :class:`Amount` (whole dollars and cents, integers) from whatever
the decoder gave — words ("four dollars and ten cents", "four dollars ten", "a dollar fifty"),
digits ("$4.10", "4 dollars and 10 cents", "$4 10": the sign makes "four ten" a price) or the
pieces Whisper's word timings cut ("$4" ".10", "$" "4") — and written once
(:meth:`Amount.written`). Pieces that make no one number are the decoder's garble, and none of
them reaches the text; the amount keeps what the pieces say unambiguously and the word keeps
what was heard (:attr:`WordTiming.heard`) for the final's doubt (:mod:`workers.microphone.prices`):

- more than one decimal part ("$4.0" ".0", "$4.00.10", "$3.42" ".50"): the cents are the one
  part that is not zeros, when there is exactly one and it has two digits ("$4.00.10" →
  ``$4.10``; a ".0" says nothing was read, a one-digit ".5" may be ".50" or ".05"); otherwise
  the whole dollars alone ("$4" ".0" ".0." → ``$4``, "$3.42" ".50" → ``$3``);
- a decimal piece where a number belongs ("4 dollars and .10 cents"): read by the same rule;
- a whole amount ending a sentence and a bare one- or two-digit number after it ("$4." "10."):
  the dollars stand (``$4.``), for the number may have been its cents or a sentence of its own;
- a currency sign with no amount ("$", "$ $ $"): the word it stands for, ``dollars``, which is a
  price with no amount and flagged as one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from formats.written import CURRENCY_SIGNS
from workers.microphone.recognizer import Hypothesis, WordTiming
from workers.runtime.config import DEFAULT_AVATARS

NumberStyle = Literal["digits", "words"]
"""``digits`` (default): numbers, quantities and money as digits; ``words``: the engine's own."""


_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000}
NUMBER_WORDS = frozenset(_UNITS) | frozenset(_TENS) | frozenset(_SCALES)
"""The words a spoken number is made of."""
DOLLAR_WORDS = frozenset({"dollar", "dollars", "buck", "bucks"})
_ONE_DOLLAR = {"dollar", "buck"}
CENT_WORDS = frozenset({"cent", "cents"})
MONEY_WORDS = DOLLAR_WORDS | CENT_WORDS
"""Words that make the number before them a price."""
SIGN = CURRENCY_SIGNS["USD"]
"""The room prices in dollars; the sign the decoder writes for them."""
NO_AMOUNT = "dollars"
"""A currency sign with nothing readable after it, written as the word it stands for: the text
keeps that a price was said without inventing its amount."""
_SIGNS = frozenset({SIGN})
_DOLLAR_UNITS = DOLLAR_WORDS | _SIGNS
"""After a number, that many dollars: the words, or the sign the decoder wrote after it ("5 $")."""
CENTS_PER_DOLLAR = 100
CENT_DIGITS = 2
_NOT_A_COUNT = {"the", "that", "this", "which", "no", "every", "each", "any", "some", "another", "other", "little", "big"}
"""Before "one", these make it a pronoun ("the blue one", "that one"), not a quantity."""
_COUNTS_ONE = {"take", "want", "buy", "need", "get", "have", "give", "sell", "only", "just", "me", "us", "for", "of", "about", "is"}
"""A last "one" after these is a count ("I'll take one"); after other words ("the blue one") a pronoun."""
MAX_DIGITS = 15
"""Longer digit strings are left as they are (a float cannot hold them exactly)."""
_DIGITS = re.compile(r"^\d+(?:[.,]\d+)*$")
_LEAD = "\"'“¿([{-"
_TRAIL = "\"'.。,，!！?？:：”)]}、"


@dataclass(frozen=True)
class Amount:
    """A price: whole dollars and cents, integers. Every way the decoder writes one ("four
    dollars and ten cents", "$4" ".10", "4.10 dollars") is read into this one value and written
    by :meth:`written` alone, so no float's ``4.1`` stands between what was said and the text."""

    dollars: int
    cents: int = 0

    @classmethod
    def of(cls, value: float) -> Amount:
        """A spoken amount, which may have a decimal part ("four point five dollars")."""
        return cls(*divmod(round(value * CENTS_PER_DOLLAR), CENTS_PER_DOLLAR))

    def plus(self, cents: int) -> Amount:
        """The cents said after the whole dollars ("$8 and 50 cents")."""
        return Amount(*divmod(self.dollars * CENTS_PER_DOLLAR + self.cents + cents, CENTS_PER_DOLLAR))

    def written(self) -> str:
        """``$4``, ``$4.10``, ``$0.50``: as the platform's own examples write prices."""
        return f"{SIGN}{self.dollars}" + (f".{self.cents:0{CENT_DIGITS}d}" if self.cents else "")


@dataclass(frozen=True)
class _Token:
    core: str
    """Lowercase, surrounding punctuation removed: what the rules read."""
    word: WordTiming
    lead: str
    trail: str
    heard: str
    """The decoder's words this token was joined from ("$4 .0"), for a garbled price's doubt."""


def _split(word: WordTiming, pieces: Sequence[str] = ()) -> _Token:
    text = word.word.strip()
    core = text.lstrip(_LEAD)
    lead = text[: len(text) - len(core)]
    stripped = core.rstrip(_TRAIL)
    trail = core[len(stripped) :]
    return _Token(stripped.lower(), word, lead, trail, " ".join(pieces) or text)


def _number_value(token: str) -> float | None:
    """A digit token's value (``10``, ``3.50``, ``1,000``; not ``$3``)."""
    if len(token) > MAX_DIGITS or not _DIGITS.match(token):
        return None
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None


def _join_split_numbers(words: list[WordTiming]) -> list[tuple[WordTiming, tuple[str, ...]]]:
    """Whisper's word timings can cut a number at its separator ("$8" ".50", "3" ",000"), and
    a currency sign the decoder wrote with a space after it is a word of its own ("$" "20"):
    the pieces are one word again, with the pieces it was joined from. Only into a well-formed
    number: two decimal parts ("$4.0" ".0") are the decoder's garble, for the price reader."""
    out: list[tuple[WordTiming, tuple[str, ...]]] = []
    for w in words:
        piece = w.word.strip()
        if out:
            prev, pieces = out[-1]
            before = prev.word.strip()
            attached = (
                _CONTINUATION.match(piece)
                and (_NUMBER_END.search(before) or before == SIGN)
                and _WELL_FORMED.match(before + piece)
            )
            if attached or (before == SIGN and _DIGIT_WORD.match(piece)):
                joined = WordTiming(before + piece, prev.start_ms, w.end_ms, min(prev.conf, w.conf))
                out[-1] = (joined, (*pieces, piece))
                continue
        out.append((w, (piece,)))
    return out


_CONTINUATION = re.compile(r"^[.,]\d+[.,!?]?$")
_NUMBER_END = re.compile(r"\d$")
_WELL_FORMED = re.compile(rf"^{re.escape(SIGN)}?(?=[.\d])(?:\d+(?:,\d{{3}})*)?(?:\.\d+)?[.,!?]?$")
"""One number: thousands groups, then at most one decimal part ("$.50" is fifty cents)."""
_DIGIT_WORD = re.compile(r"^\d+(?:[.,]\d+)*[.,!?]?$")
_WRITTEN = re.compile(rf"^(?P<sign>{re.escape(SIGN)})?(?P<whole>\d{{1,3}}(?:,\d{{3}})+|\d+)?(?P<parts>(?:\.\d+)*)$")
_FRAGMENT = re.compile(r"^\.\d+$")
"""A decimal part standing alone (".10", ".0"): a piece of the number before it."""


@dataclass(frozen=True)
class _Written:
    """A number as the decoder wrote it in digits, its decimal parts apart: "$4.00.10" is
    ``(True, 4, ("00", "10"))``; a lone sign ``(True, None, ())``."""

    sign: bool
    whole: int | None
    parts: tuple[str, ...]


def _written(core: str) -> _Written | None:
    """``core`` read as digits (with or without a sign), or None: words, a decimal part alone,
    or more digits than :data:`MAX_DIGITS`."""
    match = _WRITTEN.match(core)
    if match is None or len(core) > MAX_DIGITS or not (match["sign"] or match["whole"]):
        return None
    whole = int(match["whole"].replace(",", "")) if match["whole"] else None
    return _Written(bool(match["sign"]), whole, tuple(match["parts"].split(".")[1:]))


def _parse_number(tokens: Sequence[_Token], i: int) -> tuple[float, int] | None:
    """The number spoken from ``tokens[i]``: its value and how many tokens it spans."""
    digit = _number_value(tokens[i].core)
    if digit is not None:
        return digit, 1
    if tokens[i].core in ("a", "an") and not tokens[i].trail and i + 1 < len(tokens) and tokens[i + 1].core in _ONE_DOLLAR:
        return 1.0, 1  # "a dollar (fifty)": the article is the amount
    total = 0
    current = 0
    j = i
    seen = False
    last_kind = ""
    last_scale = 0
    while j < len(tokens):
        parts = tokens[j].core.split("-") if "-" in tokens[j].core else [tokens[j].core]
        if not all(p in _UNITS or p in _TENS or p in _SCALES for p in parts):
            if tokens[j].core == "and" and seen and last_kind == "scale" and j + 1 < len(tokens) and (
                tokens[j + 1].core in _UNITS or tokens[j + 1].core in _TENS
            ):
                j += 1
                continue
            if tokens[j].core in ("a", "an") and not seen and j + 1 < len(tokens) and tokens[j + 1].core in _SCALES:
                current, seen, last_kind = 1, True, "unit"
                j += 1
                continue
            break
        if seen and tokens[j - 1].trail:  # "five, six" are two numbers
            break
        for p in parts:
            if p in _UNITS:
                if last_kind in ("unit", "teen") or (last_kind == "tens" and _UNITS[p] >= 10):
                    return (total + current, j - i) if seen else None
                current += _UNITS[p]
                last_kind = "teen" if _UNITS[p] >= 10 else "unit"
            elif p in _TENS:
                if last_kind in ("unit", "teen", "tens"):
                    return (total + current, j - i) if seen else None
                current += _TENS[p]
                last_kind = "tens"
            else:
                scale = _SCALES[p]
                if last_kind == "scale" and last_scale >= scale:  # "thousand thousand" is two numbers
                    return (total + current, j - i) if seen else None
                last_scale = scale
                current = max(current, 1) * scale
                if scale >= 1000:
                    total, current = total + current, 0
                last_kind = "scale"
            seen = True
        j += 1
    if not seen:
        return None
    return total + current, j - i


def _is_pronoun_one(tokens: Sequence[_Token], i: int, span: int) -> bool:
    if span != 1 or tokens[i].core != "one":
        return False
    before = tokens[i - 1].core if i > 0 else ""
    last = i + 1 == len(tokens) or bool(tokens[i].trail)
    return before in _NOT_A_COUNT or (last and before != "" and before not in _COUNTS_ONE)


def _number_text(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def _merge(tokens: Sequence[_Token], text: str, garbled: bool = False) -> WordTiming:
    """One word standing for ``tokens``: the first's start, the last's end, the weakest
    confidence; ``garbled``: the tokens made no well-formed amount, so the word keeps what the
    decoder wrote."""
    return WordTiming(
        tokens[0].lead + text + tokens[-1].trail,
        tokens[0].word.start_ms,
        tokens[-1].word.end_ms,
        min(t.word.conf for t in tokens),
        " ".join(t.heard for t in tokens) if garbled else "",
    )


def _spoken_value(tokens: Sequence[_Token], i: int) -> tuple[float, int] | None:
    """The number from ``tokens[i]`` ("twenty-one", "two point five", "10"; not the pronoun
    "one"): its value and the index after it."""
    parsed = _parse_number(tokens, i)
    if parsed is None or _is_pronoun_one(tokens, i, parsed[1]):
        return None
    value, end = parsed[0], i + parsed[1]
    if end + 1 < len(tokens) and tokens[end].core == "point" and not tokens[end - 1].trail:
        decimals = ""
        k = end + 1
        while k < len(tokens) and _UNITS.get(tokens[k].core, 10) < 10 and not tokens[k - 1].trail:
            decimals += str(_UNITS[tokens[k].core])
            k += 1
        if decimals:
            value, end = float(f"{int(value)}.{decimals}"), k
    return value, end


@dataclass(frozen=True)
class _Price:
    """A price read from the tokens up to ``end``."""

    amount: Amount | None
    """None: a currency sign with no amount after it."""
    end: int
    garbled: bool
    """The tokens made no one well-formed amount (the module's docstring)."""


def _unit_at(tokens: Sequence[_Token], k: int, units: frozenset[str]) -> bool:
    """``tokens[k]`` is one of ``units`` and belongs to the word before it (no punctuation between)."""
    return 0 < k < len(tokens) and tokens[k].core in units and not tokens[k - 1].trail


def _fragments(tokens: Sequence[_Token], j: int, parts: tuple[str, ...]) -> tuple[int, tuple[str, ...], bool]:
    """The decimal parts standing alone from ``tokens[j]`` on (".0" ".0."), added to ``parts``;
    where they end, and whether there were any."""
    start = j
    while j < len(tokens) and _FRAGMENT.match(tokens[j].core) and not tokens[j].lead:
        parts = (*parts, tokens[j].core[1:])
        j += 1
    return j, parts, j > start


def _cents_of(parts: tuple[str, ...], stray: bool) -> tuple[int, bool]:
    """The cents that decimal ``parts`` say, and whether they were garbled. One part written with
    its number ("$4.5", "$4.05") reads as written. Otherwise (more than one, or one standing
    alone) the cents are the one part that is not zeros, when there is exactly one and it has
    two digits; anything else reads as no cents (the module's docstring)."""
    if not parts:
        return 0, False
    if not stray and len(parts) == 1:
        digits = parts[0].rstrip("0")
        if len(digits) <= CENT_DIGITS:
            return int(digits.ljust(CENT_DIGITS, "0")) if digits else 0, False
        return 0, True
    said = [p for p in parts if p.strip("0")]
    if len(said) == 1 and len(said[0]) == CENT_DIGITS:
        return int(said[0]), True
    return 0, True


@dataclass(frozen=True)
class _Cents:
    """Cents said after whole dollars, read from the tokens up to ``end``."""

    cents: int
    end: int
    garbled: bool


def _cents_after(tokens: Sequence[_Token], k: int) -> _Cents | None:
    """The cents said after whole dollars, from ``tokens[k]``: "and $0.50", "(and) 50 cents",
    "(and) fifty cents", the decoder's "and .50 cents", or a bare "fifty" ("three dollars fifty",
    "$3 fifty"; not "$5 2 eggs", nor "$5 20 dollars")."""
    n = len(tokens)
    said_and = k < n and tokens[k].core == "and" and not tokens[k].trail
    if said_and and k + 1 < n:
        written = _written(tokens[k + 1].core)
        if written is not None and written.sign and written.whole == 0 and len(written.parts) == 1:
            cents, garbled = _cents_of(written.parts, stray=False)
            if cents:
                return _Cents(cents, k + 2, garbled)
        if _FRAGMENT.match(tokens[k + 1].core):
            end, parts, _ = _fragments(tokens, k + 1, ())
            cents, _ = _cents_of(parts, stray=True)
            return _Cents(cents, end + 1 if _unit_at(tokens, end, CENT_WORDS) else end, True)
    start = k + 1 if said_and else k
    parsed = _parse_number(tokens, start) if start < n else None
    if parsed is None or parsed[0] != int(parsed[0]) or not 0 <= parsed[0] < CENTS_PER_DOLLAR:
        return None
    after = start + parsed[1]
    if _unit_at(tokens, after, CENT_WORDS):
        return _Cents(int(parsed[0]), after + 1, False)
    if not said_and and parsed[0] > 0 and (after >= n or tokens[after].core not in _COUNTED_AFTER | _DOLLAR_UNITS):
        return _Cents(int(parsed[0]), after, False)
    return None


def _cut_off_number(tokens: Sequence[_Token], k: int) -> int | None:
    """After a whole amount that ends a sentence ("$4."), a one- or two-digit number that ends
    one too ("10.", or the last word): the decoder's piece of the price, which ends here."""
    written = _written(tokens[k].core) if k < len(tokens) and not tokens[k].lead else None
    if written is None or written.sign or written.parts or not 0 < (written.whole or 0) < CENTS_PER_DOLLAR:
        return None
    return k + 1 if tokens[k].trail or k + 1 == len(tokens) else None


def _dollars_then_cents(tokens: Sequence[_Token], amount: Amount, end: int, garbled: bool, signed: bool) -> _Price:
    """A price from its whole dollars on, ``tokens[:end]`` read: the cents said after them."""
    if amount.cents == 0 and not tokens[end - 1].trail:
        more = _cents_after(tokens, end)
        if more is not None:
            amount, end, garbled = amount.plus(more.cents), more.end, garbled or more.garbled
    elif signed and amount.cents == 0 and tokens[end - 1].trail == "." and (cut := _cut_off_number(tokens, end)):
        end, garbled = cut, True
    return _Price(amount, end, garbled)


def _signed_price(tokens: Sequence[_Token], i: int, written: _Written) -> _Price:
    """The price a currency sign starts: "$3.50", "$ four", the decoder's "$4.0" ".0", or none."""
    end, parts, stray = _fragments(tokens, i + 1, written.parts)
    if written.whole is None and not parts:
        spoken = _spoken_value(tokens, end) if end < len(tokens) and not tokens[end - 1].trail else None
        if spoken is None:  # "$", "$ $ $": nothing to read
            return _Price(None, end, True)
        return _dollars_then_cents(tokens, Amount.of(spoken[0]), spoken[1], False, signed=True)
    cents, garbled = _cents_of(parts, stray)
    if written.whole is None and cents == 0:  # "$.0": no dollars and no cents read
        return _Price(None, end, True)
    amount = Amount(written.whole or 0, cents)
    if cents or garbled:  # the decimals said the cents, or they are garbled: nothing after them is read
        return _Price(amount, end, garbled)
    return _dollars_then_cents(tokens, amount, end, garbled, signed=True)


def _read_price(tokens: Sequence[_Token], i: int) -> _Price | None:
    """The price starting at ``tokens[i]``, if one does, with what the decoder wrote after it
    that can only belong to it: the unit said again ("$3.50 dollars", "$5 $") and decimal parts
    ("one dollar" ".10", "$4.10" ".0"), read with its own cents by the rule for more than one
    part (the module's docstring)."""
    price = _price_at(tokens, i)
    if price is None:
        return None
    parts: tuple[str, ...] = ()
    end, garbled = price.end, price.garbled
    while True:  # "$4 .0 cents .0": pieces and units in any order
        after, parts, _ = _fragments(tokens, end, parts)
        if _unit_at(tokens, after, MONEY_WORDS):
            after += 1
        elif _unit_at(tokens, after, _SIGNS):  # a second sign says nothing more
            after, garbled = after + 1, True
        if after == end:
            break
        end = after
    amount = price.amount
    if parts and amount is not None:
        own = (f"{amount.cents:0{CENT_DIGITS}d}",) if amount.cents else ()
        amount = Amount(amount.dollars, _cents_of((*own, *parts), stray=True)[0])
    return _Price(amount, end, garbled or bool(parts))


def _price_at(tokens: Sequence[_Token], i: int) -> _Price | None:
    """The price starting at ``tokens[i]``: a currency sign, or a number followed by a money
    word ("4.10 dollars", "four dollars ten", "ten cents")."""
    written = _written(tokens[i].core)
    if written is not None and written.sign:
        return _signed_price(tokens, i, written)
    if written is not None and written.whole is not None:
        end, parts, stray = _fragments(tokens, i + 1, written.parts)
        if _unit_at(tokens, end, _DOLLAR_UNITS):
            cents, garbled = _cents_of(parts, stray)
            if cents or garbled:
                return _Price(Amount(written.whole, cents), end + 1, garbled)
            return _dollars_then_cents(tokens, Amount(written.whole), end + 1, garbled, signed=False)
        if _unit_at(tokens, end, CENT_WORDS) and not parts and written.whole < CENTS_PER_DOLLAR:
            return _Price(Amount(0, written.whole), end + 1, False)
        return None
    spoken = _spoken_value(tokens, i)
    if spoken is None:
        return None
    value, end = spoken
    if _unit_at(tokens, end, _DOLLAR_UNITS):
        return _dollars_then_cents(tokens, Amount.of(value), end + 1, False, signed=False)
    if _unit_at(tokens, end, CENT_WORDS) and value == int(value) and value < CENTS_PER_DOLLAR:
        return _Price(Amount(0, int(value)), end + 1, False)
    return None


def _digits(tokens: list[_Token]) -> list[WordTiming]:
    out: list[WordTiming] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        price = _read_price(tokens, i)
        if price is not None:
            text = price.amount.written() if price.amount is not None else NO_AMOUNT
            out.append(_merge(tokens[i : price.end], text, price.garbled))
            i = price.end
            continue
        number = _spoken_value(tokens, i)
        if number is None:
            out.append(tok.word)
            i += 1
            continue
        value, end = number
        if end == i + 1 and _number_value(tok.core) is not None and "." in tok.core:
            out.append(_merge(tokens[i:end], tok.core.replace(",", "")))  # "4.10" as written, not "4.1"
        else:
            out.append(_merge(tokens[i:end], _number_text(value)))
        i = end
    return out


_COUNTED_AFTER = {
    "egg", "eggs", "cup", "cups", "ounce", "ounces", "teaspoon", "teaspoons", "packet", "packets", "pound",
    "pounds", "bag", "bags", "bar", "bars", "of", "dozen",
}
"""A number followed by one of these counts goods, so it is not the cents of a price before it."""


def _capitalise_names(words: Iterable[WordTiming], avatars: Sequence[str]) -> list[WordTiming]:
    """The avatars' names written as configured, whatever case the engine produced."""
    names = {n.lower(): n for n in avatars}
    out = []
    for w in words:
        tok = _split(w)
        if tok.core in names:
            w = replace(w, word=tok.lead + names[tok.core] + tok.trail)
        elif tok.core.endswith("'s") and tok.core[:-2] in names:
            w = replace(w, word=tok.lead + names[tok.core[:-2]] + "'s" + tok.trail)
        out.append(w)
    return out


def normalize_words(words: Sequence[WordTiming], numbers: NumberStyle = "digits",
                    avatars: Sequence[str] = DEFAULT_AVATARS) -> list[WordTiming]:
    """The words after normalisation (see the module's docstring); ``avatars``: the room's
    names (``[core] avatars``)."""
    kept = [w for w in words if w.word.strip()]
    if numbers == "digits":
        kept = _digits([_split(w, pieces) for w, pieces in _join_split_numbers(kept)])
    return _capitalise_names(kept, avatars)


def normalize_text_words(text: str, numbers: NumberStyle = "digits",
                         avatars: Sequence[str] = DEFAULT_AVATARS) -> list[WordTiming]:
    """The normalised words of text without timings (typed input, an n-best hypothesis)."""
    return normalize_words([WordTiming(w, 0, 0) for w in text.split()], numbers, avatars)


def normalize_text(text: str, numbers: NumberStyle = "digits", avatars: Sequence[str] = DEFAULT_AVATARS) -> str:
    """The same normalisation on text without timings (typed input, references in tests)."""
    return " ".join(w.word for w in normalize_text_words(text, numbers, avatars))


def normalize_hypothesis(hyp: Hypothesis, numbers: NumberStyle = "digits",
                         avatars: Sequence[str] = DEFAULT_AVATARS) -> Hypothesis:
    """A hypothesis whose text is its normalised words joined. An engine that gave no word
    timings (none here, but the interface allows it) has its text normalised alone."""
    if not hyp.words:
        return replace(hyp, text=normalize_text(hyp.text, numbers, avatars))
    words = normalize_words(hyp.words, numbers, avatars)
    return replace(hyp, text=" ".join(w.word for w in words), words=words)
