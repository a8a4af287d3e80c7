"""The room's database: one SQLite file (WAL, each change one transaction), every owner's tables on it.

The round's books, the competition's rows and the console's alerts are facts of the same day, so
they share one file and one connection discipline: one writer (the Avatar Controller: only it
hears the EO) and any number of readers in other processes (the round recorder filing a session's
summary, a CLI): WAL lets them read while it writes. Each owner defines its own tables (a
:class:`Tables`) beside the code that reads them; whoever opens the database names the tables it
must hold (:mod:`avatar.room_ledger` names the room's), and they are created then - on a new file,
or over one an earlier version wrote (its rows kept, the columns it lacks added).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS: Final = 5000
"""How long a reader or the writer waits for the other's lock before giving up."""
SCHEMA_VERSION: Final = 2
"""2: the rounds the room starts (``launches``), the competition's schedule, its utilities and
the agent programs of each round; ``rounds.launch_id``; ``rounds.eo_seen_ms``; the console's
alerts; the display's history of each round."""
_META: Final = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
"""The store's own table: the schema's version, and the facts of the room (:meth:`RoomLedger.remember`)."""


@dataclass(frozen=True)
class AddedColumn:
    """A column a database of an earlier schema lacks, and the statement that adds it."""

    table: str
    column: str
    statement: str


@dataclass(frozen=True)
class Tables:
    """One owner's tables: their DDL (``CREATE ... IF NOT EXISTS``) and the columns added since."""

    ddl: str
    added: tuple[AddedColumn, ...] = ()


class LedgerError(Exception):
    """The database cannot be opened where it should be (the message says where and why)."""


def _add_column(db: sqlite3.Connection, added: AddedColumn) -> None:
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (added.table,)).fetchone()
    if not exists or added.column in {row[1] for row in db.execute(f"PRAGMA table_info({added.table})")}:
        return
    try:
        db.execute(added.statement)
    except sqlite3.OperationalError as exc:  # another process (the controller, a CLI) added it just now
        if "duplicate column" not in str(exc):
            raise


def _create(db: sqlite3.Connection, tables: Sequence[Tables]) -> None:
    """Every owner's tables, on a new database or over one of an earlier version (its rows kept)."""
    for owned in tables:
        for added in owned.added:
            _add_column(db, added)
    db.executescript(_META + "".join(owned.ddl for owned in tables))
    db.execute("INSERT INTO meta (key, value) VALUES ('schema', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
               (str(SCHEMA_VERSION),))


class RoomDatabase:
    """The connection (thread-safe: one connection under a lock, each change one transaction)."""

    def __init__(self, connection: sqlite3.Connection, where: str) -> None:
        self._db = connection
        self.where = where
        self._lock = threading.RLock()

    @classmethod
    def open(cls, path: Path, tables: Sequence[Tables]) -> RoomDatabase:
        """The database at ``path`` (created with its folder when missing), in WAL mode."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a deal written is a deal kept, through a power cut too
            _create(db, tables)
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(f"the room's ledger cannot be kept at {path}: {exc}") from None
        return cls(db, str(path))

    @classmethod
    def in_memory(cls, tables: Sequence[Tables]) -> RoomDatabase:
        """A database that lives as long as the process (tests; a data directory that takes no writes)."""
        db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        _create(db, tables)
        return cls(db, "memory")

    @classmethod
    def open_or_memory(cls, path: Path, tables: Sequence[Tables]) -> RoomDatabase:
        """The database at ``path``, or one in memory with one line saying what a restart then loses."""
        try:
            return cls.open(path, tables)
        except LedgerError as exc:
            log.error("%s; the round's books are kept in memory only (a restart of the Avatar Controller loses them)", exc)
            return cls.in_memory(tables)

    @classmethod
    def reader(cls, path: Path, probe_table: str) -> RoomDatabase | None:
        """The database at ``path`` for reading from another process; None when there is none
        yet, or it has no ``probe_table`` to read."""
        if not path.exists():
            return None
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                                 isolation_level=None)
            db.execute(f"SELECT 1 FROM {probe_table} LIMIT 1")
        except sqlite3.Error as exc:
            log.warning("the room's ledger at %s cannot be read: %s", path, exc)
            return None
        return cls(db, str(path))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction: all of it is kept, or none."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Several reads that no write of this process comes between."""
        with self._lock:
            yield self._db

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read."""
        with self._lock:
            return self._db.execute(sql, args).fetchall()
