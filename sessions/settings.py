"""The ``[replay]`` configuration section of ``humaine-env replay`` and ``eval``, and the
``[sessions]`` section of the rounds recorded under ``run``."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from formats.session_files import SESSIONS_DIR
from workers.runtime.config import Section


class ReplaySettings(Section):
    section_name: ClassVar[str] = "replay"

    recorder_host: str = "127.0.0.1"
    """Where the stand-in EO that records the relayed messages listens."""
    recorder_port: int = Field(0, ge=0, le=65535)
    """Its port; 0: any free port (two replays at once never collide). Set one when a
    firewall or a second suite on the machine needs it known in advance."""


class SessionsSettings(Section):
    """Every round recorded as a session while ``run`` runs (``humaine-env record-rounds``)."""

    section_name: ClassVar[str] = "sessions"

    record_rounds: bool = True
    """Record each round's negotiation as a session folder, ready for ``label`` and ``eval``."""
    folder: str = SESSIONS_DIR
    """Where, under ``data_dir`` (or this absolute path), the rounds go: ``<date>/<round>-<buyer>/``."""
    close_after_s: float = Field(2.0, ge=0.0, le=60.0)
    """How long a round's session goes on recording after the negotiation ends: the last
    utterance's outcome and the EO's verdicts arrive a moment later."""
