"""Every round recorded as a session: ``data_dir/sessions/<date>/<round>-<buyer>/``.

A competition day is many rounds; each should be ready for ``humaine-env label`` and ``eval``
without anyone remembering to start ``humaine-env record``. The recorder is a worker of the
suite (``run`` starts it): it follows the retained round state the Avatar Controller publishes
(which carries the buyer the operator named on the console), opens a session folder when a
round's negotiation starts, records the environment's bus traffic into it in the session
format (:mod:`sessions.format`: utterances, transcripts, addressee changes, head poses,
outcomes, the EO's verdicts), and completes it (``session.json`` last) ``close_after_s`` after
the negotiation ends, when the last utterance's outcome and verdicts are in. A buyer the operator
names while the round runs renames the folder to theirs when it completes. A round is recorded in
one folder whatever restarts: a recorder started again while the round goes on (``run`` restarted
it, or the whole suite, on the platform's EO that kept the round) finds the round's folder by its
mark (:data:`ROUND_MARK`: the environment, the round and when its negotiation began) and goes on
writing there. The session's summary
of the round (the deals the EO booked, the money paid, the allocation saved, the EO's totals) is
read from the room's ledger (:mod:`avatar.books.ledger`), never counted from the bus, and
written again when the EO's totals arrive after the post-round.

What a session holds is what the bus carried: with typed input and no camera, the buyer's
lines and what became of them (no audio, no video: ``label`` drafts its truth from the lines,
``eval`` refuses it in one line, having nothing to replay).

The disk is the recording's, not the round's: a full or read-only disk is one line and an
``error`` status; the events go on being kept in memory and are written when the disk takes
them again (:class:`~transcript.session_log.SessionLog`), and a ``session.json`` that could not
be written is tried again every :data:`RETRY_S` until it is.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from avatar.books.ledger import LEDGER_FILE, RoomLedger, read_ledger
from sessions.format import EVENTS_FILE, SESSION_FILE, SessionFormatError, SessionInfo, write_info
from sessions.settings import SessionsSettings
from transcript.session_log import RETRY_S, SessionLog
from workers.camera.settings import CameraSettings
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.logs import NOTICE
from workers.runtime.messages import Envelope, RoundState, now_ms
from workers.runtime.worker import Worker
from workers.runtime.worker_ids import RECORDER

UNNAMED = "unnamed"
"""The folder name's buyer part when the operator named nobody."""
NAME_CHARS = 48
"""Longest round or buyer part of a folder name (the buyer's label may be 80 characters)."""
TICK_S = 0.2
"""How often the worker looks at what is due: a session to complete, a file to write again."""
ROUND_MARK = ".round.json"
"""In each session folder: which round it records (environment, round id, negotiation start), how
a restarted recorder finds it again. A second run the same day numbering its rounds from r1 again
has other starts, and other folders."""
RECORDED_KIND = "mqtt"
"""``kind`` of a bus message in ``events.jsonl`` (as ``humaine-env record`` writes them)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def name_part(text: str) -> str:
    """``text`` as part of a folder name on any file system: ASCII letters, digits, ``.``,
    ``_`` and ``-`` (accents dropped, "Zoë" is "Zoe"; anything else a ``-``), bounded."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _UNSAFE.sub("-", ascii_text).strip("-.")[:NAME_CHARS].strip("-.")


def books_summary(ledger: RoomLedger | None, round_id: object) -> dict[str, Any] | None:
    """The round as the ledger has it (the EO's books), for ``session.json``; None without one."""
    found = ledger.round_for(round_id) if ledger is not None else None
    book = ledger.book(found.key) if ledger is not None and found is not None else None
    if book is None:
        return None
    return {
        "state": book.round.phase,
        "budget": book.round.budget,
        "deals": [{"seller": d.seller, "goods": d.goods, "price": d.price, "source": d.source} for d in book.deals],
        "paid": book.spent,
        "allocation": None if book.allocation is None else {"products": book.allocation.products, "value": book.allocation.value},
        "totals": book.round.totals,
        "note": book.round.note,
    }


def day_folder(root: Path, started_ms: int) -> Path:
    """``root/<local date>``: the folder of the day a round started on."""
    return root / datetime.datetime.fromtimestamp(started_ms / 1000).date().isoformat()


def round_part(round_id: object) -> str:
    """The round's part of its folder's name (``r2-...``)."""
    return name_part(str(round_id)) or "round"


