"""Prices in a final that should not be trusted as written: flagged, never guessed.

A price is a deal term; a wrong one is a wrong deal, and guessing the right one would be
inventing it. Two ways a price goes wrong between Whisper's decoder and the text, both seen on
negotiation speech:

- ``garbled``: the decoder wrote the amount in pieces that make no one number ("$4 .0 .0." for
  "four dollars and ten cents", "$4.00.10", "$4." "10.", a lone "$"). The normaliser
  (:mod:`workers.microphone.normalize`) writes what the pieces say unambiguously (``$4``) and
  keeps what the decoder wrote on the word (:attr:`WordTiming.heard`), which the doubt carries;
- ``no_amount``: a money word with no amount before it ("I'll pay dollars for the eggs": the
  decoder lost "eight"). An offer without its amount is no offer.

:func:`doubtful_prices` lists them for a final (:mod:`workers.microphone.review`);
:func:`prices_whole` and :func:`text_prices_whole` answer the same question with a yes or no, for
a caller that compares hypotheses (the n-best rescorer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from workers.microphone.normalize import MONEY_WORDS, NUMBER_WORDS, normalize_text_words
from workers.microphone.recognizer import WordTiming
from workers.runtime.config import DEFAULT_AVATARS

GARBLED = "garbled"
AMOUNTLESS = "no_amount"
"""The doubts' reasons (the module's docstring)."""
AMOUNT_ON_PURPOSE = frozenset({
    "many", "much", "few", "more", "fewer", "less", "of", "in", "the", "those", "these", "my", "your", "his", "her",
    "our", "their", "no", "several",
})
"""Before a money word, these show it was said without an amount on purpose ("how many dollars",
"in dollars", "a few more dollars"), not that the decoder lost one."""
_ARTICLES = frozenset({"a", "an"})
"""Before a singular money word, the amount ("a dollar"), as the words style keeps it."""
PUNCTUATION = ",.!?;:"
"""What may end a word as the decoder writes it ("eggs,", "$4.")."""
_LETTERS = re.compile(r"[^a-z'-]+")
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class PriceDoubt:
    """One price the final should not be trusted on."""

    text: str
    """The word as it stands in the text (``$4``, ``dollars``), its punctuation left off."""
    heard: str
    """``garbled``: what the decoder wrote ("$4 .0 .0."); otherwise empty."""
    start_ms: int
    end_ms: int
    conf: float
    reasons: tuple[str, ...]
    """``garbled``, ``no_amount``."""


def _core(word: str) -> str:
    return _LETTERS.sub("", word.lower())


def _is_amount(word: str, money_word: str) -> bool:
    """``word`` says how much of the money word after it: digits, a spoken number, "a" (dollar)."""
    core = _core(word)
    spoken = bool(core) and all(part in NUMBER_WORDS for part in core.split("-"))
    return bool(_DIGIT.search(word)) or spoken or (core in _ARTICLES and not money_word.endswith("s"))


def _has_amount(words: Sequence[WordTiming], i: int) -> bool:
    """The money word ``words[i]`` has an amount before it, or is said without one on purpose."""
    if i == 0 or words[i - 1].word.strip()[-1:] in PUNCTUATION:
        return False
    before = words[i - 1].word
    return _is_amount(before, _core(words[i].word)) or _core(before) in AMOUNT_ON_PURPOSE


def doubtful_prices(words: Sequence[WordTiming]) -> list[PriceDoubt]:
    """The doubtful prices among ``words`` (normalised words of one final), in order."""
    doubts: list[PriceDoubt] = []
    for i, w in enumerate(words):
        reasons = [GARBLED] if w.heard else []
        if _core(w.word) in MONEY_WORDS and not _has_amount(words, i):
            reasons.append(AMOUNTLESS)
        if reasons:
            doubts.append(PriceDoubt(w.word.strip().rstrip(PUNCTUATION), w.heard, w.start_ms, w.end_ms,
                                     round(w.conf, 3), tuple(reasons)))
    return doubts


def prices_whole(words: Sequence[WordTiming]) -> bool:
    """Every price in ``words`` (normalised) was written whole by the decoder and has its amount."""
    return not doubtful_prices(words)


def text_prices_whole(text: str, avatars: Sequence[str] = DEFAULT_AVATARS) -> bool:
    """:func:`prices_whole` on a hypothesis's text as the decoder wrote it (normalised here)."""
    return prices_whole(normalize_text_words(text, avatars=avatars))
