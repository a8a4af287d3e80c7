"""The display's history: every message the EO judged, one line each, kept in the room's ledger
so that a restarted controller's display shows the round's lines again."""

from __future__ import annotations

import functools
import logging

from avatar.page_events import DisplayState, LogEvent, LogLine
from avatar.room import Room
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

DISPLAY_LOG_KEPT = 30
HISTORY_DUPLICATE_WINDOW = 5
"""How far back a blocked message counts as already shown."""


def _add_line(line: LogLine, state: DisplayState) -> bool:
    """``line`` at the end of the kept history, unless it is a blocked message shown a moment
    ago (False: the EO reports a blocked message twice, as its log and as a rejection)."""
    recent = state.log[-HISTORY_DUPLICATE_WINDOW:]
    if not line.permitted and any(line.same_words(kept) for kept in recent):
        return False
    state.log = [*state.log, line][-DISPLAY_LOG_KEPT:]
    return True


def _restore(lines: list[LogLine], state: DisplayState) -> None:
    state.log = lines


class DisplayHistory:
    """The lines of the display's history: shown, kept, and shown again after a restart."""

    def __init__(self, room: Room) -> None:
        self._ledger = room.ledger
        self._hub = room.hub

    def add(self, speaker: str, text: str, permitted: bool, rationale: str | None) -> None:
        """One line (a blocked message the EO reports twice is shown once)."""
        event = LogEvent(speaker=speaker, text=text, permitted=permitted, rationale=rationale, at=now_ms())
        line = event.line()
        if self._hub.emit(event, functools.partial(_add_line, line)):
            self._keep(line)  # written after the display's lock is let go: the speaker's thread takes it too

    def _keep(self, line: LogLine) -> None:
        """The line in the ledger too."""
        current = self._ledger.current()
        if current is None:
            return
        try:
            self._ledger.add_log_line(current.key, line.at, line.speaker, line.text, line.permitted, line.rationale)
        except Exception as exc:  # shown all the same: a disk that fails must not cost the EO its answer
            _notes.warning(("log line", type(exc).__name__), "a history line was not kept: %s: %s", type(exc).__name__, exc)

    def restore(self) -> None:
        """The current round's history as the display showed it before a restart."""
        current = self._ledger.current()
        if current is None:
            return
        kept = self._ledger.log_lines(current.key, DISPLAY_LOG_KEPT)
        if not kept:
            return
        events = [LogEvent(**line) for line in kept]
        self._hub.emit(events[-1], functools.partial(_restore, [event.line() for event in events]))
