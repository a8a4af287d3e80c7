"""The room's ledger file: the round's books, the competition's rows and the console's alerts on
one SQLite database under ``data_dir``.

Each owner defines its tables beside the code that reads them (:data:`~avatar.books.tables.BOOK_TABLES`,
:data:`~avatar.competition.store.COMPETITION_TABLES`, :data:`~avatar.operator.alerts.ALERT_TABLES`);
this module names them all, so whoever opens the room's ledger to write it - the Avatar
Controller, the tournament CLI - gets every table, on a new file or one an earlier version wrote.
A reader in another process (the round recorder) needs none of them and none of their owners'
imports: :func:`~avatar.books.ledger.read_ledger`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from avatar.books.database import RoomDatabase, Tables
from avatar.books.ledger import RoomLedger
from avatar.books.tables import BOOK_TABLES
from avatar.competition.store import COMPETITION_TABLES
from avatar.operator.alerts import ALERT_TABLES

ROOM_TABLES: Final[tuple[Tables, ...]] = (BOOK_TABLES, COMPETITION_TABLES, ALERT_TABLES)
"""Every table of the room's ledger, by its owner."""


def open_ledger(path: Path) -> RoomLedger:
    """The ledger at ``path`` (created with its folder when missing); raises
    :class:`~avatar.books.database.LedgerError` when it cannot be kept there."""
    return RoomLedger(RoomDatabase.open(path, ROOM_TABLES))


def open_ledger_or_memory(path: Path) -> RoomLedger:
    """The ledger at ``path``, or one in memory (one line says what a restart then loses)."""
    return RoomLedger(RoomDatabase.open_or_memory(path, ROOM_TABLES))


def ledger_in_memory() -> RoomLedger:
    """A ledger that lives as long as the process (tests)."""
    return RoomLedger(RoomDatabase.in_memory(ROOM_TABLES))

