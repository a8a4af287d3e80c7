"""The avatars' gesture vocabulary and the two ways an agent asks for a gesture.

The HUMAINE platform lets an agent ask for avatar behaviour but defines no field for it; this
project defines the extension (documented in docs/avatar.md#gestures):

* ``"gesture"`` in the message body: one name or a list of names, played when the avatar
  starts speaking that message (or at once when nothing is spoken);
* ``<mark name="gesture:NAME"/>`` inline in SSML text, played when speech reaches that point.

Names are case-insensitive; ``-`` and spaces count as ``_`` (``thumbs-up`` = ``thumbs_up``).
Unknown names are reported back to the caller, which logs and ignores them: a typo in an
agent must never cost it its reply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

VOCABULARY: Final = (
    "smile",
    "nod",
    "shake",
    "wave",
    "shrug",
    "think",
    "point",
    "frown",
    "laugh",
    "thumbs_up",
    "bow",
)
"""Every gesture the display can animate."""
GESTURE_FIELD: Final = "gesture"
"""The message key of the platform extension."""
MARK_PREFIX: Final = "gesture:"
"""``<mark name="gesture:nod"/>``."""


def normalize(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


@dataclass
class GestureRequest:
    """The valid gestures of one ``gesture`` field, and what was not understood."""

    names: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def parse_field(value: object) -> GestureRequest:
    """Read a message's ``gesture`` value: ``None``, a name, or a list of names."""
    request = GestureRequest()
    if value is None:
        return request
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, str):
            request.unknown.append(repr(item))
            continue
        name = normalize(item)
        if name in VOCABULARY:
            request.names.append(name)
        elif name:
            request.unknown.append(item)
    return request


def from_mark(mark: str) -> str | None:
    """The gesture a ``<mark>`` name asks for; ``None`` for other marks."""
    if not mark.lower().startswith(MARK_PREFIX):
        return None
    return normalize(mark[len(MARK_PREFIX) :])


def is_known(name: str) -> bool:
    return normalize(name) in VOCABULARY
