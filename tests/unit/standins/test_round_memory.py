"""The stand-in's own memory of its rounds: looked up by the text of their id, refused with a
404 when unknown, and numbered for ``--auto-round`` from what this process was given."""

from __future__ import annotations

import pytest

from standins.eo.errors import StandinError
from standins.eo.memory import RoundMemory
from tests.unit.standins.builders import memory_round


def test_rounds_by_the_text_of_their_id_and_a_404_naming_the_known_ones() -> None:
    memory = RoundMemory()
    memory.replace(memory_round(1))
    assert memory.get("1").round_id == 1 and 1 in memory and "2" not in memory
    with pytest.raises(StandinError) as error:
        memory.get("r9")
    assert error.value.status_code == 404 and "known rounds: 1" in error.value.message


def test_an_ended_round_is_unknown_to_the_eo_and_the_next_free_id_follows_the_highest() -> None:
    memory = RoundMemory()
    assert memory.free_round_id() == "r1"
    for round_id in ("r2", "r7", "practice"):
        memory.replace(memory_round(round_id))
    assert memory.free_round_id() == "r8"
    ended = memory.get("r7")
    ended.phase = "ended"
    with pytest.raises(StandinError):
        memory.known_to_the_eo("r7")
    assert memory.phases() == {"r2": "initialized", "r7": "ended", "practice": "initialized"}
    assert memory.latest_running() is None
