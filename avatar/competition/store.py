"""The competition's rows in the room's ledger: the rounds the room starts, the schedule, the
utilities drawn for it and the agent programs of each round.

They share the ledger's database (:class:`~avatar.books.database.RoomDatabase`, SQLite in WAL
mode, each change one transaction) because they are facts of the same day: a round the room
started (a *launch*) is the EO's round of that id once the EO's metadata opens it there, and a
restart of the Avatar Controller, or of ``run``, continues the schedule, the standings and the
agents it left running from these rows. Only the store is here; what a row means for the next
round is :mod:`avatar.competition.control`'s business.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from avatar.books.database import Tables
from avatar.books.ledger import RoomLedger
from avatar.books.records import LedgerRound, day_of, dumps, round_label
from avatar.competition.schedule import Seat, Slot

ROUND_ID_PREFIX: Final = "r"
"""The room's round ids are ``r1``, ``r2``, ... through the day (the current EO's own spelling)."""
NUMBERED_ROUND: Final = re.compile(rf"{re.escape(ROUND_ID_PREFIX)}([1-9][0-9]*)")
HUMAN_SERVICES_FACT: Final = "human_services"
"""The ledger's fact of the names the EO calls the room by (the ``name`` of its ``/setUtility`` to
the human side): ending a round on the platform's EO names them again."""

LaunchState = Literal["starting", "started", "failed", "ended_early"]
"""``starting``: the EO is being asked; ``started``: it took the round; ``failed``: it refused (the
id stays used); ``ended_early``: the operator ended it on the platform's EO, which sends the
totals at the round's own end."""
SlotState = Literal["planned", "playing", "played", "lost", "dropped"]
"""``playing``: its round runs; ``played``: it has the EO's totals; ``lost``: it ended without
them (put back at the end of the schedule once); ``dropped``: the roster changed before it ran."""
RunState = Literal["running", "stopped", "exited"]
"""An agent program the room started: ``stopped`` by the room after its round, ``exited`` on its own."""

COMPETITION_TABLES: Final = Tables(
    ddl="""
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
""",
)
"""The competition's schedule, the utilities drawn for it and the agent programs of each round
(the rounds the room starts, ``launches``, are the books' table: a round of the books is opened
for its launch's buyer; this store writes them)."""


