"""The negotiation domain's vocabulary and a small language model built from it.

Buyers in a HUMAINE round talk about a handful of goods, quantities, units, prices and the two
avatars by name. A general English model mishears exactly those words ("flour" → "flower",
"Celia" → "see you"), and every one of them matters to the deal, so the recognizers are biased
towards this domain: Vosk with a runtime vocabulary, pocketsphinx with a trigram model trained
on sentences generated from the templates below (plus the most frequent general English words
as unigrams, so speech outside the templates still decodes into English words).
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

from workers.runtime.config import DEFAULT_AVATARS

GOODS_COUNTABLE = ("eggs", "egg", "blueberries", "packets of vanilla", "packets of sugar", "chocolate bars")
INGREDIENTS = ("flour", "sugar", "milk", "chocolate", "vanilla", "blueberries", "eggs", "butter", "baking powder")
UNITS = ("cups", "cup", "ounces", "ounce", "teaspoons", "teaspoon", "tablespoons", "tablespoon", "packets", "packet", "pounds", "bags")
NUMBERS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred a an half"
).split()
VERBS = ("buy", "sell", "offer", "accept", "reject", "take", "give", "pay", "want", "need", "get", "have")
DEAL_WORDS = ("deal", "price", "dollars", "dollar", "cents", "total", "each", "per", "counteroffer")

def domain_words(avatars: Sequence[str]) -> tuple[str, ...]:
    """Words that must be recognized reliably (also the Vosk runtime vocabulary's core): the
    room's names (``[core] avatars``), the goods, units, numbers and deal words."""
    return tuple(sorted({
        *(name.lower() for name in avatars),
        *(w for phrase in GOODS_COUNTABLE + INGREDIENTS + UNITS for w in phrase.split()),
        *NUMBERS,
        *VERBS,
        *DEAL_WORDS,
    }))

_TEMPLATES = (
    "{addr}i want {items}",
    "{addr}i would like {items}",
    "{addr}i'd like to buy {items}",
    "{addr}can i get {items}",
    "{addr}can i have {items} for {price}",
    "{addr}i need {items}",
    "{addr}i'll buy {items} for {price}",
    "{addr}i'll give you {price} for {items}",
    "{addr}how about {price} for {items}",
    "{addr}how about {items} for {price}",
    "{addr}would you sell me {items}",
    "{addr}sell me {items} for {price}",
    "{addr}i offer {price}",
    "{addr}i offer {price} for {items}",
    "{addr}my offer is {price}",
    "{addr}what is your price for {items}",
    "{addr}how much for {items}",
    "{addr}how much do you want for {items}",
    "{addr}that is too expensive",
    "{addr}that's too much",
    "{addr}can you do {price}",
    "{addr}i accept your offer",
    "{addr}i accept",
    "{addr}i reject that offer",
    "{addr}no deal",
    "{addr}deal",
    "{addr}it's a deal",
    "{addr}okay i'll take it",
    "{addr}yes please",
    "{addr}no thank you",
    "{addr}let's make a deal",
    "{addr}i want {items} and {items}",
    "{addr}give me {items} and {items} for {price}",
    "{addr}what do you have",
    "{addr}do you have {items}",
    "{addr}i'll pay {price}",
    "{addr}that's my final offer",
    "hello {name}",
    "hi {name} how are you",
    "thank you {name}",
)


def _number(rng: random.Random) -> str:
    small = NUMBERS[: 20]
    if rng.random() < 0.7:
        return rng.choice(small)
    return f"{rng.choice(NUMBERS[19:27])} {rng.choice(small[:9])}" if rng.random() < 0.5 else rng.choice(NUMBERS[19:27])


def _items(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.4:
        return f"{_number(rng)} {rng.choice(UNITS)} of {rng.choice(INGREDIENTS)}"
    if r < 0.6:
        return f"a {rng.choice(UNITS[1::2])} of {rng.choice(INGREDIENTS)}"
    if r < 0.9:
        return f"{_number(rng)} {rng.choice(GOODS_COUNTABLE)}"
    return f"some {rng.choice(INGREDIENTS)}"


def _price(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.5:
        return f"{_number(rng)} dollars"
    if r < 0.7:
        return f"{_number(rng)} dollars and {_number(rng)} cents"
    if r < 0.85:
        return f"{_number(rng)} dollars each"
    return f"{_number(rng)} cents"


def corpus_sentences(n: int = 6000, seed: int = 7, avatars: Sequence[str] = DEFAULT_AVATARS) -> list[str]:
    """Deterministic training sentences for the domain language model, addressed to the room's
    avatars."""
    rng = random.Random(seed)
    names = [name.lower() for name in avatars]
    out: list[str] = []
    for _ in range(n):
        name = rng.choice(names)
        addr = rng.choice(("", "", f"{name} ", f"hey {name} ", f"{name} "))
        sentence = rng.choice(_TEMPLATES).format(
            addr=addr, name=name, items=_items(rng), price=_price(rng)
        )
        out.append(re.sub(r"\s+", " ", sentence).strip())
    return out


def corpus_vocabulary(sentences: Iterable[str]) -> set[str]:
    return {w for s in sentences for w in s.split()}


def build_arpa(
    sentences: Iterable[str],
    background: Mapping[str, float] | None = None,
    background_mass: float = 0.1,
    discount: float = 0.5,
) -> str:
    """A backoff trigram model in ARPA text form (absolute discounting).

    ``background`` maps extra words to their (relative) general-English probability; together
    they receive ``background_mass`` of the unigram distribution so out-of-template speech can
    still be decoded, while the template n-grams dominate."""
    uni: Counter[str] = Counter()
    bi: Counter[tuple[str, str]] = Counter()
    tri: Counter[tuple[str, str, str]] = Counter()
    for sentence in sentences:
        words = ["<s>", *sentence.split(), "</s>"]
        uni.update(words[1:])
        bi.update(itertools.pairwise(words))
        tri.update(zip(words, words[1:], words[2:], strict=False))
    total = sum(uni.values())
    p1: dict[str, float] = {w: (1.0 - background_mass) * c / total for w, c in uni.items()}
    p1["<s>"] = 0.0
    if background:
        extra = {w: p for w, p in background.items() if w not in uni and w not in ("<s>", "</s>")}
        norm = sum(extra.values()) or 1.0
        for w, p in extra.items():
            p1[w] = background_mass * p / norm
    else:
        scale = 1.0 / (1.0 - background_mass)
        p1 = {w: p * scale for w, p in p1.items()}

    Probs = dict[tuple[str, ...], float]

    def discounted(counts: Mapping[tuple[str, ...], int]) -> tuple[Probs, Probs]:
        hist_total: dict[tuple[str, ...], int] = defaultdict(int)
        for gram, c in counts.items():
            hist_total[gram[:-1]] += c
        probs = {gram: (c - discount) / hist_total[gram[:-1]] for gram, c in counts.items()}
        left: dict[tuple[str, ...], float] = defaultdict(lambda: 1.0)
        for gram, p in probs.items():
            left[gram[:-1]] -= p
        return probs, dict(left)

    p2, left2 = discounted(bi)  # type: ignore[arg-type]
    p3, left3 = discounted(tri)  # type: ignore[arg-type]

    def lower2(h: tuple[str, ...], w: str) -> float:
        return p1.get(w, 0.0)

    bo1: dict[str, float] = {}
    seen_after: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for gram in p2:
        seen_after[gram[:-1]].append(gram[-1])
    for h, words in seen_after.items():
        denom = 1.0 - sum(lower2(h, w) for w in words)
        bo1[h[0]] = left2[h] / denom if denom > 1e-9 else 1.0

    def p_bigram(a: str, b: str) -> float:
        if (a, b) in p2:
            return p2[(a, b)]
        return bo1.get(a, 1.0) * p1.get(b, 0.0)

    bo2: dict[tuple[str, str], float] = {}
    seen3: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for gram in p3:
        seen3[gram[:-1]].append(gram[-1])
    for h, words in seen3.items():
        denom = 1.0 - sum(p_bigram(h[1], w) for w in words)
        bo2[(h[0], h[1])] = left3[h] / denom if denom > 1e-9 else 1.0

    def lg(x: float) -> str:
        return f"{math.log10(x):.4f}" if x > 0 else "-99.0000"

    lines = ["\\data\\", f"ngram 1={len(p1)}", f"ngram 2={len(p2)}", f"ngram 3={len(p3)}", "", "\\1-grams:"]
    for w in sorted(p1):
        lines.append(f"{lg(p1[w])} {w} {lg(bo1.get(w, 1.0))}")
    lines += ["", "\\2-grams:"]
    for gram in sorted(p2):
        bo = bo2.get((gram[0], gram[1]))
        lines.append(f"{lg(p2[gram])} {gram[0]} {gram[1]}" + (f" {lg(bo)}" if bo is not None else ""))
    lines += ["", "\\3-grams:"]
    for gram in sorted(p3):
        lines.append(f"{lg(p3[gram])} {' '.join(gram)}")
    lines += ["", "\\end\\", ""]
    return "\n".join(lines)
