"""What the stand-in EO refuses, and how: where the platform's EO would crash or exit, the
stand-in answers a 4xx with a readable reason and goes on."""

from __future__ import annotations

from typing import Any

SERVICE_FAILED = 424
"""Answer to a message the human-side service did not take (down, or failing /confirmAccept):
a 4xx (Failed Dependency) like every other refusal of the stand-in, where the platform EO exits."""


class StandinError(Exception):
    """A request the stand-in refuses (where the real EO would crash). ``detail`` rides along
    in the JSON answer."""

    def __init__(self, status_code: int, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.detail = detail

    def body(self) -> dict[str, Any]:
        return {"status": "error", "error": self.message, **self.detail}
