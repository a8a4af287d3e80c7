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
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

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
_DOLLARS = {"dollar", "dollars", "buck", "bucks"}
_ONE_DOLLAR = {"dollar", "buck"}
_CENTS = {"cent", "cents"}
_NOT_A_COUNT = {"the", "that", "this", "which", "no", "every", "each", "any", "some", "another", "other", "little", "big"}
"""Before "one", these make it a pronoun ("the blue one", "that one"), not a quantity."""
_COUNTS_ONE = {"take", "want", "buy", "need", "get", "have", "give", "sell", "only", "just", "me", "us", "for", "of", "about", "is"}
"""A last "one" after these is a count ("I'll take one"); after other words ("the blue one") a pronoun."""
MAX_DIGITS = 15
"""Longer digit strings are left as they are (a float cannot hold them exactly)."""
_DIGITS = re.compile(r"^\$?\d+(?:[.,]\d+)*$")
_LEAD = "\"'“¿([{-"
_TRAIL = "\"'.。,，!！?？:：”)]}、"


@dataclass(frozen=True)
class _Token:
    core: str
    """Lowercase, surrounding punctuation removed: what the rules read."""
    word: WordTiming
    lead: str
    trail: str


def _split(word: WordTiming) -> _Token:
    text = word.word.strip()
    core = text.lstrip(_LEAD)
    lead = text[: len(text) - len(core)]
    stripped = core.rstrip(_TRAIL)
    trail = core[len(stripped) :]
    return _Token(stripped.lower(), word, lead, trail)


def _number_value(token: str) -> float | None:
    """A digit token's value (``10``, ``3.50``, ``1,000``; not ``$3``)."""
    if len(token) > MAX_DIGITS or not _DIGITS.match(token) or token.startswith("$"):
        return None
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None


def _dollar_value(tokens: Sequence[_Token], i: int) -> float | None:
    core = tokens[i].core
    return _number_value(core[1:]) if core.startswith("$") else None


def _join_split_numbers(words: list[WordTiming]) -> list[WordTiming]:
    """Whisper's word timings can cut a number at its separator ("$8" ".50", "3" ",000"), and
    a currency sign the decoder wrote with a space after it is a word of its own ("$" "20"):
    the pieces are one word again. Only into a well-formed number: two decimal parts ("$4.0"
    ".0") are two numbers the decoder wrote, not one to invent ("$4.0.0")."""
    out: list[WordTiming] = []
    for w in words:
        piece = w.word.strip()
        prev = out[-1] if out else None
        if prev is not None and (
            (_CONTINUATION.match(piece) and _NUMBER_END.search(prev.word) and _WELL_FORMED.match(prev.word.strip() + piece))
            or (prev.word.strip() == "$" and _DIGIT_WORD.match(piece))
        ):
            out[-1] = WordTiming(prev.word.strip() + piece, prev.start_ms, w.end_ms, min(prev.conf, w.conf))
        else:
            out.append(w)
    return out


_CONTINUATION = re.compile(r"^[.,]\d+[.,!?]?$")
_NUMBER_END = re.compile(r"\d$")
_WELL_FORMED = re.compile(r"^\$?\d+(?:,\d{3})*(?:\.\d+)?[.,!?]?$")
"""One number: thousands groups, then at most one decimal part."""
_DIGIT_WORD = re.compile(r"^\d+(?:[.,]\d+)*[.,!?]?$")


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


def _cents_after(tokens: Sequence[_Token], k: int) -> tuple[float, int] | None:
    """The cents said after a whole dollar amount the decoder wrote as ``$8``: ``and $0.50``, or
    ``(and) 50 cents`` / ``(and) fifty cents``; with where they end."""
    if k < len(tokens) and tokens[k].core == "and" and not tokens[k].trail:
        k += 1
        dollars = _dollar_value(tokens, k) if k < len(tokens) else None
        if dollars is not None and 0 < dollars < 1:
            return round(dollars * 100, 2), k + 1
    parsed = _parse_number(tokens, k) if k < len(tokens) else None
    if parsed is None or not 0 < parsed[0] < 100:
        return None
    unit = k + parsed[1]
    if unit < len(tokens) and tokens[unit].core in _CENTS and not tokens[unit - 1].trail:
        return parsed[0], unit + 1
    return None


