"""Agent text → an SSML document espeak-ng can speak, plus the plain words for captions.

Agents may send plain text or SSML, well-formed or not. Whatever arrives, two things must
hold: markup is never read aloud, and what espeak-ng supports still has its effect. So the
text is re-tokenised with a tolerant HTML tokenizer (no XML parser: one stray ``<`` from an
agent must not turn a reply into silence) and rebuilt:

* elements espeak-ng implements (``prosody``, ``break``, ``emphasis``, ``say-as``, ``sub``,
  ``mark``, ``s``, ``p``) are kept with the attributes it reads;
* every other element is dropped and its text kept (``<voice>`` too: an agent must not turn
  Celia's voice male), except elements whose content is not speech (``desc``, ``metadata``…),
  which are dropped with their content;
* text is XML-escaped, so ``&`` and ``<`` in plain text are spoken as words, not parsed;
* dollar amounts are written out as a seller says them ("$4.50": "four dollars fifty",
  :mod:`formats.spoken_amounts`) for the voice, while the captions keep "$4.50".

The result is always well-formed: unclosed elements are closed, stray end tags ignored.

Effects are bounded (:class:`SsmlLimits`), because an agent's text must never silence the room
or deafen it: a ``<break>`` lasts at most ``max_break_s``; ``<prosody>`` rate, pitch, range
and volume are rewritten as percentages clamped to sane ranges - for the value itself and for
its product with every enclosing ``<prosody>``, so nesting cannot compound them either way
espeak-ng reads a percentage; a value we cannot read is dropped. What is not speech never
reaches espeak-ng: a ``<!DOCTYPE>`` with its internal subset, unknown entity references
(``&xxe;``), CDATA sections, comments, and markup left unterminated at the end of the text.

Character references are decoded *before* the markup pass (:func:`decode_references`), so
``&#60;speak&#62;`` is the markup it spells, removed, never the spoken word "speak"; what is
still a reference after a few rounds of decoding (an encoding nested to hide markup) is dropped.

No single message may hold the room (:class:`SsmlLimits` ``max_speaking_s``, ``max_pauses_s``):
its *expected* speaking time is counted while it is rebuilt - each word at the avatar's rate and
the enclosing ``<prosody rate>``, a spelled-out token (``say-as characters``) one word per
character, a token longer than any word by its length, every pause - and what comes after the
budget is not passed on to espeak-ng at all; pauses together get at most ``max_pauses_s`` (5,000
two-second breaks had kept the room silent for 45 s and made the next three replies stale). The
full count of spoken words (:attr:`SpeechText.spoken_words`) is what the platform's 100-word rule
is checked on, so spelling or gluing words together does not get round it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from html import escape, unescape
from html.parser import HTMLParser

from formats import spoken_amounts

KEPT_ELEMENTS: dict[str, tuple[str, ...]] = {
    "prosody": ("rate", "pitch", "volume", "range"),
    "break": ("time", "strength"),
    "emphasis": ("level",),
    "say-as": ("interpret-as", "format", "detail"),
    "sub": ("alias",),
    "mark": ("name",),
    "s": (),
    "p": (),
}
"""espeak-ng's SSML elements we pass on, with the attributes it honours."""
EMPTY_ELEMENTS = frozenset({"break", "mark"})
SILENT_ELEMENTS = frozenset({"desc", "metadata", "lexicon", "script", "style", "head", "title"})
"""Elements whose content is not meant to be spoken."""
BOUNDARY_ELEMENTS = frozenset({"break", "s", "p", "br", "speak"})
"""Elements that separate words in the plain text even when written without spaces."""
MAX_ATTRIBUTE_CHARS = 64
MAX_NESTING = 8
"""Kept elements nested deeper are dropped (their text kept): each ``<s>``/``<p>`` level is a
pause, and 500 of them were 14 s of silence."""
_MARK_NAME = re.compile(r"[^A-Za-z0-9_:.\-]")
_SPACES = re.compile(r"\s+")
_DOCTYPE = re.compile(r"<!DOCTYPE[^\[>]*(?:\[.*?\]\s*>|>)", re.IGNORECASE | re.DOTALL)
"""A document type declaration, internal subset (``[<!ENTITY ...>]``) included. One left
unterminated is unparsed markup at the end, which is dropped too."""
_ENTITY_REF = re.compile(r"&[A-Za-z_][\w.\-]{0,31};")
"""A named entity reference left after HTML's own were decoded: an XML entity (``&xxe;``)."""
_EMPTY_BLOCK = re.compile(r"<(s|p)>\s*</\1>")
"""A sentence or paragraph with nothing in it: only a pause (500 of them were 14 s of silence)."""
_UNTERMINATED = re.compile(r"<[A-Za-z/!?]")
"""The start of markup; HTMLParser keeps it unparsed when it never ends."""
_REFERENCE = re.compile(r"&(?:#[0-9]{1,10}|#[xX][0-9A-Fa-f]{1,8}|[A-Za-z][A-Za-z0-9]{1,31});")
"""A character reference (numeric or named) still in the text after :data:`DECODE_ROUNDS`."""
DECODE_ROUNDS = 4
"""Rounds of reference decoding (``&lt;`` in ``&amp;lt;``) after :data:`_AMPERSANDS` are folded."""
_AMPERSANDS = re.compile(r"&(?:(?:amp|#0*38|#[xX]0*26);?)+", re.IGNORECASE)
"""An ampersand written as references of ampersands, nested to any depth (``&amp;amp;amp;``):
folded to one ``&`` in one linear pass, so no depth of nesting outlasts the decoding rounds."""
_TOKEN = re.compile(r"\S+")
LONG_TOKEN_CHARS = 20
"""A token longer than this is no word (``internationalization`` is 20): espeak-ng reads it out
in pieces, counted as one word per :data:`CHARS_PER_WORD` characters."""
CHARS_PER_WORD = 6
SPELLED = frozenset({"characters", "spell-out", "verbatim", "letters", "tts:char"})
"""``say-as interpret-as`` values read character by character: one word per letter or digit."""
STRENGTH_PAUSE_S = {"none": 0.0, "x-weak": 0.1, "weak": 0.2, "medium": 0.4, "strong": 0.7, "x-strong": 1.0}
"""The pause a ``<break strength>`` (or a bare ``<break/>``: medium) is counted as."""


