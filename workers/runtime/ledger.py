"""The room's ledger: the EO's books of every round, kept in one embedded database.

The Environment Orchestrator (EO) is the truth about a round: what it booked is what the buyer
bought and pays for, and what it scores. The human side hears it in pieces - the round's metadata
and utility, each seller's offer, each ``/confirmAccept`` and its answer, each booked Accept the EO
forwards, the allocation the buyer saved, the final totals - and every screen and record of the
room (the buyer's page, the display, the operator's day book and its exports, the recorded
sessions) is derived from this one store of them, never from a tally of its own. Written as it
happens (SQLite in WAL mode, each change one transaction), so a restarted Avatar Controller takes
the round up where it was and a restarted ``run`` continues the day.

One writer (the Avatar Controller: only it hears the EO) and any number of readers in other
processes (the stand-in EO choosing a round id not used today, the round recorder filing a
session's summary): WAL lets them read while it writes. This module is only the store - what
the rows mean to a page is the Avatar Controller's business.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)

LEDGER_FILE: Final = "ledger.sqlite3"
"""Under ``data_dir``: the room's ledger."""
BUSY_TIMEOUT_MS: Final = 5000
"""How long a reader or the writer waits for the other's lock before giving up."""
SCHEMA_VERSION: Final = 2
"""2: the rounds the room starts (``launches``), the competition's schedule, its utilities and
the agent programs of each round; ``rounds.launch_id``; ``rounds.eo_seen_ms``; the console's
alerts; the display's history of each round."""

