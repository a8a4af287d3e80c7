"""pydantic's validation errors as one readable line, the same wherever a payload is refused.

The MQTT dispatcher, the platform's lenient reader and the HTTP edge all quote a refusal's
reason as ``field.path: message; ...``; only the label for an empty location (the whole
payload) and how many errors are quoted differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any


def error_line(errors: Iterable[Mapping[str, Any]], empty_loc: str, limit: int | None = None) -> str:
    """``loc.path: msg`` for each of the first ``limit`` errors (all when ``None``), joined with
    ``"; "``; an error about the whole payload is labelled ``empty_loc``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or empty_loc}: {err['msg']}" for err in islice(errors, limit)
    )