@dataclass(frozen=True)
class SsmlLimits:
    """Bounds of what an agent's markup may do (``[avatar]`` settings of the same names)."""

    max_break_s: float = 2.0
    """Longest pause one ``<break>`` makes."""
    min_rate: float = 0.5
    max_rate: float = 2.0
    """Speaking rate as a factor of the avatar's own."""
    min_pitch: float = 0.5
    max_pitch: float = 2.0
    """Pitch (and pitch range) as a factor of the voice's own."""
    max_volume: float = 1.0
    """Loudness as a factor of the avatar's configured volume: an agent may speak softer, never
    louder (``+200dB`` would clip at full scale)."""
    max_speaking_s: float = 45.0
    """Longest a message's expected speaking time may be, pauses included: the rest is not spoken."""
    max_pauses_s: float = 6.0
    """Longest all of a message's pauses together may be: later breaks are dropped."""
    words_per_minute: float = 170.0
    """The avatar's rate, for the expected speaking time."""

    def bounds(self, attribute: str) -> tuple[float, float]:
        if attribute == "rate":
            return self.min_rate, self.max_rate
        if attribute == "volume":
            return 0.0, self.max_volume
        return self.min_pitch, self.max_pitch


DEFAULT_LIMITS = SsmlLimits()

_KEYWORDS: dict[str, dict[str, float]] = {
    "rate": {"x-slow": 0.5, "slow": 0.75, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.5},
    "pitch": {"x-low": 0.7, "low": 0.85, "medium": 1.0, "default": 1.0, "high": 1.15, "x-high": 1.3},
    "range": {"x-low": 0.5, "low": 0.75, "medium": 1.0, "default": 1.0, "high": 1.25, "x-high": 1.5},
    "volume": {"silent": 0.0, "x-soft": 0.25, "soft": 0.5, "medium": 0.75, "default": 1.0, "loud": 1.0, "x-loud": 1.0},
}
"""SSML's named values as factors (``loud`` is already the most an agent gets)."""
_NUMBER = r"([+-]?)(\d{1,6}(?:\.\d{0,6})?|\.\d{1,6})"
_PROSODY_VALUE = re.compile(rf"{_NUMBER}\s*(%|db|st|hz)?", re.IGNORECASE)
_BREAK_TIME = re.compile(rf"{_NUMBER}\s*(ms|s)", re.IGNORECASE)
BREAK_STRENGTHS = frozenset({"none", "x-weak", "weak", "medium", "strong", "x-strong"})
EMPHASIS_LEVELS = frozenset({"strong", "moderate", "none", "reduced"})