LedgerPhase = Literal["warmup", "round", "post", "ended", "lost"]
OPEN_PHASES: Final = ("warmup", "round", "post")
TOTALS_GRACE_MS: Final = 30_000
"""The EO sends a round's totals at the end of its post-round; none this long after that, and
they are not coming (the EO forgot the round, or the room missed them)."""
_PHASES_LEFT: Final = {"warmup": ("round", "post"), "round": ("post",)}
"""The phases still to come after each open phase, by their keys in the round's durations."""
"""A round in one of these has not ended yet: the EO may still book, end or score it."""
PromptOutcome = Literal["waiting", "sent", "declined", "booked", "cut", "unbooked"]
"""``waiting``: asked or queued; ``sent``: the buyer's yes went to the EO, which books next;
``declined``: the answer was no; ``booked``: the EO forwarded the deal; ``cut``: the controller
stopped before it answered (the platform EO exits on that); ``unbooked``: the round ended with a
yes the EO never booked."""
DealSource = Literal["eo", "eo-totals"]
"""``eo``: the seller's Accept the EO forwarded after booking it; ``eo-totals``: a difference the
EO's own totals showed (``/viewTotals``) that never reached us as a message."""

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    round_label TEXT NOT NULL,
    round_id TEXT NOT NULL,
    day TEXT NOT NULL,
    started_ms INTEGER NOT NULL,
    buyer TEXT NOT NULL DEFAULT '',
    phase TEXT NOT NULL,
    phase_started_ms INTEGER,
    phase_deadline_ms INTEGER,
    durations TEXT NOT NULL DEFAULT '{}',
    budget REAL,
    currency TEXT NOT NULL DEFAULT 'USD',
    utility TEXT,
    totals TEXT,
    undelivered INTEGER NOT NULL DEFAULT 0,
    note TEXT NOT NULL DEFAULT '',
    launch_id INTEGER REFERENCES launches (id),
    eo_seen_ms INTEGER
);
CREATE INDEX IF NOT EXISTS rounds_by_label ON rounds (round_label, key);
CREATE INDEX IF NOT EXISTS rounds_by_day ON rounds (day, key);
CREATE TABLE IF NOT EXISTS offers (
    round_key INTEGER NOT NULL REFERENCES rounds (key),
    seller TEXT NOT NULL,
    goods TEXT NOT NULL,
    price REAL NOT NULL,
    text TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (round_key, seller)
);
CREATE TABLE IF NOT EXISTS prompts (
    id TEXT PRIMARY KEY,
    round_key INTEGER NOT NULL REFERENCES rounds (key),
    seq INTEGER NOT NULL,
    seller TEXT NOT NULL,
    text TEXT NOT NULL,
    bid TEXT NOT NULL,
    goods TEXT NOT NULL,
    price REAL,
    received_ms INTEGER NOT NULL,
    asked_ms INTEGER,
    deadline_ms INTEGER,
    accepted INTEGER,
    answered_by TEXT NOT NULL DEFAULT '',
    answered_ms INTEGER,
    outcome TEXT NOT NULL DEFAULT 'waiting'
);
CREATE INDEX IF NOT EXISTS prompts_by_round ON prompts (round_key, seq);
CREATE TABLE IF NOT EXISTS deals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    round_key INTEGER NOT NULL REFERENCES rounds (key),
    seller TEXT NOT NULL,
    goods TEXT NOT NULL,
    price REAL NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    message_key TEXT,
    prompt_id TEXT,
    booked_ms INTEGER NOT NULL,
    source TEXT NOT NULL DEFAULT 'eo',
    UNIQUE (round_key, message_key)
);
CREATE TABLE IF NOT EXISTS allocations (
    round_key INTEGER PRIMARY KEY REFERENCES rounds (key),
    products TEXT NOT NULL,
    value REAL,
    saved_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS launches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    round_id TEXT NOT NULL,
    round_label TEXT NOT NULL,
    day TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    buyer TEXT NOT NULL DEFAULT '',
    slot_id INTEGER REFERENCES schedule (id),
    seats TEXT NOT NULL,
    utilities TEXT NOT NULL,
    durations TEXT NOT NULL,
    eo TEXT NOT NULL,
    state TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    ends_ms INTEGER
);
CREATE INDEX IF NOT EXISTS launches_by_label ON launches (day, round_label, id);
CREATE TABLE IF NOT EXISTS schedule (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    roster TEXT NOT NULL,
    cycle INTEGER NOT NULL,
    buyer TEXT NOT NULL,
    seats TEXT NOT NULL,
    buyer_utility TEXT NOT NULL,
    twin_set INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'planned',
    put_back_from INTEGER REFERENCES schedule (id)
);
CREATE INDEX IF NOT EXISTS schedule_by_roster ON schedule (roster, state, id);
CREATE TABLE IF NOT EXISTS utilities (
    key TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    utility TEXT NOT NULL,
    source TEXT NOT NULL,
    drawn_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS agent_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    launch_id INTEGER NOT NULL REFERENCES launches (id),
    agent TEXT NOT NULL,
    avatar TEXT NOT NULL,
    pid INTEGER,
    port INTEGER,
    log TEXT NOT NULL DEFAULT '',
    started_ms INTEGER NOT NULL,
    ended_ms INTEGER,
    outcome TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS agent_runs_by_state ON agent_runs (state);
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
CREATE TABLE IF NOT EXISTS room_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    round_key INTEGER NOT NULL REFERENCES rounds (key),
    at_ms INTEGER NOT NULL,
    speaker TEXT NOT NULL,
    text TEXT NOT NULL,
    permitted INTEGER NOT NULL,
    rationale TEXT
);
CREATE INDEX IF NOT EXISTS room_log_by_round ON room_log (round_key, id);
"""
_MIGRATIONS: Final = (("rounds", "launch_id", "ALTER TABLE rounds ADD COLUMN launch_id INTEGER REFERENCES launches (id)"),
                      ("rounds", "eo_seen_ms", "ALTER TABLE rounds ADD COLUMN eo_seen_ms INTEGER"))
"""Columns a ledger of an earlier schema lacks: ``(table, column, the statement that adds it)``."""


class LedgerError(Exception):
    """The ledger cannot be opened where it should be (the message says where and why)."""


def _dumps(value: Any) -> str:
    """As the EO sent it (its keys' order is what the pages show)."""
    return json.dumps(value, separators=(",", ":"))


def _goods(goods: Mapping[str, int]) -> str:
    """Goods in one spelling whatever their order, so two bids of the same goods compare equal."""
    return json.dumps(dict(goods), sort_keys=True, separators=(",", ":"))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def day_of(ms: int) -> str:
    """The local date of a moment (ms since the epoch): the competition day it belongs to."""
    return datetime.datetime.fromtimestamp(ms / 1000).date().isoformat()


def round_label(round_id: object) -> str:
    """Rounds are found by the text of their id: ``1`` (a JSON number) and ``"1"`` are one round."""
    return str(round_id)


@dataclass(frozen=True)
class LedgerRound:
    """One round as the EO told it, from its metadata to its totals."""

    key: int
    """The ledger's own id of the round (a round id may come back on another day)."""
    round_id: int | str
    day: str
    started_ms: int
    buyer: str
    phase: LedgerPhase
    phase_started_ms: int | None
    phase_deadline_ms: int | None
    durations: dict[str, float]
    budget: float | None
    currency: str
    utility: dict[str, Any] | None
    totals: dict[str, Any] | None
    undelivered: int
    note: str

    @property
    def open(self) -> bool:
        return self.phase in OPEN_PHASES

    def totals_due_ms(self) -> int:
        """When the EO sends this round's totals: the end of its post-round, as first timed (an
        early End round on the platform's EO does not move it)."""
        left = _PHASES_LEFT.get(self.phase, ())
        return int((self.phase_deadline_ms or now_ms()) + sum(float(self.durations.get(k, 0.0)) for k in left) * 1000)


@dataclass(frozen=True)
class Offer:
    seller: str
    goods: dict[str, int]
    price: float
    text: str
    at_ms: int


@dataclass(frozen=True)
class Prompt:
    """A seller's Accept the EO asked the human side to confirm (``/confirmAccept``)."""

    id: str
    round_key: int
    seq: int
    seller: str
    text: str
    bid: dict[str, Any]
    goods: dict[str, int]
    price: float | None
    received_ms: int
    asked_ms: int | None
    """When the buyer was asked (prompts are asked one at a time; None: still queued)."""
    deadline_ms: int | None
    accepted: bool | None
    answered_by: str
    answered_ms: int | None
    outcome: PromptOutcome


@dataclass(frozen=True)
class Deal:
    """A deal the EO booked."""

    id: int
    round_key: int
    seller: str
    goods: dict[str, int]
    price: float
    text: str
    prompt_id: str | None
    booked_ms: int
    source: DealSource


@dataclass(frozen=True)
class SavedAllocation:
    products: dict[str, Any]
    value: float | None
    saved_ms: int


@dataclass(frozen=True)
class RoundBook:
    """A round with everything booked in it: what every view of the round is derived from."""

    round: LedgerRound
    offers: list[Offer] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)
    deals: list[Deal] = field(default_factory=list)
    allocation: SavedAllocation | None = None

    @property
    def spent(self) -> float:
        return round(sum(d.price for d in self.deals), 2)

    def bought(self) -> dict[str, int]:
        """Every good of the booked deals, summed."""
        have: dict[str, int] = {}
        for deal in self.deals:
            for good, amount in deal.goods.items():
                have[good] = have.get(good, 0) + amount
        return have

    @property
    def left(self) -> float | None:
        return None if self.round.budget is None else round(self.round.budget - self.spent, 2)

    def waiting(self) -> list[Prompt]:
        """The prompts still waiting for the buyer's answer, in the order they are asked."""
        return [p for p in self.prompts if p.outcome == "waiting"]


