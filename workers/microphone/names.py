"""An avatar's name the recogniser misheard at the start of an utterance, recovered by sound.

A leading name is the strongest addressee cue (the Rich Transcript worker's ``NameMatcher``),
and Whisper tiny.en mishears exactly those two names: "Celia" as "Sally", "See you", "Seal
you", "Sealer"; "Watson" as "What's a", "Watching", "Watts and". Only the microphone knows how
sure the decoder was of each word, and that is what tells the two apart (``bench/names.py``,
six synthetic voices): a misheard name's first word came at a probability of 0.01-0.55, the
same word said for itself ("See you tomorrow", "Sadly, that is too expensive") mostly at
0.65-0.94. So a leading word or two is taken for an avatar's name only when

- it sounds like the name: the Jaro-Winkler similarity of the Metaphone codes (jellyfish) of
  the first word, or of the first two words joined ("see you" -> ``SY``, "what's in" ->
  ``WTSN``), to the name's is at least ``threshold``;
- the decoder was unsure of its first word (probability below ``max_conf``);
- it stands apart from what follows, as a name said to someone does: a comma or a pause after
  it, or the next word opens a clause ("I", "how", "no", "that", ...) - "What's in the box",
  "Shelly wants two eggs" and "Sell me two eggs" go on with their sentence instead;
- it is not a word a sentence often starts with that sounds alike but means something else
  (``NOT_NAMES``: "sadly", "certainly", "so", "what", "watch", ...): spelling and sound cannot
  tell "Sadly," misheard from "Sadly," said, so the real word wins - unless a second pass says
  otherwise: when the recogniser can decode the utterance again with the avatars' names as its
  context (Whisper's prompt, :func:`names_prompt`), an unsure, set-apart opening of a real word,
  or one less alike (:data:`SECOND_PASS_THRESHOLD`), is taken for the name only if that second
  decode opens with it. A prompt on every final found more names but also made names of real
  sound-alike openings (``bench/names.py``; docs/microphone.md#names-quantities-and-prices-checked-never-invented);
  asked only about an unsure opening that already sounds like a name, it is the tie-breaker.

A recovered name replaces the words it was heard as (first start, last end, their confidence
kept: it stays as unsure as it was) and is reported as a doubt, never silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import jellyfish

from workers.microphone.recognizer import WordTiming

DEFAULT_GREETINGS = ("hey", "hi", "hello", "ok", "okay", "um", "uh", "well", "excuse", "me", "yo", "and")
"""Words that may come before a name ("hey Celia"); the Rich Transcript worker's defaults less
"so", which is itself a mishearing of "Celia" and never recovered."""
CLAUSE_OPENERS = frozenset(
    """i i'm i'd i'll i've we we'd we'll you you're can could would will do does did how what what's
    when where which who why is are no yes yeah not that that's this these those it it's there
    there's here let let's please give sell tell show make may might should shall just okay ok
    thanks thank sorry""".split()
)
"""Words that start a clause: after a name said to someone, the sentence starts again."""
NOT_NAMES = frozenset(
    """so see sadly silly sell seal sure sorry surely certainly celery cellar cellular shell
    what what's whats watch watts wants was wasn't wait""".split()
)
"""Single words a buyer's sentence may well start with that sound like an avatar's name: heard
alone, they are taken as said. As the first of two words joined ("See you", "What's a") they
may still be a name."""
OBJECTS = frozenset({"me", "us", "him", "her", "it"})
"""A second word that is the object of the first ("Sell me", "Silly me") makes the two no name."""
SECOND_PASS_THRESHOLD = 0.6
"""How alike an unsure, set-apart opening must sound to be worth a second decode: "Sadly" and
"Celia" are 0.61 apart in Metaphone (STL, SL), below the 0.9 a name is taken on sound alone."""
PAUSE_MS = 150
"""A gap at least this long after the candidate sets it apart like a comma."""
_CORE = re.compile(r"[^a-z0-9]+")


def _core(word: str) -> str:
    return _CORE.sub("", word.lower())


def code(text: str) -> str:
    """The Metaphone code of the letters of ``text`` (spaces and apostrophes dropped)."""
    return jellyfish.metaphone(_core(text)) if _core(text) else ""


def similarity(heard: str, name: str) -> float:
    """How alike ``heard`` and ``name`` sound: Jaro-Winkler similarity of their Metaphone codes."""
    a, b = code(heard), code(name)
    return jellyfish.jaro_winkler_similarity(a, b) if a and b else 0.0


Confirm = Callable[[], Sequence[WordTiming]]
"""A second decode of the same utterance with the names as context: its words."""


def names_prompt(avatars: Iterable[str]) -> str:
    """The second pass's context: the names as a list ("Celia, Watson.")."""
    return ", ".join(avatars) + "."


