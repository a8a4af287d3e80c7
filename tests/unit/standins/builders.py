"""A round of the stand-in's memory, built without HTTP (its services are never called here)."""

from __future__ import annotations

from standins.eo.round_setup import default_round
from standins.eo.rounds import Ledger, Round, Service


def memory_round(round_id: int | str) -> Round:
    setup = default_round({"Celia": 1}, 2, round_id=round_id)
    human = Service("competition-ui", "http://127.0.0.1:2", {})
    celia = Service("Celia", "http://127.0.0.1:1", {})
    return Round(round_id, setup, {"Celia": celia}, human, setup.durations, {}, Ledger("USD"))
