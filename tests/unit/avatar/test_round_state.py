"""The retained round state a round of the ledger reads as."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from avatar.books.records import LedgerRound
from avatar.round_state import state_of

ROUND = LedgerRound(1, "r1", "2026-01-01", 0, "ana", "round", 0, 1000, {"round": 1.0}, 50.0, "USD", None, None, 0, "")


def test_an_open_round_reads_as_its_phase_and_any_other_as_over() -> None:
    assert state_of(ROUND, "avatar").phase == "round"
    assert state_of(replace(ROUND, phase="lost"), "avatar").phase == "ended"
    unknown = replace(ROUND, phase=cast(Any, "paused"))  # a phase a later version wrote
    assert state_of(unknown, "avatar").phase == "ended"
    assert state_of(None, "avatar").phase == "idle"
