"""How a name a user typed that the suite does not know is said back: with the closest known
name ("did you mean 'camera'?"), or the list of known ones when none is close. One wording for
every name a user types: configuration keys and sections, worker names, engines, voices, speaker
specs and environment variables."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def unknown(kind: str, name: str, known: Iterable[str]) -> str:
    """``unknown worker 'camra'; did you mean 'camera'?``"""
    names = sorted(set(known))
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(names)}" if names else ""
    return f"unknown {kind} {name!r}{hint}"
