"""The round life's refusals and the totals' two views, on rounds built in memory."""

from __future__ import annotations

import pytest

from humaine_platform.eo_rules import Totals
from humaine_platform.models import Bid
from standins.eo.calls import ServiceCalls
from standins.eo.errors import StandinError
from standins.eo.lifecycle import RoundPhases
from standins.eo.memory import RoundMemory
from standins.eo.settings import StandinSettings
from standins.eo.totals import ALLOCATION_FAILED, NO_ALLOCATION_BODY, TotalsKeeper
from tests.unit.standins.builders import memory_round


def test_end_round_ends_the_latest_running_phase_and_refuses_when_none_runs() -> None:
    memory = RoundMemory()
    life = RoundPhases(memory, ServiceCalls(StandinSettings()), TotalsKeeper(memory, platform_view=False))
    with pytest.raises(StandinError, match="no round is running"):
        life.end_phase({})
    memory.replace(memory_round("r1"))
    with pytest.raises(StandinError) as error:
        life.end_phase({"roundId": "r1"})
    assert error.value.status_code == 409
    with pytest.raises(StandinError, match="startRound body"):
        life.start([])
    rnd = memory.get("r1")
    rnd.phase = "round"
    assert life.end_phase({}) is rnd and rnd.skip.is_set()


def test_the_stand_ins_totals_and_the_platform_eos() -> None:
    memory = RoundMemory()
    rnd = memory_round("r1")
    memory.replace(rnd)
    rnd.ledger.book("Celia", Bid.model_validate({"type": "Accept", "quantity": {"egg": 2}, "price": {"unit": "USD", "value": 3.5}}))
    own = TotalsKeeper(memory, platform_view=False).view("r1")
    assert own["roundTotals"]["Human"] == {"quantity": {"egg": 2}, "cost": 3.5}
    platform = TotalsKeeper(memory, platform_view=True)
    assert platform.view("r1") is None  # no EO totals: the platform EO's null
    assert platform.allocate({"roundId": "r1", "payload": {}}) == {
        "roundId": "r1", "status": ALLOCATION_FAILED, "Reason": NO_ALLOCATION_BODY}
    rnd.eo_totals = Totals(50.0, {})
    rnd.eo_totals.book({"speaker": "Celia", "addressee": "Human",
                        "bid": {"type": "Accept", "quantity": {"egg": 2}, "price": {"value": 3.5}}})
    assert platform.view("r1")["Human"] == {"price": 3.5, "quantity": {"egg": 2}}
    refused = platform.allocate({"roundId": "r1", "payload": {"cake": {"quantity": 1}}})
    assert refused["status"] == ALLOCATION_FAILED and refused["Reason"].endswith("than the buyer bought")
