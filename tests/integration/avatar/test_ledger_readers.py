"""The ledger read by another process while the Avatar Controller writes it (SQLite in WAL mode:
the day book, the exports and the console read it from beside the controller)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from avatar.books.ledger import LEDGER_FILE, read_ledger
from avatar.books.records import day_of
from avatar.room_ledger import open_ledger

DURATIONS = {"warmUp": 5.0, "round": 60.0, "post": 30.0}
T0 = 1_700_000_000_000


def test_another_process_reads_while_the_controller_writes(tmp_path: Path) -> None:
    path = tmp_path / LEDGER_FILE
    assert read_ledger(path) is None  # no ledger yet: nothing to read
    writer = open_ledger(path)
    writer.begin_round("r3", DURATIONS, 50.0, "USD", "warmup", T0, None)
    code = (f"from pathlib import Path; from avatar.books.ledger import read_ledger; "
            f"r = read_ledger(Path({str(path)!r})); print(sorted(str(x.round_id) for x in r.rounds_on({day_of(T0)!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == "['r3']"


def test_the_recorder_reads_the_ledger_without_the_controller() -> None:
    """The round recorder imports the ledger's reader: none of the Avatar Controller's service
    (FastAPI, the controller, the console) comes with it."""
    code = ("import sys, sessions.rounds; "
            "print(sorted(m for m in ('fastapi', 'avatar.controller', 'avatar.operator', 'avatar.room_ledger') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
