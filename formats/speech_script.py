"""An SSML document → the pieces a sentence-at-a-time speech engine says, in order.

espeak-ng reads SSML itself. Festival and Piper do not: they synthesise plain text, a sentence
or a phrase at a time. So the same SSML subset the avatar prepares (``avatar.ssml``: ``prosody``
as percentages, ``break``, ``mark``, ``say-as``, ``sub``, ``emphasis``, ``s``, ``p``) is read
here into :class:`Phrase` and :class:`Pause` pieces:

* each phrase carries the prosody in force (rate, pitch and volume as factors of the voice's
  own) and the marks that stand before its words (as word indices), so a gesture still lands on
  its word whatever engine speaks;
* a sentence end, ``<s>``, ``<p>``, a ``<break>`` or a change of prosody starts a new phrase;
* ``<sub alias>`` says the alias, ``<say-as interpret-as="characters">`` spells its text out.

The document is well-formed (``avatar.ssml`` guarantees it); anything unreadable is said as
plain text rather than dropped: markup never silences a reply.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field

STRENGTH_PAUSE_MS = {"none": 0, "x-weak": 100, "weak": 200, "medium": 400, "strong": 700, "x-strong": 1000}
"""A ``<break strength>`` as a pause (SSML leaves the lengths to the engine; espeak-ng's)."""
SENTENCE_PAUSE_MS = 0
"""Pause added between two sentences: the engines end each sentence with their own silence."""
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_SPACES = re.compile(r"\s+")
_BREAK_TIME = re.compile(r"(\d+)ms")
_SPELLED = frozenset({"characters", "spell-out", "verbatim"})


@dataclass
class Prosody:
    """Factors of the voice's own rate, pitch and volume."""

    rate: float = 1.0
    pitch: float = 1.0
    volume: float = 1.0


@dataclass
class Phrase:
    """Words said in one breath by a sentence engine, with one prosody."""

    text: str
    prosody: Prosody = field(default_factory=Prosody)
    marks: list[tuple[int, str]] = field(default_factory=list)
    """``(word index, mark name)``: the mark is reached as that word starts (index = number of
    words: at the phrase's end)."""

    @property
    def words(self) -> list[str]:
        return self.text.split()


@dataclass
class Pause:
    """Silence, with the marks reached at its start."""

    ms: int
    marks: list[str] = field(default_factory=list)


Piece = Phrase | Pause


def _percent(value: str | None) -> float:
    if not value or not value.endswith("%"):
        return 1.0
    try:
        return max(float(value[:-1]) / 100.0, 0.0)
    except ValueError:
        return 1.0


class _Reader:
    def __init__(self) -> None:
        self.pieces: list[Piece] = []
        self.words: list[str] = []
        self.marks: list[tuple[int, str]] = []
        self.prosody = Prosody()

    def flush(self) -> None:
        if self.words:
            self.pieces.append(Phrase(" ".join(self.words), Prosody(**vars(self.prosody)), self.marks))
        elif self.marks:  # marks with no words after them: reached where the pause or end is
            self.pieces.append(Pause(0, [name for _, name in self.marks]))
        self.words, self.marks = [], []

    def text(self, text: str | None, spelled: bool = False) -> None:
        if not text:
            return
        if spelled:
            self.words.extend(" ".join(ch for ch in token if ch.isalnum()) for token in text.split())
            self.words = [w for w in self.words if w]
            return
        parts = _SENTENCE_END.split(text)
        for index, part in enumerate(parts):
            if index:
                self.flush()
            for token in part.split():
                if self.words and not any(ch.isalnum() for ch in token):
                    self.words[-1] += token  # "ok</say-as>!": punctuation is not a word
                else:
                    self.words.append(token)

    def element(self, node: ElementTree.Element, spelled: bool = False) -> None:
        tag = node.tag
        if tag == "mark":
            self.marks.append((len(self.words), node.get("name", "")))
        elif tag == "break":
            self.flush()
            time = _BREAK_TIME.fullmatch(node.get("time", "") or "")
            ms = int(time.group(1)) if time else STRENGTH_PAUSE_MS.get(node.get("strength", "medium"), 400)
            self.pieces.append(Pause(ms))
        elif tag == "sub":
            self.text(node.get("alias") or node.text)
        elif tag == "prosody":
            self.flush()
            outer = Prosody(**vars(self.prosody))
            self.prosody = Prosody(outer.rate * _percent(node.get("rate")), outer.pitch * _percent(node.get("pitch")),
                                   outer.volume * _percent(node.get("volume")))
            self.children(node, spelled)
            self.flush()
            self.prosody = outer
        elif tag in ("s", "p"):
            self.flush()
            self.children(node, spelled)
            self.flush()
        else:  # speak, emphasis, say-as, anything else: its text
            inner = spelled or (tag == "say-as" and (node.get("interpret-as") or "").lower() in _SPELLED)
            self.children(node, inner)
        if tag != "speak":
            self.text(node.tail, spelled)

    def children(self, node: ElementTree.Element, spelled: bool) -> None:
        self.text(node.text, spelled)
        for child in node:
            self.element(child, spelled)


def read(ssml: str) -> list[Piece]:
    """The pieces of ``ssml`` in speaking order (a document that does not parse: its text)."""
    reader = _Reader()
    try:
        root = ElementTree.fromstring(ssml if ssml.lstrip().startswith("<speak") else f"<speak>{ssml}</speak>")
    except ElementTree.ParseError:
        reader.text(_SPACES.sub(" ", re.sub(r"<[^>]*>", " ", ssml)))
    else:
        reader.element(root)
    reader.flush()
    return [piece for piece in reader.pieces if not (isinstance(piece, Pause) and piece.ms == 0 and not piece.marks)]


PHRASE_STARTS = frozenset({"for", "and", "at", "with", "to", "but", "or", "if", "because", "so", "than", "which", "that"})
"""Words a phrase may start with: a lead cut before one sounds like a breath, not a stumble
("four cups of milk | for two dollars", never "four cups of | milk")."""
LEAD_SLACK = 2
"""How many words past ``max_words`` a lead may run to reach a comma or a phrase start."""


def split_lead(phrase: Phrase, max_words: int) -> list[Phrase]:
    """``phrase`` as a short lead and the rest, so a slow engine's first audio comes early.

    The lead ends at the first comma within ``max_words`` (+ :data:`LEAD_SLACK`) words, else
    before the first of :data:`PHRASE_STARTS` there, else after ``max_words`` words; a phrase
    barely longer than that is kept whole (a two-word tail sounds worse than a wait)."""
    words = phrase.words
    if max_words <= 0 or len(words) <= max_words + LEAD_SLACK:
        return [phrase]
    reach = max_words + LEAD_SLACK
    cut = next((i + 1 for i, word in enumerate(words[:reach]) if word.endswith((",", ";", ":"))), None)
    if cut is None:
        cut = next((i for i in range(2, reach + 1) if words[i].lower() in PHRASE_STARTS), max_words)
    head = Phrase(" ".join(words[:cut]), phrase.prosody, [(i, n) for i, n in phrase.marks if i < cut])
    tail = Phrase(" ".join(words[cut:]), phrase.prosody, [(i - cut, n) for i, n in phrase.marks if i >= cut])
    return [head, tail]
