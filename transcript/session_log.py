"""The session log: one JSON object per line, flushed and fsync'd line by line.

Everything the worker heard and did - final transcripts, attention changes, round states,
outgoing messages and their delivery outcomes - so a session can be replayed and evaluated
later, and so a crash (even ``kill -9``) loses at most the line being written.

The log is a record, not the job: a disk that is full or read-only stops the log (one clear
line, and ``on_error`` so the worker can publish an ``error`` status) and never the worker,
which goes on relaying.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)

ErrorReporter = Callable[[str], None]


class SessionLog:
    """Append-only JSONL file; thread-safe; never raises on a disk error (see the module)."""

    def __init__(self, path: Path, on_error: ErrorReporter | None = None) -> None:
        self.path = path
        self._on_error = on_error
        self._lock = threading.Lock()
        self._fd = -1
        self.lines = 0
        self.error = ""
        """Why the log stopped being written (empty while it works)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            self._failed(exc)

    @classmethod
    def create(cls, directory: Path, prefix: str, on_error: ErrorReporter | None = None) -> SessionLog:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        return cls(directory / f"{prefix}-{stamp}-{os.getpid()}.jsonl", on_error)

    def write(self, kind: str, **fields: Any) -> None:
        record = {"t": now_ms(), "kind": kind, **fields}
        line = (json.dumps(record, default=str, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self._fd < 0:
                return
            try:
                written = os.write(self._fd, line)
                if written != len(line):
                    raise OSError(28, os.strerror(28))  # a short write: the disk filled up mid-line
                os.fsync(self._fd)
            except OSError as exc:
                os.close(self._fd)
                self._fd = -1
                failure: OSError | None = exc
            else:
                self.lines += 1
                failure = None
        if failure is not None:
            self._failed(failure)

    def _failed(self, exc: OSError) -> None:
        self.error = f"session log {self.path}: {exc.strerror or exc}; no longer written (messages are still relayed)"
        log.error("%s", self.error)
        if self._on_error is not None:
            self._on_error(self.error)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


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