def _factor(attribute: str, value: str) -> float | None:
    """A prosody attribute as a factor of the current value, or None when unreadable."""
    text = value.strip().lower()
    if text in _KEYWORDS[attribute]:
        return _KEYWORDS[attribute][text]
    match = _PROSODY_VALUE.fullmatch(text)
    if match is None:
        return None
    sign, number, unit = match.group(1), float(match.group(2)), (match.group(3) or "").lower()
    signed = -number if sign == "-" else number
    if unit == "%":
        return 1.0 + signed / 100.0 if sign else number / 100.0
    if unit == "db":
        return math.pow(10.0, signed / 20.0)
    if unit == "st":
        return math.pow(2.0, signed / 12.0)
    if unit == "hz":
        return None  # absolute frequencies depend on the voice: not ours to guess
    if attribute in ("rate",) and not sign:
        return number  # SSML 1.1: a plain number is a multiplier
    if attribute == "volume" and not sign:
        return number / 100.0  # SSML 1.0: 0-100
    return None


def _clamp_prosody(attribute: str, factor: float, enclosing: float, limits: SsmlLimits) -> float:
    """``factor`` within the bounds on its own and multiplied by the enclosing ``enclosing``."""
    low, high = limits.bounds(attribute)
    if enclosing > 0:
        low, high = max(low, low / enclosing), min(high, high / enclosing)
    if low > high:  # cannot happen while 1 is within the bounds; stay neutral if it does
        return 1.0
    return min(max(factor, low), high)


def _break_time(value: str, limits: SsmlLimits) -> str | None:
    match = _BREAK_TIME.fullmatch(value.strip())
    if match is None or match.group(1) == "-":
        return None
    seconds = float(match.group(2)) / (1000.0 if match.group(3).lower() == "ms" else 1.0)
    if not math.isfinite(seconds):
        return None
    return f"{round(min(seconds, limits.max_break_s) * 1000)}ms"


@dataclass
class SpeechText:
    """One message's text, ready for the speaker and the display."""

    ssml: str
    """``<speak>…</speak>`` for espeak-ng's SSML mode."""
    plain: str
    """The words as a listener hears them (captions, word count), whitespace-normalised."""
    marks: list[str] = field(default_factory=list)
    """Mark names in document order."""
    dropped: list[str] = field(default_factory=list)
    """Names of the elements removed (for one log line)."""
    spoken_words: int = 0
    """The words the whole text would take to say (before the budget cut it): a spelled-out
    token counts a word per character, a token longer than any word by its length."""
    expected_s: float = 0.0
    """The expected speaking time of what is kept (pauses included), at the limits' rate."""
    cut: bool = False
    """Text past ``max_speaking_s`` (expected) was left out."""

    @property
    def word_count(self) -> int:
        return len(self.plain.split())


