"""Sellers' Accepts waiting for the buyer: asked one at a time, in the order the EO sent them.

Two sellers can accept at the same moment; the EO then holds two ``/confirmAccept`` calls open
and books each on its own answer. A person answers one question at a time, and a spoken "yes"
must answer the question on the screen - so the prompts form a queue: the first is asked (its
own timeout starts when it is shown), the others wait their turn, and every screen and the
retained ``confirm/pending`` show the first. Each answer is written to the ledger before the EO
hears it. Runs on the HTTP server's event loop; :meth:`ConfirmQueue.decide` is how an answer
from any thread (a page, the voice, the timeout, a shutdown) gets in.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from avatar.books.ledger import RoomLedger
from avatar.books.records import RoundBook
from avatar.page_events import PromptView
from formats import written
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)

TIMEOUT = "timeout"
"""``answered_by`` of a prompt nobody answered in time (the configured answer was given)."""
SHUTDOWN = "shutdown"
"""``answered_by`` of a prompt answered as the controller stopped (the configured answer)."""


@dataclass(frozen=True)
class Answer:
    """The answer one prompt got, as the EO will hear it."""

    prompt_id: str
    accepted: bool
    by: str


class ConfirmQueue:
    """The prompts waiting for the buyer, first asked first."""

    def __init__(self, ledger: RoomLedger, timeout_s: float, timeout_answer: bool, on_change: Callable[[Answer | None], None],
                 clock_ms: Callable[[], int] = now_ms) -> None:
        self.ledger = ledger
        self.timeout_s = timeout_s
        self.timeout_answer = timeout_answer
        self._on_change = on_change
        self._clock = clock_ms
        self._waiting: dict[str, asyncio.Future[tuple[bool, str]]] = {}
        """In arrival order: the first is the one asked."""
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop prompts are answered on (the HTTP server's)."""
        self._loop = loop

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop prompts are answered on, once known."""
        return self._loop

    def __len__(self) -> int:
        return len(self._waiting)

    def head(self) -> str | None:
        return next(iter(self._waiting), None)

    async def ask(self, prompt_id: str) -> tuple[bool, str]:
        """Wait for the buyer's answer to ``prompt_id`` (already in the ledger): ``(accepted, by)``."""
        loop = self._loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[bool, str]] = loop.create_future()
        self._waiting[prompt_id] = future
        if self.head() == prompt_id:
            self._ask_head()
        self._changed()
        try:
            return await future
        finally:
            if self._waiting.get(prompt_id) is future:  # cancelled: the EO's connection went away
                self._settle(prompt_id, self.timeout_answer, TIMEOUT)

    def _ask_head(self) -> None:
        """The first prompt is shown now: its time to answer starts."""
        head = self.head()
        if head is None or self._loop is None:
            return
        now = self._clock()
        self.ledger.ask_prompt(head, now, now + round(self.timeout_s * 1000))
        self._timer = self._loop.call_later(self.timeout_s, self._expire, head)

    def _expire(self, prompt_id: str) -> None:
        if self.decide(prompt_id, self.timeout_answer, TIMEOUT):
            log.info("no answer to a seller's accept within %.0f s: %s", self.timeout_s,
                     "accepted" if self.timeout_answer else "declined")

    def decide(self, prompt_id: str, accepted: bool, by: str) -> bool:
        """An answer to ``prompt_id`` (on the event loop). The first answer wins; a later one, or
        one to a prompt no longer waiting, changes nothing (False)."""
        future = self._waiting.get(prompt_id)
        if future is None or future.done():
            return False
        self._settle(prompt_id, accepted, by)
        return True

    def _settle(self, prompt_id: str, accepted: bool, by: str) -> None:
        """Write the answer, take the prompt out of the queue, ask the next one."""
        was_head = self.head() == prompt_id
        self.ledger.answer_prompt(prompt_id, accepted, by, self._clock())
        future = self._waiting.pop(prompt_id)
        if not future.done():
            future.set_result((accepted, by))
        if was_head:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._ask_head()
        self._changed(Answer(prompt_id, accepted, by))

    def answer_all(self, by: str = SHUTDOWN) -> int:
        """Give every waiting prompt the configured answer (the controller stops: the EO must
        not lose its answer); returns how many there were."""
        waiting = list(self._waiting)
        for prompt_id in waiting:
            self.decide(prompt_id, self.timeout_answer, by)
        return len(waiting)

    def _changed(self, answer: Answer | None = None) -> None:
        try:
            self._on_change(answer)
        except Exception as exc:  # a view that cannot be drawn must not cost the EO its answer
            log.warning("the confirmation's views could not be updated: %s: %s", type(exc).__name__, exc)


def prompt_views(book: RoundBook | None, asks: str, timeout_s: float, timeout_answer: str) -> list[PromptView]:
    """The waiting prompts as the pages show them, the one asked first (the seller's words with
    their amounts written as people write money). "Budget after" counts the yeses the EO has not
    booked yet and every prompt before this one as accepted."""
    if book is None:
        return []
    waiting = book.waiting()
    running = book.left
    if running is not None:
        running -= sum(p.price or 0.0 for p in book.prompts if p.outcome == "sent")
    views = []
    for position, prompt in enumerate(waiting):
        after = None if running is None or prompt.price is None else round(running - prompt.price, 2)
        views.append(PromptView(
            id=prompt.id, speaker=prompt.seller, text=written.amounts(prompt.text), bid=prompt.bid, goods=prompt.goods,
            price=prompt.price, budget_after=after, asks=asks, timeout_s=timeout_s,
            deadline=prompt.deadline_ms if position == 0 else None, timeout_answer=timeout_answer,
            position=position, queued=len(waiting),
        ))
        if running is not None and prompt.price is not None:
            running -= prompt.price
    return views
