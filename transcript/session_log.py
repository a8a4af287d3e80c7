"""The session log: one JSON object per line, flushed and fsync'd line by line.

Everything the worker heard and did - final transcripts, attention changes, round states,
outgoing messages and their delivery outcomes - so a session can be replayed and evaluated
later, and so a crash (even ``kill -9``) loses at most the line being written.

The log is a record, not the job: a disk that is full or read-only stops the writing (one clear
line, and ``on_error`` so the worker can publish an ``error`` status) and never the worker,
which goes on relaying. It does not stop for good: the records that could not be written are
kept in memory (up to :data:`PENDING_MAX_BYTES`; beyond that they are counted), the file is
tried again every :data:`RETRY_S`, and once it takes them they are written in their order, one
line says so and ``on_recovered`` lets the worker say ``online`` again. A venue whose disk
filled up and was cleaned mid-session keeps a complete log, with the gap named when memory
could not hold it.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from workers.runtime.logs import NOTICE
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)

ErrorReporter = Callable[[str], None]
RecoveryReporter = Callable[[], None]

RETRY_S = 2.0
"""How often a log that cannot be written is tried again (a freed disk is written within this)."""
PENDING_MAX_BYTES = 8 * 1024 * 1024
"""Records kept in memory while the file cannot take them; later ones are only counted (and the
count is written as a ``log_gap`` record once the file takes records again)."""
ENOSPC = 28


TAIL_CHUNK: Final = 65536


def trim_torn_tail(path: Path) -> int:
    """Cut a last line that has no end (its writer was killed in the middle of it) off the file,
    so that what is appended next starts a line and every line of it reads; returns the bytes cut."""
    with path.open("r+b") as file:
        size = end = file.seek(0, os.SEEK_END)
        while end > 0:
            start = max(0, end - TAIL_CHUNK)
            file.seek(start)
            chunk = file.read(end - start)
            if end == size and chunk.endswith(b"\n"):
                return 0
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                file.truncate(keep)
                return size - keep
            end = start
        file.truncate(0)
        return size


class SessionLog:
    """Append-only JSONL file; thread-safe; never raises on a disk error (see the module)."""

    def __init__(self, path: Path, on_error: ErrorReporter | None = None, on_recovered: RecoveryReporter | None = None,
                 retry_s: float = RETRY_S) -> None:
        self.path = path
        self._on_error = on_error
        self._on_recovered = on_recovered
        self.retry_s = retry_s
        self._lock = threading.Lock()
        self._fd = -1
        self.lines = 0
        self.error = ""
        """Why the log is not being written right now (empty while it works)."""
        self.lost = 0
        """Records that could not be written nor kept (memory bound reached while failing)."""
        self._pending: collections.deque[bytes] = collections.deque()
        self._pending_bytes = 0
        self._torn = False
        """A short write left part of a line in the file: the next write starts a new line."""
        self._closed = threading.Event()
        self._retrying: threading.Thread | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            cut = trim_torn_tail(path) if path.is_file() else 0  # a file whose earlier writer was killed mid-line
            if cut:
                log.warning("session log %s: its last line was cut short (%d bytes, its writer stopped mid-line): "
                            "dropped before writing on", path, cut)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            self._failed(exc)

    @classmethod
    def create(cls, directory: Path, prefix: str, on_error: ErrorReporter | None = None,
               on_recovered: RecoveryReporter | None = None) -> SessionLog:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        return cls(directory / f"{prefix}-{stamp}-{os.getpid()}.jsonl", on_error, on_recovered)

    def write(self, kind: str, **fields: Any) -> None:
        self.write_record({"t": now_ms(), "kind": kind, **fields})

    def write_record(self, record: dict[str, Any]) -> None:
        """One record as it is (a caller with its own record shape: a recorded session's
        ``events.jsonl``), with the same guarantees as :meth:`write`."""
        kind = record.get("kind")
        try:
            # ensure_ascii: whatever a string holds (a lone surrogate included) is written as an escape
            line = (json.dumps(record, default=str, separators=(",", ":")) + "\n").encode()
        except (TypeError, ValueError, RecursionError) as exc:  # a circular or absurd record: a bug of ours
            log.error("session log: a %r record could not be written as JSON (%s)", kind, exc)
            return
        failure: OSError | None = None
        with self._lock:
            if self._closed.is_set():
                return
            if self._fd < 0:
                self._keep(line)
                return
            try:
                self._write_line(line)
            except OSError as exc:
                self._keep(line)
                self._close_fd()
                failure = exc
        if failure is not None:
            self._failed(failure)

    # -- while it fails ------------------------------------------------------------------------
    def _write_line(self, line: bytes) -> None:
        """Append one line and fsync it (hold the lock); a short write raises ENOSPC."""
        if self._torn:
            os.write(self._fd, b"\n")  # end the torn line: a reader skips it, not the next one too
            self._torn = False
        written = os.write(self._fd, line)
        if written != len(line):
            self._torn = written > 0
            raise OSError(ENOSPC, os.strerror(ENOSPC))  # a short write: the disk filled up mid-line
        os.fsync(self._fd)
        self.lines += 1

    def _keep(self, line: bytes) -> None:
        if self._pending_bytes + len(line) > PENDING_MAX_BYTES:
            self.lost += 1
            return
        self._pending.append(line)
        self._pending_bytes += len(line)

    def _close_fd(self) -> None:
        if self._fd >= 0:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1

    def _failed(self, exc: OSError) -> None:
        self.error = (f"session log {self.path}: {exc.strerror or exc}; not written until it can be "
                      f"(tried every {self.retry_s:g} s; messages are still relayed)")
        log.error("%s", self.error)
        if self._on_error is not None:
            self._on_error(self.error)
        with self._lock:
            if self._retrying is None and not self._closed.is_set():
                self._retrying = threading.Thread(target=self._retry, name="session-log-retry", daemon=True)
                self._retrying.start()

    def _retry(self) -> None:
        """Try the file again every :attr:`retry_s` until it takes every kept record."""
        caught_up = 0
        lost = 0
        while not self._closed.wait(self.retry_s):
            done, written, gap = self._flush_pending()
            caught_up, lost = caught_up + written, lost + gap
            if done:
                break
        if self._closed.is_set():
            return
        self.error = ""
        log.log(NOTICE, "session log %s is written again (%d records written late%s)", self.path, caught_up,
                f", {lost} lost: memory could not hold them" if lost else "")
        if self._on_recovered is not None:
            self._on_recovered()

    def _flush_pending(self) -> tuple[bool, int, int]:
        """Reopen the file and write what was kept: (everything written, records written, records
        named lost in a ``log_gap`` record)."""
        written = gap = 0
        with self._lock:
            if self._closed.is_set():
                self._retrying = None
                return True, written, gap
            try:
                if self._fd < 0:
                    self.path.parent.mkdir(parents=True, exist_ok=True)  # a folder that could not be made yet
                    self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                if self.lost:
                    record = {"t": now_ms(), "kind": "log_gap", "lost": self.lost,
                              "reason": "the disk could not be written and memory could not hold them"}
                    self._write_line((json.dumps(record, separators=(",", ":")) + "\n").encode())
                    gap, self.lost = self.lost, 0
                while self._pending:
                    line = self._pending[0]
                    self._write_line(line)
                    self._pending.popleft()
                    self._pending_bytes -= len(line)
                    written += 1
            except OSError as exc:
                log.debug("session log %s still cannot be written: %s", self.path, exc.strerror or exc)
                self._close_fd()
                return False, written, gap
            self._retrying = None  # under the lock: a failure from now on starts a new retry
            return True, written, gap

    def close(self) -> None:
        with self._lock:
            self._closed.set()
            self._close_fd()
        if self._pending:
            log.warning("session log %s: %d records could not be written before the worker stopped",
                        self.path, len(self._pending) + self.lost)


def read_session_log(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a log; a torn last line (the process died mid-write) is skipped."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                return
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue
