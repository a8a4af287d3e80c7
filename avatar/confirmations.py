"""``/confirmAccept``: a seller's Accept waits for the yes or no of the person
``[avatar] confirm_accept`` names, one prompt at a time (:class:`~avatar.confirm_queue.ConfirmQueue`).

Every prompt and its answer is written to the ledger before the EO hears the answer; the deal is
the buyer's only once the EO forwards the booked Accept (:mod:`avatar.eo_intake`). The pending
prompt is published on the bus, so the buyer may answer it by voice.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from avatar.confirm_queue import SHUTDOWN, Answer, ConfirmQueue
from avatar.page_events import ConfirmDoneEvent
from avatar.room import Room
from avatar.settings import AvatarSettings
from avatar.ssml import prepare
from formats import written
from humaine_platform.endpoints import CONFIRM_ACCEPT_STATUS
from humaine_platform.models import ConfirmAccept, confirm_accept_answer
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import ConfirmAnswer, ConfirmPending, Status, new_id, now_ms

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

CONFIRM_REJECTED_STATUS = "rejected"
"""Our answer when the operator declines a deal: anything but the EO's exact yes rejects it."""


def answer(accepted: bool) -> dict[str, Any]:
    """One of the two answers the EO understands to ``/confirmAccept``."""
    return confirm_accept_answer() if accepted else {"status": CONFIRM_REJECTED_STATUS}


class Confirmations:
    """The room's answers to ``/confirmAccept``, and who may give them."""

    def __init__(self, settings: AvatarSettings, room: Room) -> None:
        self._settings = settings
        self._room = room
        self._timeout_yes = settings.confirm_timeout_answer == CONFIRM_ACCEPT_STATUS
        self._queue = ConfirmQueue(room.ledger, settings.confirm_timeout_s, self._timeout_yes, self._changed)
        self._buyer_can_speak = False
        """The microphone worker is online: the buyer may answer a confirmation by voice."""

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The HTTP server's event loop (confirmations are answered on it)."""
        self._queue.attach(loop)

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._queue.loop

    def waiting(self) -> int:
        """How many prompts wait for an answer."""
        return len(self._queue)

    async def confirm_accept(self, body: ConfirmAccept | None) -> dict[str, Any]:
        """The EO's yes at once (``auto``, ``competition-ui``), or the answer of the person
        ``confirm_accept`` names (``buyer``: the buyer page or the buyer's voice; ``operator``: the
        display page). A body that could not be read (``None``) gets the answer an unattended
        deal gets, never an error: the EO exits on anything but one of its two answers."""
        settings = self._settings
        if body is None:
            return answer(not settings.confirm_asks or self._timeout_yes)
        prompt_id = new_id()
        try:
            rnd = self._room.round_events.round_of(body.roundId)
            self._room.ledger.add_prompt(prompt_id, rnd.key, body.speaker, prepare(body.text).plain, body.bid, now_ms())
        except Exception as exc:  # the EO's answer does not wait for the disk
            _notes.error(("prompt", type(exc).__name__), "a confirmation cannot be written to the ledger: %s: %s",
                         type(exc).__name__, exc)
            return answer(not settings.confirm_asks or self._timeout_yes)
        if not settings.confirm_asks:
            return self._answered_at_once(prompt_id, True, settings.confirm_accept)
        by_voice = settings.confirm_accept == "buyer" and self._buyer_can_speak
        if self._room.hub.client_count == 0 and not by_voice and not self._queue:
            log.warning("nobody can confirm %s's accept (no page open, no microphone); answering %s at once", body.speaker,
                        settings.confirm_timeout_answer)
            return self._answered_at_once(prompt_id, self._timeout_yes, "no page")
        accepted, _by = await self._queue.ask(prompt_id)
        return answer(accepted)

    def _answered_at_once(self, prompt_id: str, accepted: bool, by: str) -> dict[str, Any]:
        self._room.ledger.answer_prompt(prompt_id, accepted, by, now_ms())
        self._room.books.changed()
        return answer(accepted)

    def decide(self, confirm_id: str, accepted: bool, by: str) -> bool:
        """A person answered confirmation ``confirm_id`` (on the event loop): the first answer
        wins, a later one (another page, the voice) changes nothing."""
        return self._queue.decide(confirm_id, accepted, by)

    def answer_all(self) -> int:
        """Give every waiting confirmation its configured answer (on the event loop): the EO gets
        its answer before the controller stops. Returns how many there were."""
        answered = self._queue.answer_all(SHUTDOWN)
        if answered:
            log.info("stopping: %d waiting confirmation(s) answered %s", answered, self._settings.confirm_timeout_answer)
        return answered

    def _changed(self, done: Answer | None) -> None:
        """A prompt was queued, asked or answered: the retained pending prompt and the pages
        (an answer also as the buyer page's notice)."""
        self.publish_pending()
        if done is not None:
            self._room.hub.emit(ConfirmDoneEvent(id=done.prompt_id, accepted=done.accepted, by=done.by))
        self._room.books.changed()

    def publish_pending(self) -> None:
        """Tell the room which confirmation is asked now (the buyer may answer it by voice):
        always the one the pages show, the first of the queue."""
        pending = ConfirmPending(source=self._room.source)
        head = self._queue.head()
        prompt = self._room.ledger.prompt(head) if head is not None else None
        if prompt is not None:
            deal = written.goods(prompt.goods) + (f" for {written.money(prompt.price)}" if prompt.price is not None else "")
            pending = ConfirmPending(source=self._room.source, confirm_id=prompt.id, seller=prompt.seller, deal=deal,
                                     deadline=prompt.deadline_ms)
        self._room.bus.publish(self._room.bus.topics.confirm_pending(), pending)

    def on_answer(self, _topic: str, message: ConfirmAnswer) -> None:
        """The buyer said yes or no to the pending confirmation (MQTT thread)."""
        loop = self._queue.loop
        if loop is None or loop.is_closed():
            return
        log.info("the buyer answered %s by voice: %r", "yes" if message.accept else "no", message.text[:60])
        loop.call_soon_threadsafe(self.decide, message.confirm_id, message.accept, "voice")

    def on_microphone_status(self, _topic: str, message: Status) -> None:
        """Whether the buyer can answer a confirmation by voice (or typing, on a laptop)."""
        self._buyer_can_speak = message.state == "online"
