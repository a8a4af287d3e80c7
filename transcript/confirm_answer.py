"""The buyer's spoken answer to a seller's Accept: "yes" / "deal" or "no" / "decline".

While the Avatar Controller waits for the buyer to confirm a deal (``confirm/pending``), the
buyer's next utterance that reads as a plain yes or no is that answer: it goes to the Avatar
Controller (``confirm/answer``), not to the EO as a new message. Anything else - a question, a
counter-offer, "yes but only for three dollars" - is negotiation and goes to the EO as usual, so
the rule is strict: the utterance is short, and every word is an answer word or filler of the
same answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from workers.runtime.messages import ConfirmPending

YES_WORDS = ("yes", "yeah", "yep", "yup", "sure", "ok", "okay", "deal", "accept", "accepted", "agreed", "agree",
             "confirm", "confirmed", "done", "absolutely", "definitely", "please", "do", "it", "that's", "thats", "a",
             "i", "great", "sounds", "good", "fine", "let's", "lets")
NO_WORDS = ("no", "nope", "nah", "decline", "declined", "reject", "rejected", "cancel", "not", "don't", "dont", "thanks",
            "thank", "you", "i", "do", "it", "that", "please", "sorry", "pass", "way")
YES_CORE = ("yes", "yeah", "yep", "yup", "sure", "ok", "okay", "deal", "accept", "accepted", "agreed", "agree", "confirm",
            "confirmed", "absolutely", "definitely", "great", "good", "fine", "done")
"""A yes needs one of these; "do it" alone is too little."""
NO_CORE = ("no", "nope", "nah", "decline", "declined", "reject", "rejected", "cancel", "pass")
MAX_WORDS = 6
"""A longer utterance is negotiation, not an answer."""
_WORD = re.compile(r"[a-z']+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


def _only(words: list[str], allowed: Iterable[str], core: Iterable[str]) -> bool:
    allowed_set, core_set = set(allowed), set(core)
    return bool(words) and all(w in allowed_set for w in words) and any(w in core_set for w in words)


def spoken_answer(text: str, names: Iterable[str] = ()) -> bool | None:
    """True for a plain yes, False for a plain no, None for anything else. An avatar's name
    ("Celia, yes") may stand before or after the answer."""
    lowered_names = {name.lower() for name in names}
    words = [w for w in _words(text) if w not in lowered_names]
    if not words or len(words) > MAX_WORDS or any(ch.isdigit() for ch in text) or "?" in text:
        return None
    if _only(words, NO_WORDS, NO_CORE):
        return False
    if _only(words, YES_WORDS, YES_CORE) and not any(w in NO_CORE or w in ("not", "don't", "dont") for w in words):
        return True
    return None


class PendingConfirmation:
    """The seller's Accept waiting for the buyer's yes or no (the Avatar Controller's
    ``confirm/pending``), and whether an utterance answers it."""

    def __init__(self, avatars: Iterable[str]) -> None:
        self._avatars = list(avatars)
        """Names an answer may address (``"yes Celia"`` is still a yes)."""
        self._pending: ConfirmPending | None = None
        """The confirmation waiting now (None: none)."""

    def update(self, message: ConfirmPending) -> None:
        """The pending confirmation now (one without ``confirm_id``: none any more)."""
        self._pending = message if message.confirm_id else None

    def answer(self, text: str, now_ms: int) -> tuple[ConfirmPending, bool] | None:
        """The confirmation ``text`` answers and whether it accepts (it is then answered), or
        None when none waits, it has passed its deadline, or ``text`` is not a plain yes or no."""
        pending = self._pending
        if pending is None or pending.confirm_id is None or (pending.deadline is not None and now_ms > pending.deadline):
            return None
        accept = spoken_answer(text, self._avatars)
        if accept is None:
            return None
        self._pending = None
        return pending, accept