class _Rebuilder(HTMLParser):
    def __init__(self, limits: SsmlLimits) -> None:
        super().__init__(convert_charrefs=True)
        self.limits = limits
        self.prosody: list[dict[str, float]] = [{"rate": 1.0, "pitch": 1.0, "range": 1.0, "volume": 1.0}]
        """Effective prosody factors, one entry per open ``<prosody>`` (and the base)."""
        self.out: list[str] = []
        self.plain: list[str] = []
        self.marks: list[str] = []
        self.dropped: list[str] = []
        self.open: list[str] = []
        self.silent_depth = 0
        self.spelling: list[bool] = []
        """One entry per open ``<say-as>``: True when it spells its content out."""
        self.spelling_past_cut: list[bool] = []
        """The same for those opened past the budget (not passed on, their words still counted)."""
        self.spoken_words = 0
        self.expected_s = 0.0
        self.pauses_s = 0.0
        self.cut = False

    # -- tokens ---------------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, self_closing=False)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, self_closing=True)

    def _start(self, tag: str, attrs: list[tuple[str, str | None]], self_closing: bool) -> None:
        if tag in SILENT_ELEMENTS:
            self._note_drop(tag)
            if not self_closing:
                self.silent_depth += 1
            return
        if self.silent_depth:
            return
        if self.cut:  # past the speaking budget nothing more is passed on; its words are still counted
            if tag == "say-as" and not self_closing:
                self.spelling_past_cut.append(self._spells(attrs))
            return
        if tag in BOUNDARY_ELEMENTS:
            self.plain.append(" ")
        too_deep = tag not in EMPTY_ELEMENTS and len(self.open) >= MAX_NESTING
        if tag not in KEPT_ELEMENTS or too_deep:
            if tag != "speak":
                self._note_drop(f"{tag} nested over {MAX_NESTING}" if too_deep and tag in KEPT_ELEMENTS else tag)
                self._separate()
            return
        allowed = KEPT_ELEMENTS[tag]
        parts = [tag]
        effective = dict(self.prosody[-1])
        for key, value in attrs:
            if key in allowed and value is not None:
                value = self._bounded(tag, key, value[:MAX_ATTRIBUTE_CHARS], effective)
                if value is None:
                    self._note_drop(f"{tag}@{key}")
                    continue
                if tag == "mark":
                    value = _MARK_NAME.sub("", value)
                    self.marks.append(value)
                parts.append(f'{key}="{escape(value, quote=True)}"')
        if tag == "break":
            budgeted = self._budgeted_break(parts)
            if budgeted is None:
                return
            parts = budgeted
        if tag in EMPTY_ELEMENTS:
            self.out.append(f"<{' '.join(parts)}/>")
            return
        self.out.append(f"<{' '.join(parts)}>")
        if self_closing:
            self.out.append(f"</{tag}>")
        else:
            self.open.append(tag)
            if tag == "prosody":
                self.prosody.append(effective)
            if tag == "say-as":
                self.spelling.append(self._spells(attrs))

    @staticmethod
    def _spells(attrs: list[tuple[str, str | None]]) -> bool:
        return (dict(attrs).get("interpret-as") or "").strip().lower() in SPELLED

    # -- the speaking budget ----------------------------------------------------------------------
    def _spend(self, seconds: float) -> bool:
        """Count ``seconds`` of expected speech; False (and the cut noted) past the budget."""
        if self.cut:
            return False
        if self.expected_s + seconds > self.limits.max_speaking_s:
            self.cut = True
            self._note_drop(f"text past max_speaking_s ({self.limits.max_speaking_s:g} s expected)")
            return False
        self.expected_s += seconds
        return True

    def _budgeted_break(self, parts: list[str]) -> list[str] | None:
        """A kept ``<break>`` within the pause and speaking budgets: shortened to what is left
        of them, or None (dropped) when nothing is."""
        attributes = dict(part.split("=", 1) for part in parts[1:])
        time_ms = attributes.get("time", "").strip('"').removesuffix("ms")
        strength = attributes.get("strength", '"medium"').strip('"').lower()
        seconds = int(time_ms) / 1000 if time_ms.isdigit() else STRENGTH_PAUSE_S.get(strength, STRENGTH_PAUSE_S["medium"])
        left = min(self.limits.max_pauses_s - self.pauses_s, self.limits.max_speaking_s - self.expected_s)
        if self.cut or left <= 0:
            if seconds > 0:
                self._note_drop(f"break past max_pauses_s ({self.limits.max_pauses_s:g} s in all)")
            return None if seconds > 0 else parts
        if seconds > left:
            seconds = left
            self._note_drop(f"break past max_pauses_s ({self.limits.max_pauses_s:g} s in all)")
            parts = [parts[0], f'time="{round(seconds * 1000)}ms"']
        self.pauses_s += seconds
        self.expected_s += seconds
        return parts

    def _budgeted_text(self, data: str) -> str:
        """``data`` up to the last token that fits the speaking budget; every token is counted
        in :attr:`spoken_words` (the platform's word rule sees the whole text)."""
        spelled = any(self.spelling) or any(self.spelling_past_cut)
        word_s = 60.0 / self.limits.words_per_minute / max(self.prosody[-1]["rate"], self.limits.min_rate)
        kept = 0 if self.cut else len(data)
        for match in _TOKEN.finditer(data):
            words = _words_of(match.group(), spelled)
            self.spoken_words += words
            if not self.cut and not self._spend(words * word_s):
                kept = match.start()
        return data[:kept]

    def _bounded(self, tag: str, key: str, value: str, effective: dict[str, float]) -> str | None:
        """``value`` of ``tag``'s attribute ``key`` within :attr:`limits` (None: drop it);
        a prosody value also updates ``effective``."""
        if tag == "prosody":
            factor = _factor(key, value)
            if factor is None or not math.isfinite(factor):
                return None
            factor = _clamp_prosody(key, factor, effective[key], self.limits)
            effective[key] *= factor
            return f"{round(factor * 100)}%"
        if tag == "break":
            if key == "time":
                return _break_time(value, self.limits)
            return value if value.strip().lower() in BREAK_STRENGTHS else None
        if tag == "emphasis":
            return value if value.strip().lower() in EMPHASIS_LEVELS else None
        return value

    def handle_endtag(self, tag: str) -> None:
        if tag in SILENT_ELEMENTS:
            self.silent_depth = max(self.silent_depth - 1, 0)
            return
        if self.silent_depth:
            return
        if tag == "say-as" and self.spelling_past_cut:
            self.spelling_past_cut.pop()
            return
        if tag in BOUNDARY_ELEMENTS:
            self.plain.append(" ")
        if tag not in KEPT_ELEMENTS:
            self._separate()
            return
        if tag in EMPTY_ELEMENTS or tag not in self.open:
            return
        while self.open:  # close anything left open inside it (``<s><emphasis>x</s>``)
            inner = self._close_one()
            if inner == tag:
                break

    def _close_one(self) -> str:
        inner = self.open.pop()
        self.out.append(f"</{inner}>")
        if inner == "prosody":
            self.prosody.pop()
        elif inner == "say-as" and self.spelling:
            self.spelling.pop()
        return inner

    def handle_data(self, data: str) -> None:
        if self.silent_depth:
            return
        if _ENTITY_REF.search(data):
            self._note_drop("entity")
            data = _ENTITY_REF.sub(" ", data)
        data = self._budgeted_text(data)
        if not data:
            return
        said = data if any(self.spelling) else spoken_amounts.spoken(data)
        self.out.append(escape(said, quote=False))
        self.plain.append(data)

    def handle_comment(self, data: str) -> None:
        """Comments are never spoken."""

    def handle_decl(self, decl: str) -> None:
        """``<!DOCTYPE …>`` is never spoken."""

    def handle_pi(self, data: str) -> None:
        """``<?xml …?>`` is never spoken."""

    def unknown_decl(self, data: str) -> None:
        """``<![CDATA[…]]>`` and the like are never spoken."""

    def _separate(self) -> None:
        """A dropped element still ends a word: ``x<voice>hi</voice>`` is "x hi", not "xhi"."""
        self.out.append(" ")
        self.plain.append(" ")

    def _note_drop(self, tag: str) -> None:
        if tag not in self.dropped:
            self.dropped.append(tag)

    # -- result ---------------------------------------------------------------------------------
    def result(self) -> SpeechText:
        rest = self.rawdata
        if _UNTERMINATED.match(rest):  # ``<prosody rate=`` at the end: markup, never text
            self._note_drop("unterminated markup")
            self.rawdata = ""
        self.close()
        while self.open:
            self._close_one()
        plain = _SPACES.sub(" ", "".join(self.plain)).strip()
        body, emptied = "".join(self.out), 1
        while emptied:
            body, emptied = _EMPTY_BLOCK.subn(" ", body)
        return SpeechText(
            ssml=f"<speak>{body}</speak>",
            plain=plain,
            marks=self.marks,
            dropped=self.dropped,
            spoken_words=self.spoken_words,
            expected_s=round(self.expected_s, 3),
            cut=self.cut,
        )


