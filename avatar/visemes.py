"""espeak-ng phonemes → mouth shapes (visemes): the display's lip-sync timeline.

espeak-ng reports each phoneme as it synthesises, with its position in the audio
(:class:`hardware.speaker.SpeechEvent`, kind ``phoneme``). A face does not need 40 phonemes:
mouths look alike for phonemes made with the same lips, so they are grouped into the eleven
shapes below, the classic Preston Blair / Disney set that cartoon lip-sync uses. The display
page (``display.js``, ``VISEME_SHAPES``) draws one mouth per name; both sides share only the
names, listed here.

=========  ===========================  =====================================================
viseme     mouth                        espeak-ng phonemes (English mnemonics)
=========  ===========================  =====================================================
rest       closed, relaxed              pauses: ``_``, ``_:``, ``_!``, ``_^_`` ... (leading ``_``)
closed     lips pressed                 ``p b m``
fv         lower lip under top teeth    ``f v``
th         tongue between teeth         ``T D``
cons       teeth nearly closed          ``t d n l s z k g N h j r x ?`` and anything unknown
ch         lips pushed forward          ``S Z tS dZ``
aa         wide open                    vowels starting ``a A V`` (``a``, ``A:``, ``aI``, ``aU``)
e          half open                    vowels starting ``E e @ 3`` (``E``, ``eI``, ``@``, ``3:``)
ee         spread                       vowels starting ``i I`` (``i:``, ``I``, ``i@``)
o          rounded open                 vowels starting ``O 0 o`` (``O:``, ``0``, ``oU``, ``OI``)
u          rounded small                vowels starting ``u U`` and ``w`` (``u:``, ``U@``)
=========  ===========================  =====================================================

A diphthong takes the shape it starts with: its phoneme event comes once, at its start.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Protocol

VISEMES: Final = ("rest", "closed", "fv", "th", "cons", "ch", "aa", "e", "ee", "o", "u")
"""Every mouth shape the display draws."""
REST: Final = "rest"
FALLBACK: Final = "cons"
"""An unknown phoneme (another language's, a new espeak-ng symbol): a mouth that moves a little."""

_CONSONANTS: Final = {
    **dict.fromkeys(("p", "b", "m"), "closed"),
    **dict.fromkeys(("f", "v"), "fv"),
    **dict.fromkeys(("T", "D"), "th"),
    **dict.fromkeys(("S", "Z", "tS", "dZ"), "ch"),
    "w": "u",
}
_VOWEL_STARTS: Final = {
    **dict.fromkeys("aAV", "aa"),
    **dict.fromkeys("Ee@3", "e"),
    **dict.fromkeys("iI", "ee"),
    **dict.fromkeys("O0o", "o"),
    **dict.fromkeys("uU", "u"),
}

Timeline = list[tuple[int, str]]
"""``(audio_ms, viseme)`` pairs in order; each shape holds until the next one starts."""


class PhonemeEvent(Protocol):
    """What :func:`timeline` reads of a phoneme event (``hardware.speaker.SpeechEvent``)."""

    @property
    def name(self) -> str: ...

    @property
    def audio_ms(self) -> int: ...


def viseme(phoneme: str) -> str:
    """The mouth shape of one espeak-ng phoneme mnemonic."""
    name = phoneme.strip().rstrip("#")
    if not name or name.startswith("_"):
        return REST
    if name in _CONSONANTS:
        return _CONSONANTS[name]
    if name[0] in _VOWEL_STARTS:
        return _VOWEL_STARTS[name[0]]
    return FALLBACK


def timeline(phonemes: Iterable[PhonemeEvent], after: str | None = None) -> Timeline:
    """The viseme timeline of ``phonemes`` (in audio order), one entry per change of shape.
    ``after``: the shape the previous part of the timeline ended with (chunks of one utterance
    arrive one buffer at a time), so that a chunk does not repeat it."""
    result: Timeline = []
    last = after
    for event in sorted(phonemes, key=lambda e: e.audio_ms):
        shape = viseme(event.name)
        if shape != last:
            result.append((int(event.audio_ms), shape))
            last = shape
    return result
