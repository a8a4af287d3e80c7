"""The round's books in the room's database: the EO's account of every round, as it happens.

The Environment Orchestrator (EO) is the truth about a round: what it booked is what the buyer
bought and pays for, and what it scores. The human side hears it in pieces - the round's metadata
and utility, each seller's offer, each ``/confirmAccept`` and its answer, each booked Accept the EO
forwards, the allocation the buyer saved, the final totals - and every screen and record of the
room (the buyer's page, the display, the operator's day book and its exports, the recorded
sessions) is derived from this one record of them, never from a tally of its own. Written as it
happens (each change one transaction of :class:`~avatar.books.database.RoomDatabase`), so a
restarted Avatar Controller takes the round up where it was and a restarted ``run`` continues the
day. What is booked how is :mod:`avatar.books.rules`'s; what the rows mean to a page is the Avatar
Controller's business.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from avatar.books import rules
from avatar.books.database import RoomDatabase
from avatar.books.records import (
    DEAL_COLUMNS,
    OPEN_PHASES,
    OVER_PHASES,
    PROMPT_COLUMNS,
    ROUND_COLUMNS,
    Deal,
    LedgerPhase,
    LedgerRound,
    Offer,
    Prompt,
    RoundBook,
    SavedAllocation,
    day_of,
    deal_of_row,
    dumps,
    goods_text,
    loads,
    prompt_of_row,
    round_label,
    round_of_row,
)
from humaine_platform.models import Bid
from workers.runtime.messages import now_ms

LEDGER_FILE: Final = "ledger.sqlite3"
"""Under ``data_dir``: the room's ledger."""


def _unbooked(db: sqlite3.Connection, key: int) -> None:
    """The round is over: a yes the EO has not booked by now never will be."""
    db.execute("UPDATE prompts SET outcome = 'unbooked' WHERE round_key = ? AND outcome = 'sent'", (key,))


def _next_buyer_in(db: sqlite3.Connection) -> str:
    """The operator's buyer of the next round, inside a transaction."""
    row = db.execute("SELECT value FROM meta WHERE key = 'next_buyer'").fetchone()
    return str(row[0]) if row else ""


