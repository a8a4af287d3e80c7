"""The transcript worker's parts on their own: the utterances held for a round state, a pending
confirmation, the hand-over from the bus's thread and the EO's verdicts."""

from __future__ import annotations

import asyncio

from transcript.confirm_answer import PendingConfirmation
from transcript.inbox import LoopInbox
from transcript.merging import Utterance
from transcript.round_hold import RoundHold
from transcript.verdicts import Verdicts
from workers.runtime.messages import ConfirmPending, EOVerdict, Transcript, VadEvent

T0 = 1_700_000_000_000


def _utterance(arrived_s: float) -> Utterance:
    final = Transcript(source="mic", text=f"said at {arrived_s}", final=True, utterance_id=f"u{arrived_s}", start=T0,
                       end=T0 + 500, engine="vosk")
    return Utterance([final], arrived_mono=arrived_s, hold_until_ms=0)


def test_held_utterances_go_in_order_when_their_ttl_runs_out_or_all_at_once() -> None:
    hold = RoundHold(ttl_s=10, max_held=2)
    first, second, third = _utterance(0), _utterance(5), _utterance(6)
    assert hold.hold(first) is None and hold.hold(second) is None
    assert hold.hold(third) is first, "beyond the limit the oldest goes on"
    assert hold.release(now_s=15, everything=False) == [second] and len(hold) == 1
    assert hold.release(now_s=15, everything=True) == [third] and len(hold) == 0


def test_a_pending_confirmation_is_answered_once_by_a_plain_yes_or_no_in_time() -> None:
    confirmation = PendingConfirmation(["Celia"])
    assert confirmation.answer("yes", T0) is None, "nothing waits"
    pending = ConfirmPending(source="avatar", confirm_id="c1", seller="Celia", deadline=T0 + 1000)
    confirmation.update(pending)
    assert confirmation.answer("yes but cheaper", T0) is None
    assert confirmation.answer("Yes, Celia.", T0 + 2000) is None, "past its deadline"
    assert confirmation.answer("Yes, Celia.", T0) == (pending, True)
    assert confirmation.answer("no", T0) is None, "answered already"
    confirmation.update(pending)
    confirmation.update(ConfirmPending(source="avatar"))  # withdrawn
    assert confirmation.answer("no", T0) is None


def test_what_arrives_before_the_loop_runs_is_handed_to_it_and_nothing_after_it_stops() -> None:
    inbox = LoopInbox(max_early=1)
    early = VadEvent(source="mic", event="speech_start", utterance_id="u1", at=T0)
    assert inbox.put(early) and not inbox.put(early), "beyond max_early nothing is kept"

    async def loop() -> list[object]:
        queue = inbox.open()
        seen = [await queue.get()]
        assert inbox.put(early)
        seen.append(await queue.get())
        inbox.close()
        return seen

    assert asyncio.run(loop()) == [early, early]
    assert not inbox.put(early)


def test_a_rejection_gives_its_rationale_and_a_waiting_relay_gets_the_verdict() -> None:
    message = {"speaker": "Human", "text": "two eggs", "timestamp": 1}

    async def scenario() -> tuple[str, EOVerdict | None]:
        verdicts = Verdicts(wait_s=5)
        waiting = asyncio.ensure_future(verdicts.on({"speaker": "Human", "text": "one egg", "timestamp": 0}))
        await asyncio.sleep(0)
        permitted = EOVerdict(source="avatar", via="log", permitted=True, message={"text": "one egg", "timestamp": 0})
        verdicts.arrived(permitted)
        verdicts.arrived(EOVerdict(source="avatar", via="rejection", permitted=False, rationale="R1", message=message))
        verdicts.arrived(EOVerdict(source="avatar", via="log", permitted=False, rationale=None, message=message))
        return await verdicts.rationale(message), await waiting

    rationale, verdict = asyncio.run(scenario())
    assert rationale == "R1" and verdict is not None and verdict.permitted