@dataclass(frozen=True)
class Recovered:
    """A name recovered from the words it was heard as."""

    name: str
    heard: str
    """The words as the recogniser wrote them."""
    start_ms: int
    end_ms: int
    conf: float
    score: float
    second_pass: bool = False
    """The name came from the second decode (the opening was a real word that sounds alike)."""


@dataclass(frozen=True)
class NameRecovery:
    """Recovers a misheard leading avatar name (module docstring). Built once per pipeline."""

    avatars: tuple[str, ...]
    threshold: float = 0.9
    max_conf: float = 0.6
    greetings: frozenset[str] = field(default_factory=lambda: frozenset(DEFAULT_GREETINGS))
    max_prefix_words: int = 3
    second_pass_threshold: float = SECOND_PASS_THRESHOLD

    @classmethod
    def build(cls, avatars: Iterable[str], threshold: float = 0.9, max_conf: float = 0.6,
              greetings: Iterable[str] = DEFAULT_GREETINGS) -> NameRecovery:
        return cls(tuple(avatars), threshold, max_conf, frozenset(g.lower() for g in greetings))

    def _best(self, heard: str) -> tuple[str, float]:
        scores = [(similarity(heard, name), name) for name in self.avatars]
        score, name = max(scores) if scores else (0.0, "")
        return name, score

    def _apart(self, words: Sequence[WordTiming], last: int) -> bool:
        """Whether the words up to ``last`` stand apart from the rest (comma, pause, clause)."""
        text = words[last].word.strip()
        if text.endswith((",", ".", "!", "?", ";", ":")):
            return True
        if last + 1 >= len(words):
            return True
        nxt = words[last + 1]
        return nxt.start_ms - words[last].end_ms >= PAUSE_MS or _core(nxt.word) in _OPENERS_CORE

    def find(self, words: Sequence[WordTiming], confirm: Confirm | None = None) -> tuple[int, int, Recovered] | None:
        """Where a misheard leading name is: (first index, end index, what it was heard as).
        ``confirm``: the second decode, asked only about an opening of :data:`NOT_NAMES`."""
        names = {n.lower() for n in self.avatars}
        for start in range(min(len(words), self.max_prefix_words + 1)):
            first = _core(words[start].word)
            if first in names:
                return None  # heard right
            if first not in self.greetings or start == self.max_prefix_words:
                break
        else:
            return None
        if start >= len(words) or words[start].conf >= self.max_conf:
            return None
        best: tuple[float, int, str] | None = None
        asked: tuple[float, int, str] | None = None
        """The best opening only the second pass may take: a real word, or less alike."""
        for span in (1, 2):
            end = start + span
            if end > len(words) or not self._apart(words, end - 1):
                continue
            heard_words = words[start:end]
            heard = " ".join(w.word.strip() for w in heard_words)
            if span == 2 and _core(heard_words[1].word) in names | OBJECTS:
                continue  # "hey, Celia": the name itself comes second; "sell me", "silly me": a verb and its object
            name, score = self._best(heard)
            real_word = span == 1 and _core(heard) in NOT_NAMES
            if score >= self.threshold and not real_word:
                if best is None or score > best[0]:
                    best = (score, end, name)
            elif score >= self.second_pass_threshold and (asked is None or score > asked[0]):
                asked = (score, end, name)
        second_pass = best is None and asked is not None
        if second_pass:
            assert asked is not None
            if confirm is None or not self._opens_with(confirm(), asked[2]):
                return None
            best = asked
        if best is None:
            return None
        score, end, name = best
        span_words = words[start:end]
        heard = " ".join(w.word.strip() for w in span_words)
        conf = min(w.conf for w in span_words)
        return start, end, Recovered(name, heard, span_words[0].start_ms, span_words[-1].end_ms, conf, round(score, 3),
                                     second_pass=second_pass)

    def _opens_with(self, words: Sequence[WordTiming], name: str) -> bool:
        """Whether ``words`` start with ``name`` (after greetings)."""
        for word in words[: self.max_prefix_words + 1]:
            core = _core(word.word)
            if core == name.lower():
                return True
            if core not in self.greetings:
                return False
        return False

    def recover(self, words: Sequence[WordTiming], confirm: Confirm | None = None) -> tuple[list[WordTiming], Recovered | None]:
        """``words`` with a misheard leading name written as the name (its trailing punctuation
        kept, a comma added when none was heard), and what was recovered."""
        found = self.find(words, confirm)
        if found is None:
            return list(words), None
        start, end, rec = found
        last = words[end - 1].word.strip()
        trail = last[len(last.rstrip(",.!?;:")):]
        word = WordTiming(rec.name + (trail if trail else ","), rec.start_ms, rec.end_ms, rec.conf)
        return [*words[:start], word, *words[end:]], rec


_OPENERS_CORE = frozenset(_core(w) for w in CLAUSE_OPENERS)