def roster_key(agents: Sequence[str], buyers: Sequence[str]) -> str:
    """The roster a schedule was planned for: another roster is another competition."""
    return hashlib.sha256(dumps({"agents": list(agents), "buyers": list(buyers)}).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SeatPlan:
    """Who plays an avatar in a round the room starts."""

    avatar: str
    agent: str
    url: str
    """Where the EO reaches it (for an agent started per round: the port it was given)."""
    utility_key: str = ""
    """The schedule's key of its utility (empty outside a tournament)."""

    def view(self) -> dict[str, str]:
        return {"avatar": self.avatar, "agent": self.agent, "url": self.url, "utility_key": self.utility_key}

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> SeatPlan:
        return cls(str(data.get("avatar", "")), str(data.get("agent", "")), str(data.get("url", "")),
                   str(data.get("utility_key", "")))


@dataclass(frozen=True)
class Launch:
    """A round the room started on the EO."""

    id: int
    round_id: int | str
    day: str
    at_ms: int
    buyer: str
    slot_id: int | None
    seats: tuple[SeatPlan, ...]
    utilities: dict[str, Any]
    """What each participant was given: ``{"Human": ..., <avatar>: ...}``."""
    durations: dict[str, float]
    eo: str
    state: LaunchState
    detail: str
    ends_ms: int | None
    """When the EO sends the totals of a round ended early (its own end); None otherwise."""

    def agent_of(self, avatar: str) -> str:
        return next((s.agent for s in self.seats if s.avatar == avatar), avatar)


@dataclass(frozen=True)
class ScheduledSlot:
    """A stored round of the schedule."""

    id: int
    cycle: int
    slot: Slot
    state: SlotState
    put_back_from: int | None


@dataclass(frozen=True)
class AgentRun:
    """An agent program the room started for a round."""

    id: int
    launch_id: int
    agent: str
    avatar: str
    pid: int | None
    port: int | None
    log: str
    started_ms: int
    ended_ms: int | None
    outcome: str
    state: RunState


_LAUNCH_COLUMNS: Final = "id, round_id, day, at_ms, buyer, slot_id, seats, utilities, durations, eo, state, detail, ends_ms"
_SLOT_COLUMNS: Final = "id, cycle, buyer, seats, buyer_utility, twin_set, state, put_back_from"
_RUN_COLUMNS: Final = "id, launch_id, agent, avatar, pid, port, log, started_ms, ended_ms, outcome, state"


def _launch(row: tuple[Any, ...]) -> Launch:
    lid, round_id, day, at, buyer, slot_id, seats, utilities, durations, eo, state, detail, ends = row
    return Launch(lid, json.loads(round_id), day, at, buyer, slot_id, tuple(SeatPlan.of(s) for s in json.loads(seats)),
                  json.loads(utilities), json.loads(durations), eo, state, detail, ends)


def _slot(row: tuple[Any, ...]) -> ScheduledSlot:
    sid, cycle, buyer, seats, buyer_utility, twin_set, state, put_back_from = row
    slot = Slot(buyer, tuple(Seat(s["agent"], s["utility"]) for s in json.loads(seats)), buyer_utility, twin_set)
    return ScheduledSlot(sid, cycle, slot, state, put_back_from)


def _run(row: tuple[Any, ...]) -> AgentRun:
    return AgentRun(*row)


class CompetitionStore:
    """The competition's rows of one room's ledger (thread-safe: the ledger is)."""

    def __init__(self, ledger: RoomLedger) -> None:
        self.ledger = ledger

    # -- round ids -----------------------------------------------------------------------------
    def free_round_id(self, day: str) -> str:
        """One past the highest ``rN`` the day has used, in the EO's rounds or the room's starts
        (``r1`` on a fresh day): never one used before, whatever restarted meanwhile."""
        used = [r[0] for r in self.ledger.query("SELECT round_label FROM rounds WHERE day = ? UNION "
                                                "SELECT round_label FROM launches WHERE day = ?", (day, day))]
        numbers = [int(found.group(1)) for label in used if (found := NUMBERED_ROUND.fullmatch(str(label)))]
        return f"{ROUND_ID_PREFIX}{max(numbers, default=0) + 1}"

    # -- launches --------------------------------------------------------------------------------
    def add_launch(self, round_id: int | str, at_ms: int, buyer: str, slot_id: int | None, seats: Iterable[SeatPlan],
                   utilities: Mapping[str, Any], durations: Mapping[str, float], eo: str) -> Launch:
        """A round about to be started on the EO (``starting``); its id is used from now on."""
        with self.ledger.transaction() as db:
            cursor = db.execute(
                "INSERT INTO launches (round_id, round_label, day, at_ms, buyer, slot_id, seats, utilities, durations, eo, state) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'starting')",
                (dumps(round_id), round_label(round_id), day_of(at_ms), at_ms, buyer, slot_id, dumps([s.view() for s in seats]),
                 dumps(dict(utilities)), dumps(dict(durations)), eo))
            launch_id = int(cursor.lastrowid or 0)
        found = self.launch(launch_id)
        assert found is not None
        return found

    def set_launch(self, launch_id: int, state: LaunchState, detail: str = "", ends_ms: int | None = None) -> None:
        with self.ledger.transaction() as db:
            db.execute("UPDATE launches SET state = ?, detail = ?, ends_ms = COALESCE(?, ends_ms) WHERE id = ?",
                       (state, detail, ends_ms, launch_id))

    def seats_of(self, launch_id: int, seats: Iterable[SeatPlan]) -> None:
        """Where each agent really listens, once the programs started per round are up."""
        with self.ledger.transaction() as db:
            db.execute("UPDATE launches SET seats = ? WHERE id = ?", (dumps([s.view() for s in seats]), launch_id))

    def forget_launch(self, launch_id: int) -> None:
        """A start that never reached the EO: gone, its round id free again."""
        with self.ledger.transaction() as db:
            db.execute("DELETE FROM agent_runs WHERE launch_id = ?", (launch_id,))
            db.execute("DELETE FROM launches WHERE id = ?", (launch_id,))

    def launch(self, launch_id: int) -> Launch | None:
        rows = self.ledger.query(f"SELECT {_LAUNCH_COLUMNS} FROM launches WHERE id = ?", (launch_id,))
        return _launch(rows[0]) if rows else None

    def launch_of(self, rnd: LedgerRound) -> Launch | None:
        """The room's start of an EO round (None: the room did not start it)."""
        rows = self.ledger.query(f"SELECT {_LAUNCH_COLUMNS} FROM launches WHERE id = (SELECT launch_id FROM rounds WHERE key = ?)",
                                 (rnd.key,))
        return _launch(rows[0]) if rows else None

    def round_of(self, launch: Launch) -> LedgerRound | None:
        """The EO's round a start became (None: the EO's metadata has not come)."""
        rows = self.ledger.query("SELECT key FROM rounds WHERE launch_id = ? ORDER BY key DESC LIMIT 1", (launch.id,))
        return self.ledger.round_by_key(rows[0][0]) if rows else None

    # -- the schedule ------------------------------------------------------------------------------
    def add_cycle(self, roster: str, cycle: int, slots: Iterable[Slot]) -> None:
        with self.ledger.transaction() as db:
            db.executemany("INSERT INTO schedule (roster, cycle, buyer, seats, buyer_utility, twin_set) VALUES (?, ?, ?, ?, ?, ?)",
                           [(roster, cycle, s.buyer, dumps([{"agent": x.agent, "utility": x.utility} for x in s.seats]),
                             s.buyer_utility, s.twin_set) for s in slots])

    def slots(self, roster: str, states: Sequence[SlotState] | None = None) -> list[ScheduledSlot]:
        """The roster's schedule in the order it is played (``states``: only those)."""
        if states is None:
            rows = self.ledger.query(f"SELECT {_SLOT_COLUMNS} FROM schedule WHERE roster = ? ORDER BY id", (roster,))
        else:
            marks = ", ".join("?" for _ in states)
            rows = self.ledger.query(f"SELECT {_SLOT_COLUMNS} FROM schedule WHERE roster = ? AND state IN ({marks}) ORDER BY id",
                                     (roster, *states))
        return [_slot(r) for r in rows]

    def slot(self, slot_id: int) -> ScheduledSlot | None:
        rows = self.ledger.query(f"SELECT {_SLOT_COLUMNS} FROM schedule WHERE id = ?", (slot_id,))
        return _slot(rows[0]) if rows else None

    def last_cycle(self, roster: str) -> int:
        rows = self.ledger.query("SELECT MAX(cycle) FROM schedule WHERE roster = ?", (roster,))
        return int(rows[0][0] or 0)

    def set_slot(self, slot_id: int, state: SlotState) -> None:
        with self.ledger.transaction() as db:
            db.execute("UPDATE schedule SET state = ? WHERE id = ?", (state, slot_id))

    def put_back(self, lost: ScheduledSlot, roster: str) -> int | None:
        """``lost`` once more, at the end of the schedule: once only (a slot that is itself a
        put-back is not put back again). Returns the new slot's id, or None."""
        with self.ledger.transaction() as db:
            db.execute("UPDATE schedule SET state = 'lost' WHERE id = ?", (lost.id,))
            if lost.put_back_from is not None:
                return None
            if db.execute("SELECT 1 FROM schedule WHERE put_back_from = ?", (lost.id,)).fetchone():
                return None
            s = lost.slot
            cursor = db.execute("INSERT INTO schedule (roster, cycle, buyer, seats, buyer_utility, twin_set, put_back_from) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                                (roster, lost.cycle, s.buyer, dumps([{"agent": x.agent, "utility": x.utility} for x in s.seats]),
                                 s.buyer_utility, s.twin_set, lost.id))
            return int(cursor.lastrowid or 0)

    def drop_planned(self, keep_roster: str) -> int:
        """The roster changed: every planned round of another roster is dropped; how many."""
        with self.ledger.transaction() as db:
            return db.execute("UPDATE schedule SET state = 'dropped' WHERE roster != ? AND state = 'planned'",
                              (keep_roster,)).rowcount

    def launches_of_slots(self, roster: str, states: Sequence[SlotState] | None = None) -> list[tuple[ScheduledSlot, Launch]]:
        """Every scheduled round that was started (``states``: of slots in these states only), with
        its start, in the order they started."""
        where = f" AND s.state IN ({', '.join('?' for _ in states)})" if states else ""
        rows = self.ledger.query(
            f"SELECT {', '.join('l.' + c.strip() for c in _LAUNCH_COLUMNS.split(','))}, s.id FROM launches l JOIN schedule s "
            f"ON l.slot_id = s.id WHERE s.roster = ?{where} ORDER BY l.id", (roster, *(states or ())))
        found = []
        for row in rows:
            slot = self.slot(int(row[-1]))
            if slot is not None:
                found.append((slot, _launch(row[:-1])))
        return found

    # -- utilities ---------------------------------------------------------------------------------
    def utility(self, key: str) -> dict[str, Any] | None:
        rows = self.ledger.query("SELECT utility FROM utilities WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def keep_utility(self, key: str, role: str, utility: Mapping[str, Any], source: str, drawn_ms: int) -> dict[str, Any]:
        """The utility drawn for ``key``; a key drawn already keeps its first draw (returned)."""
        with self.ledger.transaction() as db:
            db.execute("INSERT OR IGNORE INTO utilities (key, role, utility, source, drawn_ms) VALUES (?, ?, ?, ?, ?)",
                       (key, role, dumps(dict(utility)), source, drawn_ms))
            row = db.execute("SELECT utility FROM utilities WHERE key = ?", (key,)).fetchone()
        return dict(json.loads(row[0]))

    # -- agent programs ----------------------------------------------------------------------------
    def add_agent_run(self, launch_id: int, agent: str, avatar: str, pid: int | None, port: int | None, log: str,
                      started_ms: int) -> int:
        with self.ledger.transaction() as db:
            cursor = db.execute("INSERT INTO agent_runs (launch_id, agent, avatar, pid, port, log, started_ms, state) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?, 'running')", (launch_id, agent, avatar, pid, port, log, started_ms))
            return int(cursor.lastrowid or 0)

    def end_agent_run(self, run_id: int, state: RunState, outcome: str, ended_ms: int) -> None:
        with self.ledger.transaction() as db:
            db.execute("UPDATE agent_runs SET state = ?, outcome = ?, ended_ms = ? WHERE id = ? AND state = 'running'",
                       (state, outcome, ended_ms, run_id))

    def running_agents(self) -> list[AgentRun]:
        return [_run(r) for r in self.ledger.query(f"SELECT {_RUN_COLUMNS} FROM agent_runs WHERE state = 'running' ORDER BY id")]

    def agent_runs(self, launch_id: int) -> list[AgentRun]:
        return [_run(r) for r in self.ledger.query(f"SELECT {_RUN_COLUMNS} FROM agent_runs WHERE launch_id = ? ORDER BY id",
                                                   (launch_id,))]

    # -- what standings are made of --------------------------------------------------------------
    def finished_rounds(self, day: str | None = None, roster: str | None = None) -> list[tuple[LedgerRound, Launch | None]]:
        """The rounds that are over (totals, or lost), with the room's start of each: of a roster's
        schedule when ``roster`` is given, else of ``day``."""
        if roster is not None:
            keys = self.ledger.query("SELECT r.key FROM rounds r JOIN launches l ON r.launch_id = l.id JOIN schedule s "
                                     "ON l.slot_id = s.id WHERE s.roster = ? AND r.phase IN ('ended', 'lost') ORDER BY r.key",
                                     (roster,))
        else:
            keys = self.ledger.query("SELECT key FROM rounds WHERE day = ? AND phase IN ('ended', 'lost') ORDER BY key", (day or "",))
        found = []
        for (key,) in keys:
            rnd = self.ledger.round_by_key(key)
            if rnd is not None:
                found.append((rnd, self.launch_of(rnd)))
        return found
