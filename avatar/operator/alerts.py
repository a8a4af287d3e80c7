"""The console's alerts as facts of the day, in the room's ledger.

An alert says something the operator should look at: a worker offline, a round the EO lost, an
utterance the EO blocked. It is kept in the ledger as it is raised, so a restarted Avatar
Controller shows the day's alerts as they were (the list, and the badge of those still true), and
it is marked resolved - kept, in the history - when what it says stops being true: a worker that
was offline, in error or silent is back. The badge counts the alerts not resolved.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from avatar.books.database import Tables
from avatar.books.ledger import RoomLedger
from avatar.books.records import day_of
from avatar.page_events import Alert

ALERTS_KEPT: Final = 50
"""The alerts a console gets of the day: the latest."""
_COLUMNS: Final = "id, at_ms, kind, level, subject, text, resolved_ms, resolution"

ALERT_TABLES: Final = Tables(
    ddl="""
CREATE TABLE IF NOT EXISTS alerts (
    id TEXT PRIMARY KEY,
    day TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    level TEXT NOT NULL,
    subject TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL,
    resolved_ms INTEGER,
    resolution TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS alerts_by_day ON alerts (day, at_ms);
""",
)
"""The day's alerts, each kept until what it says stops being true (then resolved, still kept)."""


class AlertBook:
    """The day's alerts of one room (thread-safe: the ledger is)."""

    def __init__(self, ledger: RoomLedger) -> None:
        self.ledger = ledger

    def add(self, alert: Alert) -> None:
        with self.ledger.transaction() as db:
            db.execute("INSERT OR IGNORE INTO alerts (id, day, at_ms, kind, level, subject, text) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (alert.id, day_of(alert.at), alert.at, alert.kind, alert.level, alert.subject, alert.text))

    def resolve(self, kinds: Iterable[str], subject: str, at_ms: int, resolution: str) -> list[Alert]:
        """Mark the alerts of these kinds about ``subject`` that are not resolved yet as resolved;
        returns them as they are now."""
        kinds = list(kinds)
        marks = ", ".join("?" for _ in kinds)
        with self.ledger.transaction() as db:
            ids = [row[0] for row in db.execute(
                f"SELECT id FROM alerts WHERE kind IN ({marks}) AND subject = ? AND resolved_ms IS NULL", (*kinds, subject))]
            db.executemany("UPDATE alerts SET resolved_ms = ?, resolution = ? WHERE id = ?", [(at_ms, resolution, i) for i in ids])
        return [a for a in self._alerts("id IN (" + ", ".join("?" for _ in ids) + ")", tuple(ids))] if ids else []

    def of_day(self, day: str, kept: int = ALERTS_KEPT) -> list[Alert]:
        """The day's latest ``kept`` alerts, oldest first."""
        return list(reversed(self._alerts("day = ? ORDER BY at_ms DESC, rowid DESC LIMIT ?", (day, kept))))

    def _alerts(self, where: str, args: tuple[object, ...]) -> list[Alert]:
        rows = self.ledger.query(f"SELECT {_COLUMNS} FROM alerts WHERE {where}", args)
        return [Alert(id=i, at=at, kind=kind, level=level, subject=subject, text=text, resolved=resolved, resolution=resolution)
                for i, at, kind, level, subject, text, resolved, resolution in rows]