def round_folder(root: Path, started_ms: int, round_id: object, buyer: str) -> Path:
    """A new folder for a round: ``root/<local date>/<round>-<buyer>``, with ``-2``, ``-3`` ...
    when one is there already (a second ``run`` on the same day numbers its rounds from r1 again)."""
    day = day_folder(root, started_ms)
    base = f"{round_part(round_id)}-{name_part(buyer) or UNNAMED}"
    folder, n = day / base, 2
    while folder.exists():
        folder, n = day / f"{base}-{n}", n + 1
    return folder


def _recorded_kinds(events: Path) -> list[str]:
    """The message type of each event an earlier run wrote (a torn last line is skipped)."""
    kinds: list[str] = []
    try:
        with events.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    kinds.append(str(json.loads(line)["payload"].get("type", "?")))
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue
    except OSError:
        pass
    return kinds


@dataclass
class RoundSession:
    """One round being recorded (or completed, waiting for the disk)."""

    round_id: int | str
    folder: Path
    info: SessionInfo
    log: SessionLog
    close_at: float | None = None
    """Monotonic time at which it is completed (set when the negotiation ended)."""
    events: int = 0
    kinds: dict[str, int] = field(default_factory=dict)


class RoundRecorder(Worker):
    """Records each round's negotiation as a session folder (see the module docstring)."""

    name: ClassVar[str] = RECORDER

    def __init__(self, config: Config, worker_id: str | None = None, bus: Bus | None = None) -> None:
        super().__init__(config, worker_id, bus)
        self.settings = config.section(SessionsSettings)
        self.root = config.core.data_dir / self.settings.folder
        self._camera = config.section(CameraSettings)
        self._lock = threading.Lock()
        self.current: RoundSession | None = None
        self._unfinished: list[RoundSession] = []
        """Completed rounds whose events or ``session.json`` the disk has not taken yet."""
        self._retry_at = 0.0
        self._last_attention: dict[str, Any] | None = None
        """The retained attention, written first into a new session (the buyer's gaze when it starts)."""
        self.recorded: list[Path] = []
        self.disk_error = ""
        self._ledger_path = config.core.data_dir / LEDGER_FILE
        self._ledger: RoomLedger | None = None
        self._completed: dict[str, Path] = {}
        """The last round completed: its id and folder (its summary gets the EO's totals when
        they come, after the post-round)."""
        self.bus.subscribe(self.topics.everything(), Envelope, self._on_message)

    # -- the bus (MQTT network thread) ---------------------------------------------------------
    def _on_message(self, topic: str, message: Envelope) -> None:
        record = {"t_ms": now_ms(), "kind": RECORDED_KIND, "topic": topic, "payload": message.model_dump(mode="json")}
        if self.topics.attention().matches(topic):
            self._last_attention = record
        state = self._round_state(topic, message)
        with self._lock:
            if state is not None:
                self._follow(state)
            if self.current is not None:
                self._write(self.current, record)

    def _round_state(self, topic: str, message: Envelope) -> RoundState | None:
        if not self.topics.round_state().matches(topic):
            return None
        try:
            return RoundState.model_validate(message.model_dump())
        except ValidationError:
            return None  # the bus's own checks said it already; garbage opens no session

    def _follow(self, state: RoundState) -> None:
        """Open a session when a negotiation starts; set the one recording to complete when
        its negotiation is over; the EO's totals of a round recorded go into its summary
        (holds the lock)."""
        done = self._completed.get(str(state.round_id))
        if state.phase == "ended" and done is not None and (self.current is None or self.current.round_id != state.round_id):
            self._summarise_again(done, state.round_id)
        current = self.current
        if current is not None and state.round_id == current.round_id:
            if state.phase == "round":
                current.close_at = None
                current.info.notes["buyer"] = state.buyer  # named on the console while it runs
            elif current.close_at is None:
                current.close_at = time.monotonic() + self.settings.close_after_s
            return
        if state.phase != "round" or state.round_id is None:
            if current is not None and current.close_at is None:
                current.close_at = time.monotonic() + self.settings.close_after_s
            return
        if current is not None:
            self._complete(current)  # a new round began before the last one's linger ended
        self.current = self._open(state)

    def _new_info(self, state: RoundState, started: int) -> SessionInfo:
        """The session's description as it opens (completed with its length and books at the end)."""
        return SessionInfo(
            environment_uuid=self.config.core.environment_uuid, start_ms=started, duration_ms=0,
            avatars=list(self.config.core.avatars),
            targets={n: {"yaw": t.yaw, "pitch": t.pitch} for n, t in self._camera.targets.items()},
            camera=None, audio=False, source="recorded",
            notes={"round_id": state.round_id, "buyer": state.buyer, "recorder": self.worker_id,
                   "durations": dict(state.durations)},
        )

    def _mark(self, state: RoundState, started: int) -> dict[str, Any]:
        return {"environment_uuid": self.config.core.environment_uuid, "round_id": state.round_id, "started_ms": started}

    def _recorded_before(self, state: RoundState, started: int) -> Path | None:
        """The folder of this very round, opened by an earlier run of the recorder; None if new."""
        mark = self._mark(state, started)
        for folder in sorted(day_folder(self.root, started).glob(f"{round_part(state.round_id)}-*")):
            try:
                if json.loads((folder / ROUND_MARK).read_text(encoding="utf-8")) == mark:
                    return folder
            except (OSError, ValueError):
                continue
        return None

    def _open(self, state: RoundState) -> RoundSession:
        assert state.round_id is not None
        if state.phase_started is not None:
            folder = self._recorded_before(state, state.phase_started)
            if folder is not None:
                return self._reopen(state, state.round_id, folder)
        started = state.phase_started or now_ms()
        folder = round_folder(self.root, started, state.round_id, state.buyer)
        info = self._new_info(state, started)
        log = SessionLog(folder / EVENTS_FILE, on_error=self._log_failed, on_recovered=self._disk_recovered)
        session = RoundSession(state.round_id, folder, info, log)
        self.log.log(NOTICE, "round %s%s: recording into %s", state.round_id,
                     f" (buyer {state.buyer})" if state.buyer else "", folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / ROUND_MARK).write_text(json.dumps(self._mark(state, started)) + "\n", encoding="utf-8")
        except OSError as exc:  # the events are kept by the log; only a restart's finding the folder is lost
            self.log.debug("round %s: its mark cannot be written (%s)", state.round_id, exc)
        if self._last_attention is not None:
            self._write(session, {**self._last_attention, "t_ms": started})
        return session

    def _reopen(self, state: RoundState, round_id: int | str, folder: Path) -> RoundSession:
        """Go on recording round ``round_id`` (``state``'s) an earlier run of the recorder began,
        in its folder: the events are appended, the summary counts them all."""
        log = SessionLog(folder / EVENTS_FILE, on_error=self._log_failed, on_recovered=self._disk_recovered)
        try:  # stopped cleanly: it completed the session, whose summary counts its events
            info = SessionInfo.from_json(json.loads((folder / SESSION_FILE).read_text(encoding="utf-8")), folder)
            kinds = {str(k): int(n) for k, n in dict(info.notes.get("events") or {}).items()}
        except (OSError, ValueError, TypeError, SessionFormatError):  # killed: the events are counted (once, at its restart)
            info = self._new_info(state, int(state.phase_started or now_ms()))
            kinds = {}
            for kind in _recorded_kinds(folder / EVENTS_FILE):
                kinds[kind] = kinds.get(kind, 0) + 1
        info.notes["buyer"] = state.buyer
        session = RoundSession(round_id, folder, info, log, events=sum(kinds.values()), kinds=kinds)
        self.log.log(NOTICE, "round %s: recording goes on in %s (%d events before)", state.round_id, folder, session.events)
        return session

    def _write(self, session: RoundSession, record: dict[str, Any]) -> None:
        session.log.write_record(record)
        session.events += 1
        kind = str(record["payload"].get("type", "?"))
        session.kinds[kind] = session.kinds.get(kind, 0) + 1

    # -- completing ----------------------------------------------------------------------------
    def _complete(self, session: RoundSession) -> None:
        """The round is over: ``session.json`` once every event is on disk (holds the lock)."""
        if self.current is session:
            self.current = None
        session.info.duration_ms = max(0, now_ms() - session.info.start_ms)
        session.info.notes["events"] = dict(sorted(session.kinds.items()))
        if not self._finish(session):
            self._unfinished.append(session)

    def _finish(self, session: RoundSession) -> bool:
        """Close the events and write ``session.json``; False while the disk does not take them."""
        if session.log.error:
            return False  # its events are kept in memory and written by the log's own retries
        session.log.close()
        self._file_under_buyer(session)
        session.info.notes["books"] = books_summary(self._books(), session.round_id)
        try:
            write_info(session.folder, session.info)
        except OSError as exc:
            self._disk_failed(f"session {session.folder}: {SESSION_FILE} cannot be written: {exc.strerror or exc}; "
                              f"tried again every {RETRY_S:g} s")
            return False
        self.recorded.append(session.folder)
        self._completed = {str(session.round_id): session.folder}
        self.log.log(NOTICE, "round %s recorded: %s (%d events, %.0f s)", session.round_id, session.folder,
                     session.events, session.info.duration_ms / 1000)
        return True

    def _books(self) -> RoomLedger | None:
        """The room's ledger, read-only (the Avatar Controller writes it); None until it exists."""
        if self._ledger is None:
            self._ledger = read_ledger(self._ledger_path)
        return self._ledger

    def _file_under_buyer(self, session: RoundSession) -> None:
        """The buyer named while the round ran (or none) gets the folder: ``r2-Ada``, not ``r2-unnamed``."""
        buyer = str(session.info.notes.get("buyer") or "")
        wanted = f"{round_part(session.round_id)}-{name_part(buyer) or UNNAMED}"
        if session.folder.name == wanted or session.folder.name.startswith(wanted + "-"):
            return
        target = round_folder(self.root, session.info.start_ms, session.round_id, buyer)
        try:
            os.rename(session.folder, target)
        except OSError as exc:
            self.log.warning("round %s: its session stays in %s (%s)", session.round_id, session.folder, exc.strerror or exc)
            return
        session.folder = target

    def _summarise_again(self, folder: Path, round_id: object) -> None:
        """The EO's totals arrived after the session was completed: its summary again, with them."""
        try:
            info = SessionInfo.from_json(json.loads((folder / SESSION_FILE).read_text(encoding="utf-8")), folder)
            info.notes["books"] = books_summary(self._books(), round_id)
            write_info(folder, info)
        except (OSError, ValueError, SessionFormatError) as exc:
            self.log.warning("round %s: the EO's totals could not be added to %s (%s)", round_id, folder, exc)

    def _due(self) -> None:
        """What the clock makes due: a negotiation's linger ended, a retry of the disk."""
        with self._lock:
            current = self.current
            if current is not None and current.close_at is not None and time.monotonic() >= current.close_at:
                self._complete(current)
            if self._unfinished and time.monotonic() >= self._retry_at:
                self._retry_at = time.monotonic() + RETRY_S
                self._unfinished = [s for s in self._unfinished if not self._finish(s)]
                if not self._unfinished and self.disk_error:
                    self._disk_recovered()

    # -- the disk ------------------------------------------------------------------------------
    def _disk_failed(self, detail: str) -> None:
        """``session.json`` could not be written: one line, and the status says it."""
        if detail != self.disk_error:
            self.log.error("%s", detail)
        self._log_failed(detail)

    def _log_failed(self, detail: str) -> None:
        """The events could not be written (the log has said so in its own line)."""
        if detail != self.disk_error:
            self.disk_error = detail
            self.bus.set_status("error", detail)

    def _disk_recovered(self) -> None:
        if self._unfinished or (self.current is not None and self.current.log.error):
            return
        if self.disk_error:
            self.log.log(NOTICE, "the rounds are recorded again")
        self.disk_error = ""
        self.report_ok(self._describe())

    # -- the worker ----------------------------------------------------------------------------
    def _describe(self) -> str:
        return f"recording rounds into {self.root}"

    def run(self, stop: threading.Event) -> None:
        self.report_ok(self._describe())
        try:
            while not stop.wait(TICK_S):
                self._due()
        finally:
            with self._lock:
                if self.current is not None:
                    self._complete(self.current)
                for session in self._unfinished:
                    session.log.close()
                    self.log.error("session %s could not be completed before the recorder stopped (%s)",
                                   session.folder, self.disk_error or "the disk did not take it")

    def health(self) -> dict[str, Any]:
        figures = super().health()
        current = self.current
        figures.update(recording=str(current.folder) if current is not None else None, rounds_recorded=len(self.recorded),
                       unfinished=len(self._unfinished))
        return figures