def _words_of(token: str, spelled: bool) -> int:
    """How many words espeak-ng says for one whitespace-free token."""
    if spelled:
        return max(1, sum(ch.isalnum() for ch in token))
    if len(token) <= LONG_TOKEN_CHARS:
        return 1
    return -(-len(token) // CHARS_PER_WORD)


def decode_references(text: str) -> tuple[str, bool]:
    """``text`` with its character references decoded, nested ones too (``&amp;#60;`` is ``<``)
    for :data:`DECODE_ROUNDS` rounds; what still is a reference after that is dropped. Returns
    the text and whether anything was dropped."""
    if "&" not in text:
        return text, False
    text = _AMPERSANDS.sub("&", text)
    for _ in range(DECODE_ROUNDS):
        decoded = unescape(text)
        if decoded == text:
            return text, False
        text = decoded
    left = _REFERENCE.sub(" ", text)
    return left, left != text


def prepare(text: str, limits: SsmlLimits = DEFAULT_LIMITS) -> SpeechText:
    """Plain text or (possibly broken, possibly hostile) SSML → :class:`SpeechText`."""
    builder = _Rebuilder(limits)
    decoded, nested = decode_references(text)
    if nested:
        builder._note_drop("nested character references")
    stripped = _DOCTYPE.sub(" ", decoded)
    if stripped != decoded:
        builder._note_drop("doctype")
    builder.feed(stripped)
    return builder.result()
