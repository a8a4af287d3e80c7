"""Typed input: console lines as a stand-in for speech, so a keyboard can drive the suite.

``@Celia I want 2 eggs`` addresses Celia (written as the spoken form ``Celia, I want 2 eggs``
so name-mention rules downstream see exactly what speech would give them), ``Watson, ...`` and
plain lines are kept as typed. Empty lines and comments (``#``) are ignored.
"""

from __future__ import annotations

import queue
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TextIO

_AT = re.compile(r"^@(\w[\w.\-]*)[,:]?\s*(.*)$")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class TypedLine:
    text: str
    addressee: str | None
    """The avatar named with ``@Name`` or a leading ``Name,``; None for plain lines."""


def parse_line(line: str, avatars: Iterable[str] = ()) -> TypedLine | None:
    """Normalize one console line; None when there is nothing to say. Bytes a terminal sent
    that were not UTF-8 (decoded with ``surrogateescape`` under a C locale) become U+FFFD: a lone
    surrogate is no text, and nothing after this could encode it."""
    line = _SURROGATE.sub("\ufffd", line)
    text = " ".join(line.strip().split())
    if not text or text.startswith("#"):
        return None
    names = {a.lower(): a for a in avatars}
    m = _AT.match(text)
    if m:
        name = names.get(m.group(1).lower(), m.group(1))
        rest = m.group(2).strip()
        return TypedLine(f"{name}, {rest}" if rest else name, name)
    first = re.match(r"^(\w+)\s*[,:]", text)
    if first and first.group(1).lower() in names:
        return TypedLine(text, names[first.group(1).lower()])
    return TypedLine(text, None)


class TypedInput:
    """Lines from a text stream (stdin by default), readable with a stop event: the blocking
    read happens on a daemon thread so stopping never waits for the user to press Enter."""

    def __init__(self, stream: TextIO | None = None, avatars: Iterable[str] = ()) -> None:
        self.stream = stream or sys.stdin
        self.avatars = tuple(avatars)
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="typed-input", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for line in self.stream:
                self._queue.put(line)
        finally:
            self._queue.put(None)

    def lines(self, stop: threading.Event) -> Iterator[TypedLine]:
        """Parsed lines until end of input or ``stop``."""
        while not stop.is_set():
            try:
                raw = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            if raw is None:
                return
            parsed = parse_line(raw, self.avatars)
            if parsed is not None:
                yield parsed