class RoomLedger:
    """The round's books (thread-safe: the database is)."""

    def __init__(self, database: RoomDatabase) -> None:
        self._db = database

    @property
    def where(self) -> str:
        """The database's file (``memory`` when it has none)."""
        return self._db.where

    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction of another owner's tables on the same database (the competition's, the alerts)."""
        with self._db.transaction() as db:
            yield db

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read of another owner's tables on the same database."""
        return self._db.query(sql, args)

    # -- the room's facts and the operator's buyer ---------------------------------------------
    def next_buyer(self) -> str:
        rows = self._db.query("SELECT value FROM meta WHERE key = 'next_buyer'")
        return str(rows[0][0]) if rows else ""

    def remember(self, key: str, value: Any) -> None:
        """A fact of the room that outlives its processes (JSON; ``key`` apart from the buyer's)."""
        with self._db.transaction() as db:
            db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                       (f"fact:{key}", dumps(value)))

    def recall(self, key: str) -> Any:
        """What :meth:`remember` kept under ``key`` (None: nothing)."""
        rows = self._db.query("SELECT value FROM meta WHERE key = ?", (f"fact:{key}",))
        return loads(rows[0][0]) if rows else None

    def name_buyer(self, label: str, round_key: int | None = None) -> None:
        """The buyer of the next rounds, and of round ``round_key`` when given (the one running)."""
        with self._db.transaction() as db:
            db.execute("INSERT INTO meta (key, value) VALUES ('next_buyer', ?) "
                       "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (label,))
            if round_key is not None:
                db.execute("UPDATE rounds SET buyer = ? WHERE key = ?", (label, round_key))

    # -- rounds --------------------------------------------------------------------------------
    def begin_round(self, round_id: int | str, durations: Mapping[str, float], budget: float | None, currency: str,
                    phase: LedgerPhase, phase_started_ms: int, phase_deadline_ms: int | None) -> LedgerRound:
        """A new round (the EO's metadata opens one); the rounds still open end as the rules say
        (:func:`~avatar.books.rules.closed_by_new_round`). Its buyer is the one the room started it
        for (its launch), else the operator's next buyer."""
        marks = ", ".join("?" for _ in OPEN_PHASES)
        with self._db.transaction() as db:
            still_open = db.execute(f"SELECT key, phase FROM rounds WHERE phase IN ({marks})", OPEN_PHASES).fetchall()
            for closing in rules.closed_by_new_round(still_open, round_id):
                db.execute("UPDATE rounds SET phase = ?, note = ? WHERE key = ?", (closing.phase, closing.note, closing.key))
            day = day_of(phase_started_ms)
            launch = db.execute("SELECT id, buyer FROM launches WHERE day = ? AND round_label = ? ORDER BY id DESC LIMIT 1",
                                (day, round_label(round_id))).fetchone()
            buyer = launch[1] if launch is not None else _next_buyer_in(db)
            cursor = db.execute(
                "INSERT INTO rounds (round_label, round_id, day, started_ms, buyer, phase, phase_started_ms, phase_deadline_ms, "
                "durations, budget, currency, launch_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (round_label(round_id), dumps(round_id), day, phase_started_ms, buyer, phase, phase_started_ms,
                 phase_deadline_ms, dumps(dict(durations)), budget, currency, launch[0] if launch is not None else None),
            )
            key = int(cursor.lastrowid or 0)
        found = self.round_by_key(key)
        assert found is not None
        return found

    def round_by_key(self, key: int) -> LedgerRound | None:
        rows = self._db.query(f"SELECT {ROUND_COLUMNS} FROM rounds WHERE key = ?", (key,))
        return round_of_row(rows[0]) if rows else None

    def round_for(self, round_id: object) -> LedgerRound | None:
        """The latest round with this id."""
        rows = self._db.query(f"SELECT {ROUND_COLUMNS} FROM rounds WHERE round_label = ? ORDER BY key DESC LIMIT 1",
                              (round_label(round_id),))
        return round_of_row(rows[0]) if rows else None

    def current(self) -> LedgerRound | None:
        """The round the room is in: the latest one, whatever its phase (None before the first)."""
        rows = self._db.query(f"SELECT {ROUND_COLUMNS} FROM rounds ORDER BY key DESC LIMIT 1")
        return round_of_row(rows[0]) if rows else None

    def rounds_on(self, day: str) -> list[LedgerRound]:
        rows = self._db.query(f"SELECT {ROUND_COLUMNS} FROM rounds WHERE day = ? ORDER BY key", (day,))
        return [round_of_row(r) for r in rows]

    def set_phase(self, key: int, phase: LedgerPhase, started_ms: int | None, deadline_ms: int | None,
                  durations: Mapping[str, float] | None = None, note: str | None = None) -> None:
        with self._db.transaction() as db:
            db.execute("UPDATE rounds SET phase = ?, phase_started_ms = ?, phase_deadline_ms = ? WHERE key = ?",
                       (phase, started_ms, deadline_ms, key))
            if durations is not None:
                db.execute("UPDATE rounds SET durations = ? WHERE key = ?", (dumps(dict(durations)), key))
            if note is not None:
                db.execute("UPDATE rounds SET note = ? WHERE key = ?", (note, key))
            if phase in OVER_PHASES:
                _unbooked(db, key)

    def eo_saw(self, key: int, at_ms: int) -> None:
        """The EO answered its books of this round: it knew it (first time kept). A round it
        later says it does not know, it forgot: a fact that must outlive the process that saw it."""
        with self._db.transaction() as db:
            db.execute("UPDATE rounds SET eo_seen_ms = ? WHERE key = ? AND eo_seen_ms IS NULL", (at_ms, key))

    def eo_knew(self, key: int) -> bool:
        """Whether the EO was once seen to know round ``key`` (:meth:`eo_saw`)."""
        rows = self._db.query("SELECT eo_seen_ms FROM rounds WHERE key = ?", (key,))
        return bool(rows and rows[0][0] is not None)

    def note(self, key: int, note: str) -> None:
        with self._db.transaction() as db:
            db.execute("UPDATE rounds SET note = ? WHERE key = ?", (note, key))

    def set_utility(self, key: int, utility: Mapping[str, Any]) -> None:
        with self._db.transaction() as db:
            db.execute("UPDATE rounds SET utility = ? WHERE key = ?", (dumps(dict(utility)), key))

    def set_totals(self, key: int, totals: Mapping[str, Any], ended_ms: int) -> None:
        """The EO's final totals: the round is over and scored; a note of what might have gone
        wrong with it (a controller stopped while a deal waited, a round ended early) no longer
        holds and leaves it."""
        with self._db.transaction() as db:
            db.execute("UPDATE rounds SET totals = ?, phase = 'ended', phase_started_ms = ?, phase_deadline_ms = NULL, note = '' "
                       "WHERE key = ?", (dumps(dict(totals)), ended_ms, key))
            _unbooked(db, key)

    def count_undelivered(self, round_id: object) -> bool:
        """One of the buyer's utterances in this round never reached the EO; False: no such round."""
        with self._db.transaction() as db:
            cursor = db.execute("UPDATE rounds SET undelivered = undelivered + 1 WHERE key = "
                                "(SELECT key FROM rounds WHERE round_label = ? ORDER BY key DESC LIMIT 1)",
                                (round_label(round_id),))
            return cursor.rowcount > 0

    # -- the display's history -----------------------------------------------------------------
    def add_log_line(self, key: int, at_ms: int, speaker: str, text: str, permitted: bool, rationale: str | None) -> None:
        """One line of the round's history as the display shows it (a restarted room shows it again)."""
        with self._db.transaction() as db:
            db.execute("INSERT INTO room_log (round_key, at_ms, speaker, text, permitted, rationale) VALUES (?, ?, ?, ?, ?, ?)",
                       (key, at_ms, speaker, text, int(permitted), rationale))

    def log_lines(self, key: int, kept: int) -> list[dict[str, Any]]:
        """The round's last ``kept`` history lines, oldest first."""
        rows = self._db.query("SELECT at_ms, speaker, text, permitted, rationale FROM room_log WHERE round_key = ? "
                              "ORDER BY id DESC LIMIT ?", (key, kept))
        return [{"at": at, "speaker": speaker, "text": text, "permitted": bool(permitted), "rationale": rationale}
                for at, speaker, text, permitted, rationale in reversed(rows)]

    # -- offers --------------------------------------------------------------------------------
    def set_offer(self, key: int, seller: str, bid: Bid, text: str, at_ms: int) -> None:
        """The seller's current offer (its latest): a bid :func:`~avatar.books.rules.is_standing_offer`
        (one without a price the table refuses)."""
        with self._db.transaction() as db:
            db.execute("INSERT INTO offers (round_key, seller, goods, price, text, at_ms) VALUES (?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (round_key, seller) DO UPDATE SET goods = excluded.goods, price = excluded.price, "
                       "text = excluded.text, at_ms = excluded.at_ms", (key, seller, goods_text(bid.goods), bid.amount, text, at_ms))

    # -- confirmations -------------------------------------------------------------------------
    def add_prompt(self, prompt_id: str, key: int, seller: str, text: str, bid: Bid, received_ms: int) -> Prompt:
        """A seller's Accept the EO asks the buyer to confirm, queued behind those before it."""
        with self._db.transaction() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM prompts WHERE round_key = ?", (key,)).fetchone()[0]
            db.execute("INSERT INTO prompts (id, round_key, seq, seller, text, bid, goods, price, received_ms) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (prompt_id, key, seq, seller, text, dumps(bid.body()), goods_text(bid.goods), bid.amount, received_ms))
        found = self.prompt(prompt_id)
        assert found is not None
        return found

    def prompt(self, prompt_id: str) -> Prompt | None:
        rows = self._db.query(f"SELECT {PROMPT_COLUMNS} FROM prompts WHERE id = ?", (prompt_id,))
        return prompt_of_row(rows[0]) if rows else None

    def ask_prompt(self, prompt_id: str, asked_ms: int, deadline_ms: int) -> None:
        """The buyer is asked now (it is first in the queue) and answers by ``deadline_ms``."""
        with self._db.transaction() as db:
            db.execute("UPDATE prompts SET asked_ms = ?, deadline_ms = ? WHERE id = ?", (asked_ms, deadline_ms, prompt_id))

    def answer_prompt(self, prompt_id: str, accepted: bool, by: str, answered_ms: int) -> None:
        """The answer the EO gets: a yes is ``sent`` (the EO books it next), a no ``declined``."""
        with self._db.transaction() as db:
            db.execute("UPDATE prompts SET accepted = ?, answered_by = ?, answered_ms = ?, outcome = ? "
                       "WHERE id = ? AND outcome = 'waiting'",
                       (int(accepted), by, answered_ms, "sent" if accepted else "declined", prompt_id))

    def cut_waiting_prompts(self) -> list[Prompt]:
        """Prompts a stopped controller left unanswered (its process ended while the EO waited):
        ``cut``, with when the next run found them (their ``answered_ms``)."""
        rows = self._db.query(f"SELECT {PROMPT_COLUMNS} FROM prompts WHERE outcome = 'waiting'")
        if rows:
            with self._db.transaction() as db:
                db.execute("UPDATE prompts SET outcome = 'cut', answered_ms = ? WHERE outcome = 'waiting'", (now_ms(),))
        return [prompt_of_row(r) for r in rows]

    # -- deals ---------------------------------------------------------------------------------
    def book_deal(self, key: int, seller: str, bid: Bid, text: str, message_key: str, booked_ms: int) -> Deal | None:
        """The EO forwarded ``seller``'s Accept: it booked the deal. The prompt it answers
        (:func:`~avatar.books.rules.answered_prompt`) is ``booked``; a difference the EO's totals
        had shown for it already is this deal. None: this very message was booked already."""
        goods, price = goods_text(bid.goods), bid.amount or 0.0
        with self._db.transaction() as db:
            if db.execute("SELECT 1 FROM deals WHERE round_key = ? AND message_key = ?", (key, message_key)).fetchone():
                return None
            sent = [rules.SentYes(*row) for row in db.execute(
                "SELECT id, goods, price FROM prompts WHERE round_key = ? AND seller = ? AND outcome = 'sent' ORDER BY seq",
                (key, seller))]
            prompt_id = rules.answered_prompt(sent, goods, price)
            if prompt_id is not None:
                db.execute("UPDATE prompts SET outcome = 'booked' WHERE id = ?", (prompt_id,))
            reconciled = db.execute("SELECT id FROM deals WHERE round_key = ? AND seller = ? AND source = 'eo-totals' AND "
                                    "goods = ? AND price = ? ORDER BY id LIMIT 1", (key, seller, goods, price)).fetchone()
            if reconciled is not None:
                db.execute("UPDATE deals SET source = 'eo', message_key = ?, prompt_id = ?, text = ? WHERE id = ?",
                           (message_key, prompt_id, text, reconciled[0]))
                deal_id = int(reconciled[0])
            else:
                cursor = db.execute("INSERT INTO deals (round_key, seller, goods, price, text, message_key, prompt_id, booked_ms, "
                                    "source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'eo')",
                                    (key, seller, goods, price, text, message_key, prompt_id, booked_ms))
                deal_id = int(cursor.lastrowid or 0)
            db.execute("DELETE FROM offers WHERE round_key = ? AND seller = ?", (key, seller))
        return deal_of_row(self._db.query(f"SELECT {DEAL_COLUMNS} FROM deals WHERE id = ?", (deal_id,))[0])

    def add_reconciled_deal(self, key: int, seller: str, goods: Mapping[str, int], price: float, booked_ms: int) -> None:
        """What the EO's totals show booked with ``seller`` beyond the deals that reached us."""
        with self._db.transaction() as db:
            db.execute("INSERT INTO deals (round_key, seller, goods, price, booked_ms, source) VALUES (?, ?, ?, ?, ?, 'eo-totals')",
                       (key, seller, goods_text(goods), price, booked_ms))

    def save_allocation(self, key: int, products: Mapping[str, Any], value: float | None, saved_ms: int | None = None) -> None:
        """The allocation the EO took (the last one saved is the one it scores)."""
        with self._db.transaction() as db:
            db.execute("INSERT INTO allocations (round_key, products, value, saved_ms) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (round_key) DO UPDATE SET products = excluded.products, value = excluded.value, "
                       "saved_ms = excluded.saved_ms", (key, dumps(dict(products)), value, saved_ms or now_ms()))

    # -- a round's whole book ------------------------------------------------------------------
    def book(self, key: int) -> RoundBook | None:
        found = self.round_by_key(key)
        return None if found is None else self._book_of(found)

    def current_book(self) -> RoundBook | None:
        current = self.current()
        return None if current is None else self._book_of(current)

    def _book_of(self, found: LedgerRound) -> RoundBook:
        """Everything booked in round ``found``."""
        key = found.key
        with self._db.snapshot() as db:
            offers = [Offer(s, loads(g), p, t, a) for s, g, p, t, a in db.execute(
                "SELECT seller, goods, price, text, at_ms FROM offers WHERE round_key = ? ORDER BY seller", (key,))]
            prompts = [prompt_of_row(r) for r in db.execute(
                f"SELECT {PROMPT_COLUMNS} FROM prompts WHERE round_key = ? ORDER BY seq", (key,))]
            deals = [deal_of_row(r) for r in db.execute(f"SELECT {DEAL_COLUMNS} FROM deals WHERE round_key = ? ORDER BY id", (key,))]
            saved = db.execute("SELECT products, value, saved_ms FROM allocations WHERE round_key = ?", (key,)).fetchone()
        allocation = SavedAllocation(loads(saved[0]), saved[1], saved[2]) if saved else None
        return RoundBook(found, offers, prompts, deals, allocation)


def read_ledger(path: Path) -> RoomLedger | None:
    """The ledger at ``path`` for reading from another process (the round recorder: it loads
    none of the tables' owners); None when there is none yet."""
    database = RoomDatabase.reader(path, "rounds")
    return None if database is None else RoomLedger(database)
