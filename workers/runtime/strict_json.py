"""Strict JSON for what arrives from outside the process.

Python's ``json`` accepts more than JSON: ``NaN``, ``Infinity``, numbers that overflow to
``inf`` and integers of thousands of digits; and a deeply nested ``[[[[...`` raises
``RecursionError`` (not a ``ValueError``) in the middle of whatever thread parses it. A payload
read here either is plain JSON within bounds or raises :class:`StrictJSONError` with a short
reason, so a receiver drops it in one line.

Bytes are decoded as strict UTF-8. ``json.loads`` on bytes decodes with ``surrogatepass``, so
the bytes ``ED A0 80`` (a UTF-16 surrogate written as if it were a character: not UTF-8) came
out as a lone ``\ud800`` in a string, which nothing downstream can encode again: pydantic's
``model_dump_json``, httpx and ``str.encode`` all raise ``UnicodeEncodeError`` far from here, in
a loop that then stops (seen: the transcript worker's delivery task, silently). A lone surrogate
never leaves this module, whether it came as raw bytes or as a ``\uD800`` escape.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 32
"""Deepest nesting of arrays/objects accepted; the suite's own messages use fewer than 6."""
MAX_INT = 2**63
"""Integers beyond ±this are refused: no field of the suite or the platform needs more."""


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class StrictJSONError(ValueError):
    """The payload is not strict JSON within the bounds above."""


def _refuse_constant(name: str) -> Any:
    raise StrictJSONError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError(f"number {text[:20]} is out of range")
    return value


def _bounded_int(text: str) -> int:
    if len(text) > 20:
        raise StrictJSONError(f"integer of {len(text)} digits is out of range")
    value = int(text)
    if abs(value) > MAX_INT:
        raise StrictJSONError(f"integer {text} is out of range")
    return value


def _text(raw: bytes | bytearray | str) -> str:
    """``raw`` as text: bytes must be UTF-8 (strictly: no surrogate code points), and text must
    hold no surrogate code point either (a ``str`` decoded elsewhere with ``surrogateescape``)."""
    if isinstance(raw, str):
        if _SURROGATE.search(raw):
            raise StrictJSONError("the text holds a lone UTF-16 surrogate (not text)")
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StrictJSONError(f"not UTF-8: {exc.reason} at byte {exc.start}") from None


def loads(raw: bytes | bytearray | str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``raw`` as strict JSON; :class:`StrictJSONError` for anything else."""
    text = _text(raw)
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except StrictJSONError:
        raise
    except RecursionError:
        raise StrictJSONError(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise StrictJSONError(str(exc)) from None
    if depth(value, max_depth + 1) > max_depth:
        raise StrictJSONError(f"nested deeper than {max_depth} levels")
    if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        raise StrictJSONError("a string holds a lone UTF-16 surrogate (not text)")
    return value


def _has_lone_surrogate(value: Any) -> bool:
    """True when a string (or key) anywhere in ``value`` has a surrogate that is not part of a
    pair: it cannot be encoded, so whoever passes it on later would fail instead of us now."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def depth(value: Any, stop_at: int) -> int:
    """Nesting depth of ``value`` (a scalar is 0), counted without recursion and no further
    than ``stop_at``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if deepest >= stop_at:
            return deepest
        stack.extend((child, level) for child in children)
    return deepest
