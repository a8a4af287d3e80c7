"""Next and End round on the platform's real EO in its ``standalone`` mode (competition-ui's own
way: ``/startRound`` with the whole round; the EO calls every round ``"true"``): the round starts
with the room's utilities, and End round leaves the EO up past the round's own end, its totals
still sent to the human side."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from avatar.books.ledger import RoomLedger
from avatar.competition.control import RoundControl
from avatar.competition.settings import RoundsSettings, TournamentSettings
from avatar.room_ledger import open_ledger
from humaine_platform import endpoints as ep
from humaine_platform.models import ServiceEntry
from standins.recorder import Behavior, RecordingServer
from tests.support.helpers import run_async, wait_for
from tests.support.real_eo import RealEO
from workers.runtime.config import OrchestratorSettings
from workers.runtime.messages import now_ms

DURATIONS = {"warmUp": 0.5, "round": 4.0, "post": 0.5}


def test_a_standalone_eo_takes_the_whole_round_on_start_and_survives_end_round(tmp_path: Path) -> None:
    with RecordingServer() as human, RecordingServer() as celia, RecordingServer() as watson:
        human.behaviors[ep.CONFIRM_ACCEPT] = Behavior(answer={"status": ep.CONFIRM_ACCEPT_STATUS})
        eo = RealEO(tmp_path / "eo", human_port=human.port, standalone=True).start()
        ledger = open_ledger(tmp_path / "ledger.sqlite3")
        control = RoundControl(
            ledger, ["Celia", "Watson"], rounds=RoundsSettings(sellers={"Celia": celia.url, "Watson": watson.url}),
            tournament=TournamentSettings(), eo=OrchestratorSettings(url=eo.url, standalone=True), data_dir=tmp_path,
            human=ServiceEntry(host="127.0.0.1", port=human.port))
        try:
            run_async(_start_and_end(control, ledger, human, celia, watson))
            assert ledger.round_for("true").phase == "ended"  # type: ignore[union-attr]
            own_end = time.monotonic() + DURATIONS["round"] + DURATIONS["post"]
            assert wait_for(lambda: human.bodies(ep.RECEIVE_ROUND_TOTALS), DURATIONS["round"] + 20), eo.log_tail()
            time.sleep(max(0.0, own_end - time.monotonic()) + 1.0)
            assert eo.alive(), eo.log_tail()
        finally:
            ledger.close()
            eo.stop()


async def _start_and_end(control: RoundControl, ledger: RoomLedger, human: RecordingServer, celia: RecordingServer,
                         watson: RecordingServer) -> None:
    try:
        answer = await control.next_round(DURATIONS, "Ada")
        assert answer.ok and answer.fields["roundId"] == "true", answer
        metadata = human.bodies(ep.SEND_ROUND_METADATA)
        assert metadata and metadata[0]["roundId"] == "true" and metadata[0]["durations"] == DURATIONS
        told = {body["name"]: body for seller in (celia, watson) for body in seller.bodies(ep.SET_UTILITY)}
        assert set(told) == {"Celia", "Watson"} and all(b["roundId"] == "true" for b in told.values())
        assert told["Celia"]["utility"] != told["Watson"]["utility"]  # each drawn for this round
        # what the Avatar Controller does with the EO's metadata: the round opens in the ledger
        rnd = ledger.begin_round("true", DURATIONS, 50.0, "USD", "warmup", now_ms(), now_ms() + 500)
        assert rnd.buyer == "Ada"
        while not celia.bodies(ep.START_ROUND):
            await asyncio.sleep(0.05)
        ledger.set_phase(rnd.key, "round", now_ms(), now_ms() + int(DURATIONS["round"] * 1000))
        ended = await control.end_round()
        assert ended.ok, ended
    finally:
        await control.close()
