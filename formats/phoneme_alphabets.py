"""Other engines' phonemes → espeak-ng mnemonics, the one alphabet of the speaker's phoneme events.

Festival's US voices use the CMU (ARPAbet-like, lower case) phone set; Piper voices speak
espeak-ng's IPA. The avatar turns mnemonics into mouth shapes (``avatar.visemes``); mapping the
other alphabets here keeps that to one table, and keeps each engine's own timing.
"""

from __future__ import annotations

from typing import Final

PAUSE: Final = "_"

CMU_TO_ESPEAK: Final[dict[str, str]] = {
    "pau": PAUSE, "h#": PAUSE, "brth": PAUSE,
    "aa": "A:", "ae": "a", "ah": "V", "ao": "O:", "aw": "aU", "ax": "@", "axr": "3", "ay": "aI",
    "eh": "E", "er": "3:", "ey": "eI", "ih": "I", "ix": "I", "iy": "i:", "ow": "oU", "oy": "OI",
    "uh": "U", "uw": "u:",
    "b": "b", "ch": "tS", "d": "d", "dh": "D", "dx": "t", "f": "f", "g": "g", "hh": "h", "jh": "dZ",
    "k": "k", "l": "l", "el": "l", "m": "m", "em": "m", "n": "n", "en": "n", "ng": "N", "p": "p",
    "r": "r", "s": "s", "sh": "S", "t": "t", "th": "T", "v": "v", "w": "w", "y": "j", "z": "z",
    "zh": "Z",
}
"""The CMU US phone set (Festival's ``radio_phones``) as espeak-ng mnemonics."""

IPA_TO_ESPEAK: Final[dict[str, str]] = {
    "æ": "a", "a": "a", "ɐ": "a", "ɑ": "A:", "ɒ": "0", "ʌ": "V", "ə": "@", "ɚ": "3", "ɜ": "3:",
    "ɛ": "E", "e": "e", "ɪ": "I", "ᵻ": "I", "i": "i:", "ɔ": "O:", "o": "oU", "ʊ": "U", "u": "u:",
    "θ": "T", "ð": "D", "ʃ": "S", "ʒ": "Z", "ʧ": "tS", "ʤ": "dZ", "ŋ": "N", "ɹ": "r", "r": "r",
    "ɾ": "t", "ʔ": "?", "j": "j", "w": "w", "h": "h", "p": "p", "b": "b", "m": "m", "f": "f",
    "v": "v", "t": "t", "d": "d", "n": "n", "l": "l", "ɫ": "l", "s": "s", "z": "z", "k": "k",
    "g": "g", "ɡ": "g", "x": "x", "ç": "h",
}
"""espeak-ng's English IPA (what Piper voices are trained on) as mnemonics."""
IPA_MODIFIERS: Final = frozenset("ˈˌːˑ̩̃͡")
"""Stress, length and tie marks: they shape the phoneme next to them, not the mouth."""
IPA_PAUSES: Final = frozenset(".,;:!?…—-^$_")
"""Punctuation and Piper's sentence start/end symbols: the mouth rests."""


def from_cmu(phone: str) -> str:
    """A Festival CMU phone as an espeak-ng mnemonic (unknown ones pass through)."""
    return CMU_TO_ESPEAK.get(phone.lower(), phone)


def from_ipa(symbol: str) -> str | None:
    """A Piper (espeak-ng IPA) phoneme as a mnemonic; ``None`` for a modifier or word space."""
    if not symbol or symbol.isspace() or symbol in IPA_MODIFIERS:
        return None
    if symbol in IPA_PAUSES:
        return PAUSE
    return IPA_TO_ESPEAK.get(symbol, symbol)
