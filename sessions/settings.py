"""The ``[replay]`` configuration section of ``humaine-env replay`` and ``eval``."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from workers.runtime.config import Section


class ReplaySettings(Section):
    section_name: ClassVar[str] = "replay"

    recorder_host: str = "127.0.0.1"
    """Where the stand-in EO that records the relayed messages listens."""
    recorder_port: int = Field(0, ge=0, le=65535)
    """Its port; 0: any free port (two replays at once never collide). Set one when a
    firewall or a second suite on the machine needs it known in advance."""
