"""Does a final transcript read as a finished utterance, or as one the speaker broke off?

The merge hold exists so that a sentence with a pause in it reaches the EO as one message;
holding *every* final for the merge gap makes every complete sentence pay that wait too. People
pause mid-sentence at predictable places: after a function word ("three cups of ..."), a
conjunction ("two eggs and ..."), a verb still waiting for its object ("I would like ..."), a
filler ("uh ..."), a number still waiting for its unit ("I need three ..."), or right after
naming whom they speak to ("hey Watson ..."). A final that ends like that is held; any other
final is released at once. The decision reads only the text, so it works the same for every
recogniser; the word lists come from the ``[transcript]`` configuration.

Punctuation, where a recogniser writes it (Whisper does, pocketsphinx and Vosk do not), is
read first: ``?`` or ``!`` closes an utterance ("can you do 3?"); a trailing comma, dash or
ellipsis leaves it open. Except after a hold word: Whisper, hearing a sentence cut off, often
writes it as a question ("can you sell me three cups of?", "for?"), so a question mark does not
close a sentence that ends in one. The same goes for a giving verb whose thing is still to come
("can you give me?", "sell us"): a giving verb (``merge_hold_giving_verbs``, by default
:data:`GIVING_VERBS`) followed by ``me`` or ``us``.

One cue is not in the text: where a final carries its pitch (``pitch_end``, measured by the
microphone) and ``merge_hold_level_pitch_st`` is set, a final that reads as complete but whose
pitch did not fall at least that far below its median waits too: a statement read aloud ends
low, a speaker who stops mid-thought mostly does not, and the recogniser sometimes hears a broken-off
first half as a finished sentence ("can you give me a ..." as "Can you give me up?"). A ``?``
or ``!`` still closes it (questions rise).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_WORD = re.compile(r"[$@]?[^\W_]+(?:[.,'][^\W_]+)*", re.UNICODE)
_CLOSING = ("?", "!")
_TRAILING_OFF = (",", "-", "\u2013", "\u2014", "...", "\u2026", ";", ":")

NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred thousand".split()
)
"""Spoken numbers (a recogniser's words; after digit normalisation the same numbers are digits)."""

CONJUNCTIONS = ("and", "or", "but", "so", "because", "cause", "if", "then", "than", "plus", "nor", "unless",
                "although", "while", "whereas")
"""Not "though": in talk it mostly ends a sentence ("I'm in New Jersey now, though.")."""
PREPOSITIONS = ("for", "of", "to", "at", "in", "on", "with", "from", "about", "by", "per", "into", "onto",
                "over", "under", "between", "without", "after", "before", "around", "as")
DETERMINERS = ("a", "an", "the", "some", "any", "my", "your", "our", "their", "his", "her", "its", "these",
               "those", "each", "every", "another", "both")
FILLERS = ("uh", "um", "umm", "uhm", "er", "erm", "ah", "eh", "hmm", "mm", "mhm")
OPEN_VERBS = ("would", "could", "should", "can", "will", "shall", "might", "must", "i'd", "i'll", "i'm",
              "we'd", "we'll", "let's", "like", "want", "need", "buy", "sell", "pay", "give", "take")
"""Words after which a buyer's sentence still needs its object ("I would like ..."). Words that
also close common answers ("I accept your offer", "yes it is", "what do you have") are left out:
holding a complete sentence costs the merge gap, splitting a broken one costs a second message."""

GIVING_VERBS = ("give", "sell", "get", "offer", "bring", "send", "pass", "hand", "find", "make", "lend")
"""Verbs that take the buyer and then the thing ("give me ... two eggs"): ending in one of them
plus ``me`` or ``us`` reads as cut off. Verbs whose "… me" is complete ("help me", "tell me",
"show me") are left out."""
RECEIVERS = ("me", "us")

DEFAULT_HOLD_WORDS: tuple[str, ...] = (*CONJUNCTIONS, *PREPOSITIONS, *DETERMINERS, *FILLERS, *OPEN_VERBS)


@dataclass(frozen=True)
class Completeness:
    """The text rules of the merge decision (see the module docstring)."""

    hold_words: frozenset[str]
    """A final whose last word is one of these reads as cut off."""
    openers: frozenset[str]
    """Greetings, fillers and the avatars' names (lower case): a final made only of these
    ("hey Watson!", "um") has not said anything yet, whatever its punctuation."""
    hold_bare_numbers: bool = True
    """A final ending in a number without a unit ("I need three") reads as cut off; money
    (``$3``, "three dollars") and "a dozen" do not."""
    giving_verbs: frozenset[str] = frozenset(GIVING_VERBS)
    """A final ending in one of these plus ``me``/``us`` ("can you give me") reads as cut off."""
    level_pitch_st: float | None = None
    """A final whose pitch ends above this many semitones from its median reads as cut off
    (unless a ``?`` or ``!`` closes it); ``None``: the pitch is not looked at."""

    @classmethod
    def build(
        cls,
        hold_words: Iterable[str],
        greetings: Iterable[str],
        avatars: Iterable[str],
        hold_bare_numbers: bool = True,
        giving_verbs: Iterable[str] = GIVING_VERBS,
        level_pitch_st: float | None = None,
    ) -> Completeness:
        openers = {w.lower() for w in greetings} | {a.lower() for a in avatars}
        return cls(
            frozenset(w.lower() for w in hold_words),
            frozenset(openers),
            hold_bare_numbers,
            frozenset(w.lower() for w in giving_verbs),
            level_pitch_st,
        )

    def unfinished(self, text: str, pitch_end: float | None = None) -> str | None:
        """Why ``text`` (whose pitch ended ``pitch_end`` semitones from its median, when
        known) reads as cut off, or ``None`` when it reads as complete."""
        stripped = text.strip()
        if not stripped:
            return None
        words = [w.lower().lstrip("@") for w in _WORD.findall(stripped)]
        if words and all(w in self.openers for w in words):  # "Hey Watson!" has not said anything yet
            return "says nothing yet but a greeting or a name"
        last = words[-1] if words else ""
        if last in self.hold_words:
            return f"ends in {last!r}"
        if len(words) >= 2 and last in RECEIVERS and words[-2] in self.giving_verbs:
            return f"ends in {words[-2]!r} {last!r} without the thing given"
        if stripped.endswith(_CLOSING):
            return None
        for mark in _TRAILING_OFF:
            if stripped.endswith(mark):
                return f"trails off with {mark!r}"
        if not words:
            return None
        if self.hold_bare_numbers and _bare_number(last):
            return f"ends in a number without its unit ({last!r})"
        if self.level_pitch_st is not None and pitch_end is not None and pitch_end > self.level_pitch_st:
            return f"its pitch did not fall ({pitch_end:+.1f} semitones at the end)"
        return None


def _bare_number(word: str) -> bool:
    if word.startswith("$"):
        return False
    return word in NUMBER_WORDS or bool(re.fullmatch(r"\d+(?:[.,]\d+)?", word))
