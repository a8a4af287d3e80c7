"""Reading a buyer's utterance: how much of which goods, at what price, and yes or no.

Speech-to-text writes numbers both ways ("5 eggs", "five eggs", "three dollars fifty"), so
numbers are read from digits and from English number words alike. A number belongs to a good
when it stands before it, possibly with a unit in between ("3 cups of flour"); it is a price
when money is said ("$3", "3 dollars", "3.5 USD", "50 cents") or when it follows "for" and
no good follows it ("5 eggs for 2").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from standins.eo.round_setup import GOODS

GOOD_WORDS: Final[dict[str, str]] = {
    **{good: good for good in GOODS},
    "eggs": "egg",
    "flours": "flour",
    "sugars": "sugar",
    "milks": "milk",
    "chocolates": "chocolate",
    "vanillas": "vanilla",
    "blueberries": "blueberry",
}
UNIT_WORDS: Final = frozenset(
    {
        "cup", "cups", "ounce", "ounces", "oz", "teaspoon", "teaspoons", "tsp", "packet", "packets",
        "pack", "packs", "each", "of", "the", "more", "extra", "fresh", "bags", "bag", "units", "unit",
    }
)
"""Words that may stand between a quantity and its good."""
SMALL_NUMBERS: Final[dict[str, int]] = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen".split()
    )
}
TENS: Final[dict[str, int]] = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}
MULTIPLIERS: Final[dict[str, int]] = {"dozen": 12, "hundred": 100}
ARTICLE_ONE: Final = frozenset({"a", "an"})
DOLLAR_WORDS: Final = frozenset({"dollar", "dollars", "buck", "bucks", "usd"})
CENT_WORDS: Final = frozenset({"cent", "cents"})
FOR_WORDS: Final = frozenset({"for", "at"})
ACCEPT_PATTERNS: Final = (
    r"\bdeal\b", r"\baccept", r"\bagreed?\b", r"\bi'?ll take (it|them|that)\b", r"\bsounds good\b",
    r"\byes\b", r"\bok(ay)?\b.*\b(deal|fine|good)\b", r"\bsold\b", r"\bit'?s a deal\b",
)
SELLER_CLOSE_PATTERNS: Final = (r"\byou'?ve got it\b", r"\bit'?s yours\b", r"\bthat is yours\b", r"\bsold\b")
"""How a seller says it has just closed a deal (the EO passes agents each other's words, not bids)."""
REJECT_PATTERNS: Final = (r"\bno deal\b", r"\btoo (much|expensive|high)\b", r"\bno thanks?\b", r"\bi reject\b", r"\bnope\b")
BETTER_PATTERNS: Final = (
    r"\bdo better\b", r"\bbetter (price|deal|offer)\b", r"\b(lower|cheaper|discount)\b", r"\bcome down\b",
    r"\bbest (price|offer)\b", r"\bgo (any )?lower\b",
)
"""The buyer asks for a lower price (without naming one)."""
QUESTION_START: Final = frozenset({
    "can", "could", "would", "will", "do", "does", "did", "is", "are", "how", "what", "which", "why", "when", "shall",
})

_TOKEN = re.compile(r"\$\s*\d+(?:\.\d+)?|\$|\d+(?:\.\d+)?|[a-z]+(?:'[a-z]+)?")


@dataclass(frozen=True)
class _Num:
    value: float
    start: int
    end: int
    """Token index just after the number."""


@dataclass
class ParsedOffer:
    """What the buyer asked for. ``quantities`` is empty when no good was named."""

    quantities: dict[str, int] = field(default_factory=dict)
    price: float | None = None
    accept: bool = False
    reject: bool = False
    better: bool = False
    """Asks for a lower price ("can you do better?")."""
    question: bool = False
    """A question: never taken as an acceptance ("deal?", "is that your best price?")."""

    @property
    def has_goods(self) -> bool:
        return bool(self.quantities)


def tokenize(text: str) -> list[str]:
    """Lower-case words, numbers and ``$``; SSML tags and punctuation dropped."""
    plain = re.sub(r"<[^>]+>", " ", text.lower()).replace("-", " ").replace(",", " ")
    tokens: list[str] = []
    for token in _TOKEN.findall(plain):
        if token.startswith("$") and len(token) > 1:
            tokens += ["$", token[1:].strip()]
        else:
            tokens.append(token)
    return tokens


def _number_at(tokens: list[str], i: int) -> _Num | None:
    """The number starting at token ``i`` (digits, or a run of number words), if any."""
    token = tokens[i]
    if re.fullmatch(r"\d+(?:\.\d+)?", token):
        value = float(token)
        end = i + 1
        if end < len(tokens) and tokens[end] in MULTIPLIERS:
            value *= MULTIPLIERS[tokens[end]]
            end += 1
        return _Num(value, i, end)
    if token == "half" and i + 2 < len(tokens) and tokens[i + 1] in ARTICLE_ONE and tokens[i + 2] == "dozen":
        return _Num(6, i, i + 3)
    if token in ARTICLE_ONE and i + 1 < len(tokens) and tokens[i + 1] in MULTIPLIERS:
        return _Num(MULTIPLIERS[tokens[i + 1]], i, i + 2)
    total = 0.0
    current = 0.0
    j = i
    seen = False
    while j < len(tokens):
        word = tokens[j]
        after_hundred = seen and current == 0 and total > 0
        if word in SMALL_NUMBERS and (
            not seen or after_hundred or (current % 10 == 0 and current >= 20 and SMALL_NUMBERS[word] < 10)
        ):
            current += SMALL_NUMBERS[word]
        elif word in TENS and (not seen or after_hundred):
            current += TENS[word]
        elif word in MULTIPLIERS and seen:
            current = max(current, 1) * MULTIPLIERS[word]
            if word == "hundred":
                total += current
                current = 0
        elif word == "and" and seen and j + 1 < len(tokens) and (tokens[j + 1] in SMALL_NUMBERS or tokens[j + 1] in TENS):
            pass
        else:
            break
        seen = True
        j += 1
    if not seen:
        return None
    return _Num(total + current, i, j)


def _numbers(tokens: list[str]) -> list[_Num]:
    found: list[_Num] = []
    i = 0
    while i < len(tokens):
        number = _number_at(tokens, i)
        if number is None:
            i += 1
            continue
        found.append(number)
        i = number.end
    return found


def _good_after(tokens: list[str], end: int) -> str | None:
    """The good a quantity ending at ``end`` counts, skipping unit words."""
    j = end
    while j < len(tokens) and tokens[j] in UNIT_WORDS and j - end < 3:
        j += 1
    if j < len(tokens):
        return GOOD_WORDS.get(tokens[j])
    return None


def parse_price(tokens: list[str], numbers: list[_Num]) -> tuple[float | None, set[int]]:
    """The price said, and the token starts of the numbers it used."""
    by_start = {n.start: n for n in numbers}
    for number in numbers:
        before = tokens[number.start - 1] if number.start > 0 else ""
        after = tokens[number.end] if number.end < len(tokens) else ""
        dollars: float | None = None
        used = {number.start}
        next_index = number.end
        if before == "$":
            dollars = number.value
        elif after in DOLLAR_WORDS:
            dollars = number.value
            next_index = number.end + 1
        elif after in CENT_WORDS:
            return round(number.value / 100.0, 2), used
        elif before in FOR_WORDS and _good_after(tokens, number.end) is None:
            dollars = number.value
        if dollars is None:
            continue
        # "three dollars fifty", "3 dollars and 50 cents"
        k = next_index + (1 if next_index < len(tokens) and tokens[next_index] == "and" else 0)
        cents = by_start.get(k)
        if cents is not None and cents.value < 100 and float(cents.value).is_integer() and _good_after(tokens, cents.end) is None:
            said_cents = cents.end < len(tokens) and tokens[cents.end] in CENT_WORDS
            spoken_pair = cents.start == number.end and cents.value >= 10  # "three fifty"
            if next_index != number.end or said_cents or spoken_pair:
                dollars += cents.value / 100.0
                used.add(cents.start)
        return round(dollars, 2), used
    return None, set()


def parse_offer(text: str) -> ParsedOffer:
    """Quantities of the seven goods, the price, and whether the buyer accepts or rejects."""
    tokens = tokenize(text)
    numbers = _numbers(tokens)
    price, used = parse_price(tokens, numbers)
    quantities: dict[str, int] = {}
    for number in numbers:
        if number.start in used:
            continue
        good = _good_after(tokens, number.end)
        if good is not None:
            quantities[good] = quantities.get(good, 0) + int(number.value)
    for token in tokens:
        good = GOOD_WORDS.get(token)
        if good is None or good in quantities:
            continue
        # a good named without a number: "some milk", "a packet of blueberries" -> 1
        quantities[good] = 1
    lowered = text.lower()
    question = lowered.rstrip().endswith("?") or bool(tokens and tokens[0] in QUESTION_START)
    reject = any(re.search(p, lowered) for p in REJECT_PATTERNS)
    better = any(re.search(p, lowered) for p in BETTER_PATTERNS)
    accept = not (reject or question) and any(re.search(p, lowered) for p in ACCEPT_PATTERNS)
    return ParsedOffer(quantities={g: q for g, q in quantities.items() if q > 0}, price=price, accept=accept,
                       reject=reject, better=better, question=question)


def closes_a_deal(text: str) -> bool:
    """Whether another seller's words close a deal ("You've got it! ...", "Deal: that is yours"):
    the EO forwards an agent's message to the other agents without its bid."""
    lowered = text.lower().replace("’", "'")
    return any(re.search(p, lowered) for p in SELLER_CLOSE_PATTERNS) or parse_offer(text).accept
