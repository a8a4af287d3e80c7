"""The display hub's kept picture across rounds: a new round is the next buyer's, so the last
buyer's conversation leaves every page (:meth:`avatar.display.DisplayHub.set_round`)."""

from __future__ import annotations

import asyncio
import json

from avatar.display import DisplayHub
from avatar.page_events import DisplayState, LogEvent, MessageEvent, RoundEvent, SpeakingBegin


def _round(round_id: str, phase: str) -> RoundEvent:
    return RoundEvent(round_id=round_id, phase=phase, durations={"warmUp": 5}, phase_started=1, phase_deadline=2, now=3)


def test_a_new_round_clears_the_last_buyers_words_and_sends_every_page_the_clean_picture() -> None:
    hub = DisplayHub(["Celia", "Watson"], "buyer")
    loop = asyncio.new_event_loop()
    try:
        hub.attach(loop)
        page = hub.register()
        hub.set_round(_round("r1", "round"))
        said = MessageEvent(message_id="m1", speaker="Human", addressee="Celia", text="Two eggs?", bid=None, at=1)
        begin = SpeakingBegin(avatar="Celia", text="Two eggs for 0.8 USD.", message_id="m2", at=2, latency_ms=0)
        line = LogEvent(speaker="Celia", text="Two eggs for 0.8 USD.", permitted=True, rationale=None, at=2)
        caption = begin.caption()

        def keep(state: DisplayState) -> None:
            state.last_human, state.captions["Celia"] = said, caption
            state.log = [line.line()]

        hub.emit(line, keep)
        hub.set_round(_round("r1", "post"))  # the same round goes on: its words stay
        kept = hub.snapshot()
        assert (kept.captions["Celia"], kept.log, kept.last_human) == (caption, [line.line()], said)
        assert kept.captions["Celia"] is not None and kept.captions["Celia"].text == "Two eggs for $0.80."

        hub.set_round(_round("r2", "warmup"))
        kept = hub.snapshot()
        assert kept.round is not None and kept.round.round_id == "r2"
        assert (kept.captions, kept.log, kept.last_human) == ({"Celia": None, "Watson": None}, [], None)
        loop.run_until_complete(asyncio.sleep(0))
        sent = [json.loads(page.get_nowait()) for _ in range(page.qsize())]
        assert [e["type"] for e in sent] == ["round", "snapshot", "log", "round", "round", "snapshot"]
        clean = sent[-1]
        assert (clean["round"]["round_id"], clean["captions"], clean["log"], clean["last_human"]) == \
            ("r2", {"Celia": None, "Watson": None}, [], None)

        def speaking(state: DisplayState) -> None:
            state.speaking, state.captions["Celia"] = caption, caption

        hub.emit(begin, speaking)
        hub.set_round(_round("r3", "warmup"))  # Celia is still heard: her caption stays while she speaks
        assert hub.snapshot().captions == {"Celia": caption, "Watson": None}
    finally:
        hub.detach()
        loop.close()
