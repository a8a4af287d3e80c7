"""Sellers' Accepts that arrive together are asked one at a time, in order, each answer in the ledger."""

from __future__ import annotations

import asyncio

from avatar.books.ledger import RoomLedger
from avatar.confirm_queue import SHUTDOWN, TIMEOUT, Answer, ConfirmQueue, prompt_views
from avatar.room_ledger import ledger_in_memory
from tests.support.bids import accept

T0 = 1_700_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def setup(timeout_s: float = 30.0) -> tuple[RoomLedger, int, ConfirmQueue, list[Answer | None], Clock]:
    ledger = ledger_in_memory()
    key = ledger.begin_round("r1", {}, 50.0, "USD", "round", T0, None).key
    changes: list[Answer | None] = []
    clock = Clock()
    return ledger, key, ConfirmQueue(ledger, timeout_s, False, changes.append, clock), changes, clock


def prompt(ledger: RoomLedger, key: int, pid: str, seller: str, price: float) -> str:
    ledger.add_prompt(pid, key, seller, "Deal.", accept({"egg": 1}, price), T0)
    return pid


def ask_two(ledger: RoomLedger, key: int, queue: ConfirmQueue, prices: tuple[float, float] = (1.0, 1.0)) -> tuple[
        asyncio.Task[tuple[bool, str]], asyncio.Task[tuple[bool, str]]]:
    """Celia's Accept ("a") and Watson's ("b") at once, each waiting for its answer."""
    first = asyncio.create_task(queue.ask(prompt(ledger, key, "a", "Celia", prices[0])))
    second = asyncio.create_task(queue.ask(prompt(ledger, key, "b", "Watson", prices[1])))
    return first, second


def test_two_accepts_at_once_are_asked_one_after_the_other() -> None:
    async def scenario() -> None:
        ledger, key, queue, changes, clock = setup()
        first, second = ask_two(ledger, key, queue, (10.0, 5.0))
        await asyncio.sleep(0)
        assert queue.head() == "a" and len(queue) == 2
        views = prompt_views(ledger.book(key), "buyer", 30.0, "rejected")
        assert [(v.id, v.deadline is not None, v.budget_after) for v in views] == [("a", True, 40.0), ("b", False, 35.0)]
        clock.now += 7000
        assert queue.decide("b", True, "voice")  # an answer by id applies to that prompt, queued or asked
        assert await second == (True, "voice") and queue.head() == "a"
        assert ledger.prompt("a").deadline_ms == T0 + 30_000  # asked at T0: its own time runs
        assert queue.decide("a", True, "buyer") and not queue.decide("a", False, "buyer")  # the first answer wins
        assert await first == (True, "buyer") and queue.head() is None
        assert [c for c in changes if c] == [Answer("b", True, "voice"), Answer("a", True, "buyer")]
        views = prompt_views(ledger.book(key), "buyer", 30.0, "rejected")
        assert views == [] and {p.outcome for p in ledger.book(key).prompts} == {"sent"}

    asyncio.run(scenario())


def test_the_next_prompt_is_asked_when_the_first_is_answered() -> None:
    async def scenario() -> None:
        ledger, key, queue, _changes, clock = setup()
        first, second = ask_two(ledger, key, queue, (10.0, 5.0))
        await asyncio.sleep(0)
        assert ledger.prompt("b").asked_ms is None
        clock.now += 4000
        queue.decide("a", False, "buyer")
        assert await first == (False, "buyer")
        asked = ledger.prompt("b")
        assert (asked.asked_ms, asked.deadline_ms) == (T0 + 4000, T0 + 34_000)
        views = prompt_views(ledger.book(key), "buyer", 30.0, "rejected")
        assert views[0].budget_after == 45.0  # the declined one costs nothing
        queue.decide("b", True, "buyer")
        await second

    asyncio.run(scenario())


def test_the_timeout_gives_the_configured_answer_and_asks_the_next() -> None:
    async def scenario() -> None:
        ledger, key, queue, _changes, _clock = setup(timeout_s=0.05)
        first, second = ask_two(ledger, key, queue)
        assert await asyncio.wait_for(first, 5) == (False, TIMEOUT)
        assert await asyncio.wait_for(second, 5) == (False, TIMEOUT)
        assert {p.answered_by for p in ledger.book(key).prompts} == {TIMEOUT}

    asyncio.run(scenario())


def test_stopping_answers_every_waiting_prompt() -> None:
    async def scenario() -> None:
        ledger, key, queue, _changes, _clock = setup()
        tasks = [asyncio.create_task(queue.ask(prompt(ledger, key, p, "Celia", 1.0))) for p in "abc"]
        await asyncio.sleep(0)
        assert queue.answer_all() == 3
        assert [await t for t in tasks] == [(False, SHUTDOWN)] * 3

    asyncio.run(scenario())


def test_a_prompt_whose_caller_went_away_leaves_the_queue() -> None:
    async def scenario() -> None:
        ledger, key, queue, _changes, _clock = setup()
        first, second = ask_two(ledger, key, queue)
        await asyncio.sleep(0)
        first.cancel()
        await asyncio.sleep(0)
        assert queue.head() == "b" and ledger.prompt("a").answered_by == TIMEOUT
        queue.decide("b", True, "buyer")
        assert await second == (True, "buyer")

    asyncio.run(scenario())
