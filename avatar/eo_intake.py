"""What the EO tells the room about messages: each permitted message (shown; an avatar's queued
for speech, a seller's bid kept in the round's books) and each verdict on a proposed message (on
the bus and in the display's history). Every method returns at once: the EO waits for our answer.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import logging
from collections.abc import Mapping
from typing import Any, Literal

from avatar import gestures
from avatar.books.rules import is_booked_deal, is_standing_offer
from avatar.display_history import DisplayHistory
from avatar.page_events import BookedEvent, DisplayState, MessageEvent, RejectionEvent
from avatar.room import Room
from avatar.settings import AvatarSettings
from avatar.speech_output import SpeechOutput
from avatar.speech_queue import SpeechRequest
from avatar.ssml import SpeechText, prepare
from humaine_platform.models import HUMAN, AgentMessage, Bid, LogEntry, Message, Rejection
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import AgentMessageSeen, EOVerdict, Stage, new_id, now_ms

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

MESSAGE_KEY_FIELDS = ("speaker", "addressee", "text", "timeStamp", "timestamp", "bid")
"""What tells one forwarded message from another (the same one twice is booked once)."""


def message_key(body: Mapping[str, Any]) -> str:
    """The key the ledger books a forwarded Accept under (a hash of its wire form, ``body``)."""
    fields = {k: body.get(k) for k in MESSAGE_KEY_FIELDS}
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _bid_view(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The bid of a message's wire form as the display shows it (an agent's typed bid, or a
    human's, when one came along, as sent)."""
    bid = body.get("bid")
    return bid if isinstance(bid, dict) else None


def _keep_last_human(shown: MessageEvent, state: DisplayState) -> None:
    state.last_human = shown


class MessageIntake:
    """The EO's permitted messages and its verdicts, taken in by the room."""

    def __init__(self, settings: AvatarSettings, avatars: list[str], room: Room, speech: SpeechOutput,
                 history: DisplayHistory) -> None:
        self._settings = settings
        self._avatars = list(avatars)
        self._room = room
        self._speech = speech
        self._history = history
        self._counters: collections.Counter[str] = collections.Counter()

    def counts(self) -> dict[str, int]:
        """``messages``: how many the EO forwarded (in ``/health``)."""
        return dict(self._counters)

    def receive_message(self, message: Message) -> str:
        """A permitted message: show it, and if an avatar said it, queue it for speech. Returns
        what became of it."""
        self._counters["messages"] += 1
        received = now_ms()
        message_id = new_id()
        body = message.body()
        self._room.bus.publish(self._room.bus.topics.agent_message(), AgentMessageSeen(source=self._room.source, message=body))
        limits = self._settings.ssml_limits(message.speaker if message.speaker in self._avatars else None)
        text = prepare(message.text, limits)
        event = MessageEvent(message_id=message_id, speaker=message.speaker, addressee=message.addressee, text=text.plain,
                             bid=_bid_view(body), at=now_ms())
        if message.speaker == HUMAN:
            self._room.hub.emit(event, functools.partial(_keep_last_human, event))
            return "displayed"
        if isinstance(message, AgentMessage) and message.bid is not None:
            self._keep_books(message, message.bid, text.plain, message_key(body))
        if message.speaker not in self._avatars:
            log.warning("message from unknown speaker %r not spoken (avatars: %s)", message.speaker, self._avatars)
            self._room.hub.emit(event.model_copy(update={"verdict": "unknown_speaker"}))
            return "unknown_speaker"
        verdict = self._speak(message, message_id, text, received)
        self._room.hub.emit(event.model_copy(update={"verdict": verdict}))
        return verdict

    def _speak(self, message: Message, message_id: str, text: SpeechText, received: int) -> str:
        """An avatar's message to the speech queue (or only its gestures, when it says nothing)."""
        wanted = gestures.parse_field((message.model_extra or {}).get(gestures.GESTURE_FIELD))
        if wanted.unknown:
            log.warning("%s asked for unknown gesture(s) %s; known: %s", message.speaker, wanted.unknown, ", ".join(gestures.VOCABULARY))
        if text.dropped:
            log.info("%s's message %s: markup espeak-ng cannot use was removed: %s", message.speaker, message_id, text.dropped)
        if text.cut and text.spoken_words <= self._settings.max_words:
            log.warning("%s's message %s would speak past max_speaking_s (%g s): only its first %.0f s are spoken",
                        message.speaker, message_id, self._settings.max_speaking_s, text.expected_s)
        for mark in text.marks:
            name = gestures.from_mark(mark)
            if name is not None and not gestures.is_known(name):
                log.warning("%s's text has an unknown gesture mark %r; ignored", message.speaker, mark)
        if not text.plain and not text.spoken_words:  # words past the budget are still refused by R4 (one line)
            for name in wanted.names:
                self._speech.gesture(message.speaker, name, message_id)
            return "gesture_only"
        request = SpeechRequest(message.speaker, text, message_id, wanted.names, stages={Stage.RECEIVED: received})
        return self._speech.submit(request)

    def _keep_books(self, message: AgentMessage, bid: Bid, plain: str, key: str) -> None:
        """A seller's permitted bid into the ledger: an offer is that seller's current offer;
        an Accept addressed to the buyer is a deal the EO has booked (it forwards an Accept only
        after every human side said yes, and books it for speaker and addressee)."""
        try:
            rnd = self._room.round_events.round_of(message.roundId)
            if is_standing_offer(bid):
                self._room.ledger.set_offer(rnd.key, message.speaker, bid, plain, now_ms())
            elif is_booked_deal(message):
                deal = self._room.ledger.book_deal(rnd.key, message.speaker, bid, plain, key, now_ms())
                if deal is not None:
                    log.info("round %s: the EO booked %s's deal: %s for %.2f", rnd.round_id, message.speaker, deal.goods, deal.price)
                    self._room.hub.emit(BookedEvent(seller=deal.seller, goods=deal.goods, price=deal.price, prompt_id=deal.prompt_id,
                                               at=deal.booked_ms))
            else:
                return
            self._room.books.changed()
        except Exception as exc:  # books that cannot be kept or shown are said; the message is still spoken
            _notes.error(("books", type(exc).__name__), "the round's books cannot be kept: %s: %s", type(exc).__name__, exc)

    def receive_log(self, entry: LogEntry) -> None:
        """The EO's verdict on a proposed message: on MQTT (the transcript worker reads its own
        outcomes there) and on the display."""
        self._publish_verdict("log", entry.permitted, entry.rationale, entry)
        self._history.add(entry.speaker, prepare(entry.text).plain, entry.permitted, entry.rationale)

    def receive_rejection(self, rejection: Rejection) -> None:
        self._publish_verdict("rejection", False, rejection.rationale, rejection)
        log.info("the EO blocked %s's message (%s): %s", rejection.speaker, rejection.rationale, rejection.text[:80])
        text = prepare(rejection.text).plain
        self._room.hub.emit(RejectionEvent(speaker=rejection.speaker, text=text, rationale=rejection.rationale))
        self._history.add(rejection.speaker, text, False, rejection.rationale)

    def _publish_verdict(self, via: Literal["log", "rejection"], permitted: bool, rationale: str | None,
                         echoed: LogEntry | Rejection) -> None:
        message = echoed.as_sent()  # what the EO said: a role it sent as null is not ours to fill in here
        for key in ("permitted", "rationale"):
            message.pop(key, None)
        self._room.bus.publish(
            self._room.bus.topics.eo_verdict(),
            EOVerdict(source=self._room.source, via=via, permitted=permitted, rationale=rationale, message=message),
        )
