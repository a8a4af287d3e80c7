"""The round's own tables in the room's database: the rounds the room started, each round's
metadata, offers, confirmations, deals, allocation and the display's history of it (table and
column names are those every earlier version wrote: a database of any of them opens and reads)."""

from __future__ import annotations

from typing import Final

from avatar.books.database import AddedColumn, Tables

BOOK_TABLES: Final = Tables(
    ddl="""
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
""",
    added=(AddedColumn("rounds", "launch_id", "ALTER TABLE rounds ADD COLUMN launch_id INTEGER REFERENCES launches (id)"),
           AddedColumn("rounds", "eo_seen_ms", "ALTER TABLE rounds ADD COLUMN eo_seen_ms INTEGER")),
)
"""The round's books, with the rounds the room started (``launches``: written by the
competition's store, :mod:`avatar.competition.store`; a round the EO opens takes its launch's
buyer and names it in ``rounds.launch_id``)."""