def _is_pronoun_one(tokens: Sequence[_Token], i: int, span: int) -> bool:
    if span != 1 or tokens[i].core != "one":
        return False
    before = tokens[i - 1].core if i > 0 else ""
    last = i + 1 == len(tokens) or bool(tokens[i].trail)
    return before in _NOT_A_COUNT or (last and before != "" and before not in _COUNTS_ONE)


def _money(dollars: float, cents: float = 0.0) -> str:
    amount = round(dollars + cents / 100.0, 2)
    return f"${amount:.0f}" if amount == int(amount) else f"${amount:.2f}"


def _number_text(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def _merge(tokens: Sequence[_Token], text: str) -> WordTiming:
    """One word standing for ``tokens``: the first's start, the last's end, the weakest confidence."""
    return WordTiming(
        tokens[0].lead + text + tokens[-1].trail,
        tokens[0].word.start_ms,
        tokens[-1].word.end_ms,
        min(t.word.conf for t in tokens),
    )


def _digits(tokens: list[_Token]) -> list[WordTiming]:
    out: list[WordTiming] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.core.startswith("$") and _number_value(tok.core[1:]) is not None:  # "$3.50" already
            value, end = _number_value(tok.core[1:]) or 0.0, i + 1
            if value == int(value) and not tok.trail:
                cents_and_end = _cents_after(tokens, end)
                if cents_and_end is not None:  # "$8 and $0.50", "$8 and 50 cents"
                    value, end = value + cents_and_end[0] / 100.0, cents_and_end[1]
            if end < len(tokens) and tokens[end].core in _DOLLARS | _CENTS and not tokens[end - 1].trail:
                end += 1  # "$3.50 dollars": the unit said twice
            out.append(_merge(tokens[i:end], _money(value)))
            i = end
            continue
        parsed = _parse_number(tokens, i)
        if parsed is None or _is_pronoun_one(tokens, i, parsed[1]):
            out.append(tok.word)
            i += 1
            continue
        value, span = parsed
        end = i + span
        if end + 1 < len(tokens) and tokens[end].core == "point" and not tokens[end - 1].trail:
            decimals = ""
            k = end + 1
            while k < len(tokens) and _UNITS.get(tokens[k].core, 10) < 10 and not tokens[k - 1].trail:
                decimals += str(_UNITS[tokens[k].core])
                k += 1
            if decimals:
                value, end = float(f"{int(value)}.{decimals}"), k
        nxt = tokens[end].core if end < len(tokens) else ""
        if nxt in _DOLLARS and not tokens[end - 1].trail:
            end += 1
            cents = 0.0
            k = end + (1 if end < len(tokens) and tokens[end].core == "and" else 0)
            more = _parse_number(tokens, k) if k < len(tokens) and not tokens[end - 1].trail else None
            if more is not None and more[0] < 100:
                after = k + more[1]
                if after < len(tokens) and tokens[after].core in _CENTS:
                    cents, end = more[0], after + 1
                elif k == end and (after >= len(tokens) or tokens[after].core not in _COUNTED_AFTER):
                    # "three dollars fifty": cents without the word; not "five dollars two eggs"
                    cents, end = more[0], after
            out.append(_merge(tokens[i:end], _money(value, cents)))
        elif nxt in _CENTS and value < 100 and not tokens[end - 1].trail:
            end += 1
            out.append(_merge(tokens[i:end], _money(0.0, value)))
        elif end == i + 1 and _number_value(tok.core) is not None and "." in tok.core:
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
        kept = _digits([_split(w) for w in _join_split_numbers(kept)])
    return _capitalise_names(kept, avatars)


def normalize_text(text: str, numbers: NumberStyle = "digits", avatars: Sequence[str] = DEFAULT_AVATARS) -> str:
    """The same normalisation on text without timings (typed input, references in tests)."""
    words = [WordTiming(w, 0, 0) for w in text.split()]
    return " ".join(w.word for w in normalize_words(words, numbers, avatars))


def normalize_hypothesis(hyp: Hypothesis, numbers: NumberStyle = "digits",
                         avatars: Sequence[str] = DEFAULT_AVATARS) -> Hypothesis:
    """A hypothesis whose text is its normalised words joined. An engine that gave no word
    timings (none here, but the interface allows it) has its text normalised alone."""
    if not hyp.words:
        return replace(hyp, text=normalize_text(hyp.text, numbers, avatars))
    words = normalize_words(hyp.words, numbers, avatars)
    return replace(hyp, text=" ".join(w.word for w in words), words=words)