_ROUND_COLUMNS: Final = ("key, round_id, day, started_ms, buyer, phase, phase_started_ms, phase_deadline_ms, durations, "
                         "budget, currency, utility, totals, undelivered, note")
_PROMPT_COLUMNS: Final = ("id, round_key, seq, seller, text, bid, goods, price, received_ms, asked_ms, deadline_ms, accepted, "
                          "answered_by, answered_ms, outcome")
_DEAL_COLUMNS: Final = "id, round_key, seller, goods, price, text, prompt_id, booked_ms, source"


def _round(row: tuple[Any, ...]) -> LedgerRound:
    (key, round_id, day, started, buyer, phase, phase_started, deadline, durations, budget, currency, utility, totals,
     undelivered, note) = row
    return LedgerRound(key, _loads(round_id), day, started, buyer, phase, phase_started, deadline, _loads(durations) or {},
                       budget, currency, _loads(utility), _loads(totals), undelivered, note)


def _prompt(row: tuple[Any, ...]) -> Prompt:
    (pid, round_key, seq, seller, text, bid, goods, price, received, asked, deadline, accepted, by, answered, outcome) = row
    return Prompt(pid, round_key, seq, seller, text, _loads(bid), _loads(goods), price, received, asked, deadline,
                  None if accepted is None else bool(accepted), by, answered, outcome)


