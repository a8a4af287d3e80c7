"""N-best rescoring: among the beam's near-equal hypotheses, the one that reads like the room.

Whisper's beam search ends with several hypotheses whose scores lie within a few hundredths of
a nat per token; tiny.en's top one is then often the one that breaks a deal term ("milk, $47"
for "milk, for $7", "for ounces" for "four ounces", "free eggs" for "three eggs"), while the
right one is second or third. The field's answer is to rescore the n-best list with a language
model of what is said (shallow fusion at the hypothesis level): the acoustic score plus
:data:`DEFAULT_WEIGHT` times the language model's mean log-probability per word.

The language model is the negotiation domain's trigram model (:mod:`workers.microphone.domain`,
built once and cached, the same file pocketsphinx's domain mode uses) interpolated with
pocketsphinx's general English trigram model, so that speech outside the templates ("please
enter a new extension", "call forwarding") is judged as English and not pulled towards the
domain. Only hypotheses within :data:`MARGIN` of the best acoustic score compete: the language
model breaks near-ties, it never outvotes the audio. Nor does it choose who is addressed: only
hypotheses that name the same avatars as the decoder's best compete (a domain model likes
"Watson, is your price..." for "What is your price..."; names are the name recovery's to
question, with a doubt, :mod:`workers.microphone.names`).

Amounts and numbers are read as said (``$7.50`` → "seven dollars fifty", ``3`` → "three", by
:func:`formats.spoken_amounts.heard`, as buyers say them), the words both models know.

Deal terms come first. A hypothesis whose deal terms are broken — a count before a word that is
no unit of the domain but the end of one ("60 spoons": the "-ty" of "sixty" is the "tea" of
"teaspoons") — loses to one within the margin whose deal terms are whole, whatever the language
model says (:func:`deal_faults`); so does one whose price came out in pieces ("$4 .0 .0.")
or without its amount ("I'll pay dollars for") when another within the margin has it whole.
And the beam is read for the split the domain says: tiny.en hears "six teaspoons" and "sixty
spoons" as the same sounds and may keep only the second in all five hypotheses, so each
hypothesis with a tens number before such a fragment also competes re-split ("6 teaspoons",
:func:`workers.microphone.quantities.tens_resplit`), at its acoustic score: the same sounds,
written as the domain's words.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from formats.spoken_amounts import MAX_DOLLARS, heard, number_words
from workers.microphone.normalize import NUMBER_WORDS, normalize_words
from workers.microphone.prices import PUNCTUATION, doubtful_prices
from workers.microphone.quantities import DOMAIN_UNITS, doubtful_quantities, letters, singular, tens_resplit
from workers.microphone.recognizer import WordTiming
from workers.runtime.config import DEFAULT_AVATARS

log = logging.getLogger(__name__)

DEFAULT_WEIGHT = 0.5
"""Language-model weight (``[microphone] whisper_rescore_weight``). Chosen on two espeak-ng
voices that are not in the benchmark's default corpus (0.25, 0.5 and 1.0 measured alike there:
48 → 49 of 60 utterances exact) and then measured on the default corpus (bench/stt.py; the
figures are in docs/microphone.md#n-best-rescoring-of-the-finals)."""
MARGIN = 0.1
"""Hypotheses more than this below the best acoustic score (mean log-probability per token) do
not compete. 0.05, 0.1 and no bound measured alike on the tuning voices."""
DOMAIN_SHARE = 0.8
"""The domain model's share in the interpolation (the general English model has the rest). With
the domain model alone, prompts outside the domain changed ("please enter a new extension" →
"please enter in new extension", "call forwarding" → "call for reading"): Asterisk prompts' WER
0.029 → 0.034; interpolated at 0.8: 0.031, and read speech 0.083 → 0.073."""
FLOOR_LOG10 = -10.0
"""A word a model does not know costs this much (log10), instead of pocketsphinx's -23,000."""
_LOG10_PER_UNIT = math.log10(1.0001)
"""pocketsphinx's ``NGramModel.prob`` answers in LogMath units of base 1.0001."""
_DIGITS = re.compile(r"\d+")
_WORD = re.compile(r"[a-z']+")


def lm_words(text: str) -> list[str]:
    """``text`` as the words a language model scores: amounts and numbers said in words,
    lowercase, punctuation dropped."""
    said = heard(text).lower()

    def number(match: re.Match[str]) -> str:
        value = int(match.group())
        return f" {number_words(value)} " if value < MAX_DOLLARS else " "

    return _WORD.findall(_DIGITS.sub(number, said))


_TENS_WORDS = {number_words(n): n for n in range(20, 100, 10)}
_GLUED = re.compile(r"^\d+x\d*$")
_GLUED_EGGS = re.compile(r"^(\d+)[xX](\d*[.,!?]?)$")
_LED_BY_FOUR = re.compile(r"^(\$?)4(\d+)([.,!?]?)$")
_FOUR = frozenset({"4", number_words(4)})
FOR = "for"
"""Said before a price, and heard as a 4 leading the number after it ("for $7" → "$47")."""
EGGS = "eggs"
"""What "x" after a count is at this table: "two eggs" and "two x" are the same sounds."""
_COUNT = re.compile(r"^\d+$")
BROKEN_QUANTITY = "not_a_unit"
"""The quantity doubt (:mod:`workers.microphone.quantities`) that marks a broken deal term."""


def deal_faults(text: str) -> int:
    """How many deal terms of a decoder's ``text`` are broken: counts before a word that is no
    unit of the domain but the end of one ("60 spoons"), prices written in pieces that make no
    one amount ("$4 .0 .0.") and money words without their amount ("I'll pay dollars for"),
    numbers glued by an "x" ("2x3 cups", "12x44 dollars": "two eggs and three cups", "twelve eggs
    for four dollars"; nobody multiplies at this table), a bare count right before a price
    ("2 teaspoons of vanilla 4 $1": "for $1") and a unit written as two words ("table spoons")."""
    words = normalize_words([WordTiming(w, 0, 0) for w in text.split()])
    quantities = sum(BROKEN_QUANTITY in d.reasons for d in doubtful_quantities(words, min_conf=0.0))
    cores = [w.word.strip().rstrip(PUNCTUATION).lower() for w in words]
    glued = sum(bool(_GLUED.match(core)) for core in cores)
    counted_price = sum(
        bool(_COUNT.match(a)) and b.startswith("$") and words[i].word.strip()[-1:] not in PUNCTUATION
        for i, (a, b) in enumerate(itertools.pairwise(cores))
    )
    split_units = sum(_one_unit(a, b) is not None for a, b in itertools.pairwise(cores))
    return quantities + len(doubtful_prices(words)) + glued + counted_price + split_units


def resplit(text: str) -> str | None:
    """``text`` as the domain splits the same sounds, or ``None`` when that changes nothing:

    - an "x" after a count is "eggs" ("2x3 cups" → "2 eggs 3 cups", "two X and" → "two eggs and");
    - a unit written as two words is one ("2 table spoons" → "2 tablespoons");
    - a tens number before a unit missing the "-ty" sound is the count and the unit ("I need 60
      spoons" → "I need 6 teaspoons", "sixty spoons" → "six teaspoons");
    - after goods or a unit, a number led by a 4 is "for" and the rest ("12 eggs 44 dollars" →
      "12 eggs for 4 dollars", "milk, $47" → "milk, for $7", "vanilla 4 $1" or "vanilla four $1"
      → "vanilla for $1")."""
    tokens = text.split()
    split = _for_homophone(_tens_units(_joined_units(_eggs(tokens))))
    return " ".join(split) if split != tokens else None


def _core(token: str) -> str:
    return token.rstrip(PUNCTUATION)


def _is_count(token: str) -> bool:
    """A count standing on its own (digits or words, no punctuation after it)."""
    return token == _core(token) and (token.isdigit() or token.lower() in NUMBER_WORDS)


def _eggs(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for token in tokens:
        glued = _GLUED_EGGS.match(token)
        if glued is not None:
            count, after = glued.group(1), glued.group(2)
            out += [count, EGGS + after] if not _core(after) else [count, EGGS, after]
        elif _core(token).lower() == "x" and out and _is_count(out[-1]):
            out.append(EGGS + token[len(_core(token)):])
        else:
            out.append(token)
    return out


def _joined_units(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for token in tokens:
        joined = _one_unit(out[-1], _core(token)) if out else None
        out[-1:] = [joined + token[len(_core(token)):]] if joined is not None else [*out[-1:], token]
    return out


def _tens_units(tokens: list[str]) -> list[str]:
    out = list(tokens)
    for i in range(len(out) - 1):
        number = out[i].lower()
        if number != _core(number):
            continue  # "sixty, spoons": not one quantity
        value = int(number) if number.isdigit() else _TENS_WORDS.get(number)
        fragment = _core(out[i + 1])
        said = tens_resplit(float(value), fragment) if value is not None else None
        if said is not None:
            count, unit = said.split(" ", 1)
            out[i] = count if number.isdigit() else number_words(int(count))
            out[i + 1] = unit + out[i + 1][len(fragment):]
    return out


def _an_amount(token: str) -> bool:
    """Whether ``token`` starts an amount as the decoder writes one ("$1", "1", "one", "a")."""
    core = _core(token).lower()
    return core.startswith("$") or core.isdigit() or core in NUMBER_WORDS or core in ("a", "an")


def _for_homophone(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for i, token in enumerate(tokens):
        after_goods = bool(out) and singular(letters(out[-1])) in DOMAIN_UNITS
        led = _LED_BY_FOUR.match(token)
        if after_goods and led is not None:
            out += [FOR, led.group(1) + led.group(2) + led.group(3)]
        elif after_goods and token.lower() in _FOUR and i + 1 < len(tokens) and _an_amount(tokens[i + 1]):
            out.append(FOR)
        else:
            out.append(token)
    return out


def _one_unit(first: str, second: str) -> str | None:
    """Two words that are one unit of the domain written apart ("table spoons" → "tablespoons"),
    or ``None``."""
    if not first.isalpha() or not second.isalpha() or singular(first.lower()) in DOMAIN_UNITS:
        return None
    whole = (first + second).lower()
    return whole if singular(whole) in DOMAIN_UNITS else None


@dataclass(frozen=True)
class Pick:
    """What the rescorer keeps: the beam's hypothesis ``index``, as it was or re-split (``text``)."""

    index: int
    text: str
    resplit: bool = False


class _NGramModel(Protocol):
    """A pocketsphinx ``NGramModel`` as the rescoring asks it (pocketsphinx ships no types)."""

    def prob(self, words: list[str]) -> int:
        """The log probability of the last of ``words`` after the others, in the model's own
        log base (:data:`_LOG10_PER_UNIT` converts it)."""
        ...


class InterpolatedLM:
    """Two pocketsphinx n-gram models mixed word by word: ``share`` · P_domain + (1 − share) · P_general."""

    def __init__(self, domain_path: Path, general_path: Path, share: float = DOMAIN_SHARE) -> None:
        from pocketsphinx import Config, LogMath, NGramModel

        config = Config()
        config.set_string("-logfn", os.devnull)  # pocketsphinx logs every model it reads otherwise
        self.domain: _NGramModel = NGramModel(config, LogMath(), str(domain_path))
        self.general: _NGramModel = NGramModel(config, LogMath(), str(general_path))
        self.share = share
        self._lock = threading.Lock()
        """pocketsphinx's trie models keep scratch state per lookup; finals can decode on two threads
        (a speculative final on the background thread, a names' second pass on the caller's)."""

    def _log10(self, model: _NGramModel, query: list[str]) -> float:
        return max(float(model.prob(query)) * _LOG10_PER_UNIT, FLOOR_LOG10)

    def mean_log10(self, words: Sequence[str]) -> float:
        """Mean log10 probability per word of the sentence ``words`` (its end included)."""
        history = ["<s>"]
        total = 0.0
        with self._lock:
            for word in [*words, "</s>"]:
                query = [word, *reversed(history[-2:])]  # pocketsphinx: the word, then its history, latest first
                domain = 10 ** self._log10(self.domain, query)
                general = 10 ** self._log10(self.general, query)
                total += math.log10(self.share * domain + (1.0 - self.share) * general)
                history.append(word)
        return total / (len(words) + 1)


class NBestRescorer:
    """Picks one of a beam's hypotheses: acoustic score + ``weight`` · language-model score."""

    def __init__(
        self, lm: InterpolatedLM, weight: float = DEFAULT_WEIGHT, margin: float = MARGIN,
        names: Sequence[str] = DEFAULT_AVATARS
    ) -> None:
        self.lm = lm
        self.names = frozenset(n.lower() for n in names)
        self.weight = weight
        self.margin = margin
        self.rescored = 0
        """Hypothesis lists looked at; ``changed``: those where another than the top one won."""
        self.changed = 0

    def _names(self, words: Sequence[str]) -> list[str]:
        return [w for w in words if w in self.names]

    def choose(self, texts: Sequence[str], scores: Sequence[float]) -> Pick:
        """What to keep of the beam (``texts``, ``scores``: the decoder's, best first): among the
        hypotheses within :attr:`margin` of the best that name the same avatars as the first,
        and their re-splits, those with the fewest broken deal terms, then the best acoustic
        score + ``weight`` · language-model score."""
        self.rescored += 1
        if not texts:
            return Pick(0, "")
        best = max(scores)
        said = [lm_words(text) for text in texts]
        named = self._names(said[0])
        candidates: list[tuple[int, str, float, list[str], bool]] = [
            (i, text, score, words, False)
            for i, (text, words, score) in enumerate(zip(texts, said, scores, strict=True))
            if best - score <= self.margin and self._names(words) == named
        ]
        competing = [words for _, _, _, words, _ in candidates]
        for i, text, score, _, _ in list(candidates):
            split = resplit(text)
            split_words = lm_words(split) if split is not None else []
            if split is not None and split_words not in competing:  # one the beam has in the margin competes as its own
                candidates.append((i, split, score, split_words, True))
                competing.append(split_words)
        if len(candidates) < 2:
            return Pick(0, texts[0])
        faults = [deal_faults(text) for _, text, *_ in candidates]
        fewest = min(faults)
        combined = [
            (score + self.weight * self.lm.mean_log10(words), -n, n)
            for n, ((_, _, score, words, _), fault) in enumerate(zip(candidates, faults, strict=True))
            if fault == fewest
        ]
        index, text, _, _, was_split = candidates[max(combined)[2]]
        pick = Pick(index, text, was_split)
        if index != 0 or was_split:
            self.changed += 1
            log.debug("rescored: %r over %r", text, texts[0])
        return pick


def domain_rescorer(cache_dir: Path, extra_words: tuple[str, ...] = (), weight: float = DEFAULT_WEIGHT,
                    avatars: Sequence[str] = DEFAULT_AVATARS) -> NBestRescorer:
    """The rescorer with the domain model (built once under ``cache_dir``, with the room's
    names) and pocketsphinx's general English model, both from the pocketsphinx wheel: nothing
    to download."""
    from workers.microphone.engine_pocketsphinx import domain_lm_path, general_lm_path

    lm = InterpolatedLM(domain_lm_path(cache_dir, extra_words, avatars), general_lm_path())
    return NBestRescorer(lm, weight, names=avatars)
