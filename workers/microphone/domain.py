"""The negotiation domain's vocabulary and a small language model built from it.

Buyers in a HUMAINE round talk about a handful of goods, quantities, units, prices and the two
avatars by name. A general English model mishears exactly those words ("flour" → "flower",
"Celia" → "see you"), and every one of them matters to the deal, so the recognizers are biased
towards this domain: Vosk with a runtime vocabulary, pocketsphinx with a trigram model trained
on sentences generated from the templates below (plus the most frequent general English words
as unigrams, so speech outside the templates still decodes into English words).
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

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


Gram = tuple[str, ...]
"""An n-gram, or the history before its last word."""
Probs = dict[Gram, float]


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
    uni, bi, tri = _count_ngrams(sentences)
    p1 = _unigram_probs(uni, background, background_mass)
    p2, left2 = _discounted(bi, discount)
    p3, left3 = _discounted(tri, discount)
    bo1 = _backoff_weights(p2, left2, functools.partial(_unigram_prob, p1))
    bo2 = _backoff_weights(p3, left3, functools.partial(_bigram_prob, p1, p2, bo1))
    return _arpa_text(p1, p2, p3, bo1, bo2)


def _count_ngrams(sentences: Iterable[str]) -> tuple[Counter[str], Counter[Gram], Counter[Gram]]:
    """Unigram, bigram and trigram counts, each sentence between ``<s>`` and ``</s>``."""
    uni: Counter[str] = Counter()
    bi: Counter[Gram] = Counter()
    tri: Counter[Gram] = Counter()
    for sentence in sentences:
        words = ["<s>", *sentence.split(), "</s>"]
        uni.update(words[1:])
        bi.update(itertools.pairwise(words))
        tri.update(zip(words, words[1:], words[2:], strict=False))
    return uni, bi, tri


def _unigram_probs(uni: Counter[str], background: Mapping[str, float] | None, background_mass: float) -> dict[str, float]:
    """The template words' shares, with ``background_mass`` left to the background's words
    (or spread over the template words when there is no background)."""
    total = sum(uni.values())
    p1: dict[str, float] = {w: (1.0 - background_mass) * c / total for w, c in uni.items()}
    p1["<s>"] = 0.0
    if not background:
        scale = 1.0 / (1.0 - background_mass)
        return {w: p * scale for w, p in p1.items()}
    extra = {w: p for w, p in background.items() if w not in uni and w not in ("<s>", "</s>")}
    norm = sum(extra.values()) or 1.0
    for w, p in extra.items():
        p1[w] = background_mass * p / norm
    return p1


def _discounted(counts: Mapping[Gram, int], discount: float) -> tuple[Probs, Probs]:
    """Each n-gram's discounted probability given its history, and the mass each history
    leaves to the lower order."""
    hist_total: dict[Gram, int] = defaultdict(int)
    for gram, c in counts.items():
        hist_total[gram[:-1]] += c
    probs = {gram: (c - discount) / hist_total[gram[:-1]] for gram, c in counts.items()}
    left: dict[Gram, float] = defaultdict(lambda: 1.0)
    for gram, p in probs.items():
        left[gram[:-1]] -= p
    return probs, dict(left)


def _unigram_prob(p1: Mapping[str, float], _history: Gram, word: str) -> float:
    return p1.get(word, 0.0)


def _bigram_prob(p1: Mapping[str, float], p2: Probs, bo1: Probs, history: Gram, word: str) -> float:
    """The bigram model's probability of ``word`` after the last word of ``history``."""
    a = history[-1]
    if (a, word) in p2:
        return p2[(a, word)]
    return bo1.get((a,), 1.0) * p1.get(word, 0.0)


def _backoff_weights(probs: Probs, left: Probs, lower: Callable[[Gram, str], float]) -> Probs:
    """Each history's backoff weight: the mass it left, over what the lower order gives the
    words never seen after it."""
    seen_after: dict[Gram, list[str]] = defaultdict(list)
    for gram in probs:
        seen_after[gram[:-1]].append(gram[-1])
    weights: Probs = {}
    for h, words in seen_after.items():
        denom = 1.0 - sum(lower(h, w) for w in words)
        weights[h] = left[h] / denom if denom > 1e-9 else 1.0
    return weights


def _log10(x: float) -> str:
    return f"{math.log10(x):.4f}" if x > 0 else "-99.0000"


def _arpa_text(p1: Mapping[str, float], p2: Probs, p3: Probs, bo1: Probs, bo2: Probs) -> str:
    """The model in the ARPA text format the decoders read (log10 probabilities and backoffs)."""
    lines = ["\\data\\", f"ngram 1={len(p1)}", f"ngram 2={len(p2)}", f"ngram 3={len(p3)}", "", "\\1-grams:"]
    for w in sorted(p1):
        lines.append(f"{_log10(p1[w])} {w} {_log10(bo1.get((w,), 1.0))}")
    lines += ["", "\\2-grams:"]
    for gram in sorted(p2):
        bo = bo2.get(gram)
        lines.append(f"{_log10(p2[gram])} {gram[0]} {gram[1]}" + (f" {_log10(bo)}" if bo is not None else ""))
    lines += ["", "\\3-grams:"]
    for gram in sorted(p3):
        lines.append(f"{_log10(p3[gram])} {' '.join(gram)}")
    lines += ["", "\\end\\", ""]
    return "\n".join(lines)