def _deal(row: tuple[Any, ...]) -> Deal:
    did, round_key, seller, goods, price, text, prompt_id, booked, source = row
    return Deal(did, round_key, seller, _loads(goods), price, text, prompt_id, booked, source)


def _create(db: sqlite3.Connection) -> None:
    """The schema, on a new ledger or over one of an earlier version (its rows kept)."""
    for table, column, statement in _MIGRATIONS:
        exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        if exists and column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
            try:
                db.execute(statement)
            except sqlite3.OperationalError as exc:  # another process (the controller, a CLI) added it just now
                if "duplicate column" not in str(exc):
                    raise
    db.executescript(_SCHEMA)
    db.execute("INSERT INTO meta (key, value) VALUES ('schema', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
               (str(SCHEMA_VERSION),))


def _unbooked(db: sqlite3.Connection, key: int) -> None:
    """The round is over: a yes the EO has not booked by now never will be."""
    db.execute("UPDATE prompts SET outcome = 'unbooked' WHERE round_key = ? AND outcome = 'sent'", (key,))


class RoomLedger:
    """The store (thread-safe: one connection under a lock, each change one transaction)."""

    def __init__(self, connection: sqlite3.Connection, where: str, readonly: bool = False) -> None:
        self._db = connection
        self.where = where
        self.readonly = readonly
        self._lock = threading.RLock()

    # -- opening -------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path) -> RoomLedger:
        """The ledger at ``path`` (created with its folder when missing), in WAL mode."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a deal written is a deal kept, through a power cut too
            _create(db)
        except (OSError, sqlite3.Error) as exc:
            raise LedgerError(f"the room's ledger cannot be kept at {path}: {exc}") from None
        return cls(db, str(path))

    @classmethod
    def in_memory(cls) -> RoomLedger:
        """A ledger that lives as long as the process (tests; a data directory that takes no writes)."""
        db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        _create(db)
        return cls(db, "memory")

    @classmethod
    def open_or_memory(cls, path: Path) -> RoomLedger:
        """The ledger at ``path``, or one in memory with one line saying what a restart then loses."""
        try:
            return cls.open(path)
        except LedgerError as exc:
            log.error("%s; the round's books are kept in memory only (a restart of the Avatar Controller loses them)", exc)
            return cls.in_memory()

    @classmethod
    def reader(cls, path: Path) -> RoomLedger | None:
        """The ledger at ``path`` for reading from another process; None when there is none yet."""
        if not path.exists():
            return None
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                                 isolation_level=None)
            db.execute("SELECT 1 FROM rounds LIMIT 1")
        except sqlite3.Error as exc:
            log.warning("the room's ledger at %s cannot be read: %s", path, exc)
            return None
        return cls(db, str(path), readonly=True)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction of a store that shares this ledger's database (the competition's)."""
        with self._write() as db:
            yield db

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read of a store that shares this ledger's database."""
        return self._read(sql, args)

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction: all of it is kept, or none."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # -- the operator's buyer ------------------------------------------------------------------
    def next_buyer(self) -> str:
        rows = self._read("SELECT value FROM meta WHERE key = 'next_buyer'")
        return str(rows[0][0]) if rows else ""

    def remember(self, key: str, value: Any) -> None:
        """A fact of the room that outlives its processes (JSON; ``key`` apart from the buyer's)."""
        with self._write() as db:
            db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                       (f"fact:{key}", _dumps(value)))

    def recall(self, key: str) -> Any:
        """What :meth:`remember` kept under ``key`` (None: nothing)."""
        rows = self._read("SELECT value FROM meta WHERE key = ?", (f"fact:{key}",))
        return _loads(rows[0][0]) if rows else None

    @staticmethod
    def next_buyer_in(db: sqlite3.Connection) -> str:
        """The operator's buyer of the next round, inside a transaction."""
        row = db.execute("SELECT value FROM meta WHERE key = 'next_buyer'").fetchone()
        return str(row[0]) if row else ""

    def name_buyer(self, label: str, round_key: int | None = None) -> None:
        """The buyer of the next rounds, and of round ``round_key`` when given (the one running)."""
        with self._write() as db:
            db.execute("INSERT INTO meta (key, value) VALUES ('next_buyer', ?) "
                       "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (label,))
            if round_key is not None:
                db.execute("UPDATE rounds SET buyer = ? WHERE key = ?", (label, round_key))

    # -- rounds --------------------------------------------------------------------------------
    def begin_round(self, round_id: int | str, durations: Mapping[str, float], budget: float | None, currency: str,
                    phase: LedgerPhase, phase_started_ms: int, phase_deadline_ms: int | None) -> LedgerRound:
        """A new round (the EO's metadata opens one). Any round still open is over: one whose
        negotiation had ended is closed without the totals that never came, one still
        negotiating is lost (the EO started another: it keeps one round at a time for a room)."""
        with self._write() as db:
            db.execute("UPDATE rounds SET phase = 'ended', note = ? WHERE phase = 'post'",
                       ("the EO's totals never reached the room",))
            db.execute("UPDATE rounds SET phase = 'lost', note = ? WHERE phase IN ('warmup', 'round')",
                       (f"the EO started round {round_id} before this one ended",))
            day = day_of(phase_started_ms)
            launch = db.execute("SELECT id, buyer FROM launches WHERE day = ? AND round_label = ? ORDER BY id DESC LIMIT 1",
                                (day, round_label(round_id))).fetchone()
            buyer = launch[1] if launch is not None else self.next_buyer_in(db)
            cursor = db.execute(
                "INSERT INTO rounds (round_label, round_id, day, started_ms, buyer, phase, phase_started_ms, phase_deadline_ms, "
                "durations, budget, currency, launch_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (round_label(round_id), _dumps(round_id), day, phase_started_ms, buyer, phase, phase_started_ms,
                 phase_deadline_ms, _dumps(dict(durations)), budget, currency, launch[0] if launch is not None else None),
            )
            key = int(cursor.lastrowid or 0)
        found = self.round_by_key(key)
        assert found is not None
        return found

    def round_by_key(self, key: int) -> LedgerRound | None:
        rows = self._read(f"SELECT {_ROUND_COLUMNS} FROM rounds WHERE key = ?", (key,))
        return _round(rows[0]) if rows else None

    def round_for(self, round_id: object) -> LedgerRound | None:
        """The latest round with this id."""
        rows = self._read(f"SELECT {_ROUND_COLUMNS} FROM rounds WHERE round_label = ? ORDER BY key DESC LIMIT 1",
                          (round_label(round_id),))
        return _round(rows[0]) if rows else None

    def current(self) -> LedgerRound | None:
        """The round the room is in: the latest one, whatever its phase (None before the first)."""
        rows = self._read(f"SELECT {_ROUND_COLUMNS} FROM rounds ORDER BY key DESC LIMIT 1")
        return _round(rows[0]) if rows else None

    def rounds_on(self, day: str) -> list[LedgerRound]:
        rows = self._read(f"SELECT {_ROUND_COLUMNS} FROM rounds WHERE day = ? ORDER BY key", (day,))
        return [_round(r) for r in rows]

    def set_phase(self, key: int, phase: LedgerPhase, started_ms: int | None, deadline_ms: int | None,
                  durations: Mapping[str, float] | None = None, note: str | None = None) -> None:
        with self._write() as db:
            db.execute("UPDATE rounds SET phase = ?, phase_started_ms = ?, phase_deadline_ms = ? WHERE key = ?",
                       (phase, started_ms, deadline_ms, key))
            if durations is not None:
                db.execute("UPDATE rounds SET durations = ? WHERE key = ?", (_dumps(dict(durations)), key))
            if note is not None:
                db.execute("UPDATE rounds SET note = ? WHERE key = ?", (note, key))
            if phase in ("ended", "lost"):
                _unbooked(db, key)

    def eo_saw(self, key: int, at_ms: int) -> None:
        """The EO answered its books of this round: it knew it (first time kept). A round it
        later says it does not know, it forgot: a fact that must outlive the process that saw it."""
        with self._write() as db:
            db.execute("UPDATE rounds SET eo_seen_ms = ? WHERE key = ? AND eo_seen_ms IS NULL", (at_ms, key))

    def eo_knew(self, key: int) -> bool:
        """Whether the EO was once seen to know round ``key`` (:meth:`eo_saw`)."""
        rows = self._read("SELECT eo_seen_ms FROM rounds WHERE key = ?", (key,))
        return bool(rows and rows[0][0] is not None)

    def note(self, key: int, note: str) -> None:
        with self._write() as db:
            db.execute("UPDATE rounds SET note = ? WHERE key = ?", (note, key))

    def set_utility(self, key: int, utility: Mapping[str, Any]) -> None:
        with self._write() as db:
            db.execute("UPDATE rounds SET utility = ? WHERE key = ?", (_dumps(dict(utility)), key))

    def set_totals(self, key: int, totals: Mapping[str, Any], ended_ms: int) -> None:
        """The EO's final totals: the round is over and scored; a note of what might have gone
        wrong with it (a controller stopped while a deal waited, a round ended early) no longer
        holds and leaves it."""
        with self._write() as db:
            db.execute("UPDATE rounds SET totals = ?, phase = 'ended', phase_started_ms = ?, phase_deadline_ms = NULL, note = '' "
                       "WHERE key = ?", (_dumps(dict(totals)), ended_ms, key))
            _unbooked(db, key)

    def count_undelivered(self, round_id: object) -> bool:
        """One of the buyer's utterances in this round never reached the EO; False: no such round."""
        with self._write() as db:
            cursor = db.execute("UPDATE rounds SET undelivered = undelivered + 1 WHERE key = "
                                "(SELECT key FROM rounds WHERE round_label = ? ORDER BY key DESC LIMIT 1)",
                                (round_label(round_id),))
            return cursor.rowcount > 0

    # -- the display's history -----------------------------------------------------------------
    def add_log_line(self, key: int, at_ms: int, speaker: str, text: str, permitted: bool, rationale: str | None) -> None:
        """One line of the round's history as the display shows it (a restarted room shows it again)."""
        with self._write() as db:
            db.execute("INSERT INTO room_log (round_key, at_ms, speaker, text, permitted, rationale) VALUES (?, ?, ?, ?, ?, ?)",
                       (key, at_ms, speaker, text, int(permitted), rationale))

    def log_lines(self, key: int, kept: int) -> list[dict[str, Any]]:
        """The round's last ``kept`` history lines, oldest first."""
        rows = self._read("SELECT at_ms, speaker, text, permitted, rationale FROM room_log WHERE round_key = ? ORDER BY id DESC "
                          "LIMIT ?", (key, kept))
        return [{"at": at, "speaker": speaker, "text": text, "permitted": bool(permitted), "rationale": rationale}
                for at, speaker, text, permitted, rationale in reversed(rows)]

    # -- offers --------------------------------------------------------------------------------
    def set_offer(self, key: int, seller: str, goods: Mapping[str, int], price: float, text: str, at_ms: int) -> None:
        """The seller's current offer (its latest)."""
        with self._write() as db:
            db.execute("INSERT INTO offers (round_key, seller, goods, price, text, at_ms) VALUES (?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (round_key, seller) DO UPDATE SET goods = excluded.goods, price = excluded.price, "
                       "text = excluded.text, at_ms = excluded.at_ms", (key, seller, _goods(goods), price, text, at_ms))

    # -- confirmations -------------------------------------------------------------------------
    def add_prompt(self, prompt_id: str, key: int, seller: str, text: str, bid: Mapping[str, Any], goods: Mapping[str, int],
                   price: float | None, received_ms: int) -> Prompt:
        with self._write() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM prompts WHERE round_key = ?", (key,)).fetchone()[0]
            db.execute("INSERT INTO prompts (id, round_key, seq, seller, text, bid, goods, price, received_ms) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (prompt_id, key, seq, seller, text, _dumps(dict(bid)), _goods(goods), price, received_ms))
        found = self.prompt(prompt_id)
        assert found is not None
        return found

    def prompt(self, prompt_id: str) -> Prompt | None:
        rows = self._read(f"SELECT {_PROMPT_COLUMNS} FROM prompts WHERE id = ?", (prompt_id,))
        return _prompt(rows[0]) if rows else None

    def ask_prompt(self, prompt_id: str, asked_ms: int, deadline_ms: int) -> None:
        """The buyer is asked now (it is first in the queue) and answers by ``deadline_ms``."""
        with self._write() as db:
            db.execute("UPDATE prompts SET asked_ms = ?, deadline_ms = ? WHERE id = ?", (asked_ms, deadline_ms, prompt_id))

    def answer_prompt(self, prompt_id: str, accepted: bool, by: str, answered_ms: int) -> None:
        """The answer the EO gets: a yes is ``sent`` (the EO books it next), a no ``declined``."""
        with self._write() as db:
            db.execute("UPDATE prompts SET accepted = ?, answered_by = ?, answered_ms = ?, outcome = ? "
                       "WHERE id = ? AND outcome = 'waiting'",
                       (int(accepted), by, answered_ms, "sent" if accepted else "declined", prompt_id))

    def cut_waiting_prompts(self) -> list[Prompt]:
        """Prompts a stopped controller left unanswered (its process ended while the EO waited):
        ``cut``, with when the next run found them (their ``answered_ms``)."""
        rows = self._read(f"SELECT {_PROMPT_COLUMNS} FROM prompts WHERE outcome = 'waiting'")
        if rows:
            with self._write() as db:
                db.execute("UPDATE prompts SET outcome = 'cut', answered_ms = ? WHERE outcome = 'waiting'", (now_ms(),))
        return [_prompt(r) for r in rows]

    # -- deals ---------------------------------------------------------------------------------
    def book_deal(self, key: int, seller: str, goods: Mapping[str, int], price: float, text: str, message_key: str,
                  booked_ms: int) -> Deal | None:
        """The EO forwarded ``seller``'s Accept: it booked the deal. The prompt it answers (the
        oldest yes sent to that seller for the same goods and price, else the oldest yes to that
        seller) is ``booked``; a difference the EO's totals had shown for it already is this deal.
        None: this very message was booked already."""
        goods_text = _goods(goods)
        with self._write() as db:
            if db.execute("SELECT 1 FROM deals WHERE round_key = ? AND message_key = ?", (key, message_key)).fetchone():
                return None
            sent = db.execute("SELECT id, goods, price FROM prompts WHERE round_key = ? AND seller = ? AND outcome = 'sent' "
                              "ORDER BY seq", (key, seller)).fetchall()
            match = next((p for p in sent if p[1] == goods_text and p[2] == price), sent[0] if sent else None)
            prompt_id = match[0] if match else None
            if prompt_id is not None:
                db.execute("UPDATE prompts SET outcome = 'booked' WHERE id = ?", (prompt_id,))
            reconciled = db.execute("SELECT id FROM deals WHERE round_key = ? AND seller = ? AND source = 'eo-totals' AND "
                                    "goods = ? AND price = ? ORDER BY id LIMIT 1", (key, seller, goods_text, price)).fetchone()
            if reconciled is not None:
                db.execute("UPDATE deals SET source = 'eo', message_key = ?, prompt_id = ?, text = ? WHERE id = ?",
                           (message_key, prompt_id, text, reconciled[0]))
                deal_id = int(reconciled[0])
            else:
                cursor = db.execute("INSERT INTO deals (round_key, seller, goods, price, text, message_key, prompt_id, booked_ms, "
                                    "source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'eo')",
                                    (key, seller, goods_text, price, text, message_key, prompt_id, booked_ms))
                deal_id = int(cursor.lastrowid or 0)
            db.execute("DELETE FROM offers WHERE round_key = ? AND seller = ?", (key, seller))
        rows = self._read(f"SELECT {_DEAL_COLUMNS} FROM deals WHERE id = ?", (deal_id,))
        return _deal(rows[0])

    def add_reconciled_deal(self, key: int, seller: str, goods: Mapping[str, int], price: float, booked_ms: int) -> None:
        """What the EO's totals show booked with ``seller`` beyond the deals that reached us."""
        with self._write() as db:
            db.execute("INSERT INTO deals (round_key, seller, goods, price, booked_ms, source) VALUES (?, ?, ?, ?, ?, 'eo-totals')",
                       (key, seller, _goods(goods), price, booked_ms))

    def save_allocation(self, key: int, products: Mapping[str, Any], value: float | None, saved_ms: int | None = None) -> None:
        """The allocation the EO took (the last one saved is the one it scores)."""
        with self._write() as db:
            db.execute("INSERT INTO allocations (round_key, products, value, saved_ms) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (round_key) DO UPDATE SET products = excluded.products, value = excluded.value, "
                       "saved_ms = excluded.saved_ms", (key, _dumps(dict(products)), value, saved_ms or now_ms()))

    # -- a round's whole book ------------------------------------------------------------------
    def book(self, key: int) -> RoundBook | None:
        found = self.round_by_key(key)
        if found is None:
            return None
        with self._lock:
            offers = [Offer(s, _loads(g), p, t, a) for s, g, p, t, a in self._db.execute(
                "SELECT seller, goods, price, text, at_ms FROM offers WHERE round_key = ? ORDER BY seller", (key,))]
            prompts = [_prompt(r) for r in self._db.execute(
                f"SELECT {_PROMPT_COLUMNS} FROM prompts WHERE round_key = ? ORDER BY seq", (key,))]
            deals = [_deal(r) for r in self._db.execute(
                f"SELECT {_DEAL_COLUMNS} FROM deals WHERE round_key = ? ORDER BY id", (key,))]
            saved = self._db.execute("SELECT products, value, saved_ms FROM allocations WHERE round_key = ?", (key,)).fetchone()
        allocation = SavedAllocation(_loads(saved[0]), saved[1], saved[2]) if saved else None
        return RoundBook(found, offers, prompts, deals, allocation)

    def current_book(self) -> RoundBook | None:
        current = self.current()
        return None if current is None else self.book(current.key)
