"""The Avatar Controller's collaborators one at a time, with a recording bus and a scripted speaker:
what an utterance tells the bus and the display as it is heard, and what a seller's typed bid
leaves in the round's books."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

from avatar.display import DisplayHub
from avatar.display_history import DisplayHistory
from avatar.eo_intake import MessageIntake, message_key
from avatar.room import Room
from avatar.room_ledger import ledger_in_memory
from avatar.round_books import RoundBooks
from avatar.round_state import RoundEvents
from avatar.settings import AvatarSettings
from avatar.speech_output import SpeechOutput
from avatar.speech_queue import SpeechRequest
from avatar.ssml import prepare
from hardware.speaker import Speaker, SpeechEvent, SpokenUtterance
from humaine_platform.models import parse_message
from workers.runtime.messages import BargeIn, Envelope, Gesture, Speaking, VadEvent
from workers.runtime.topics import Topic, Topics

AVATARS = ["Celia", "Watson"]


class RecordingBus:
    """The bus the parts publish on, kept in a list."""

    def __init__(self) -> None:
        self.topics = Topics("parts")
        self.published: list[Envelope] = []

    def publish(self, topic: Topic, message: Envelope) -> None:
        self.published.append(message)

    def subscribe(self, topic: Topic, model: Any, handler: Any) -> None: ...

    def own(self, topic: Topic, model: Any, current: Any) -> None: ...


class ScriptedSink:
    latency_s = 0.0

    def describe(self) -> str:
        return "scripted"


class ScriptedSpeaker:
    """Calls back as a speaker does: begin, a gesture mark, phonemes, a word, end."""

    def __init__(self) -> None:
        self.sink = ScriptedSink()
        self.cancelled = 0
        self.seen_while_speaking: Callable[[], None] = lambda: None

    def speak(self, ssml: str, voice: Any, name: str, on_begin: Callable[[], None], on_end: Callable[[SpokenUtterance], None],
              on_word: Callable[[SpeechEvent], None], on_mark: Callable[[SpeechEvent], None], max_s: float,
              on_phonemes: Callable[[list[SpeechEvent]], None]) -> SpokenUtterance:
        on_begin()
        on_mark(SpeechEvent("mark", "gesture:nod", 10))
        on_phonemes([SpeechEvent("phoneme", "p", 0), SpeechEvent("phoneme", "a", 50)])
        on_word(SpeechEvent("word", "Deal", 0))
        self.seen_while_speaking()
        result = SpokenUtterance(name=name, sample_rate=16000, cancelled=self.cancelled > 0)
        on_end(result)
        return result

    def cancel(self) -> None:
        self.cancelled += 1

    def close(self) -> None: ...


def test_an_utterance_tells_the_bus_and_the_display_as_it_is_heard() -> None:
    bus, hub, speaker = RecordingBus(), DisplayHub(AVATARS, "buyer"), ScriptedSpeaker()
    speech = SpeechOutput(AvatarSettings().for_room(AVATARS), AVATARS, bus, "avatar", hub, cast(Speaker, speaker))
    captions: list[Any] = []

    def while_speaking() -> None:
        captions.append(hub.snapshot().speaking)
        speech.barge_in("t", BargeIn(source="mic", level_db=-20.0, echo_db=-40.0, utterance_id="u1", at=1))

    speaker.seen_while_speaking = while_speaking
    speech.start()
    assert speech.submit(SpeechRequest("Celia", prepare("Deal."), "m1")) == "queued"
    assert speech.wait_spoken(1, 5)
    speech.stop()
    speaking = [m for m in bus.published if isinstance(m, Speaking) and m.message_id == "m1"]
    assert [s.state for s in speaking] == ["begin", "end"]
    assert speaking[1].cut and speaking[1].visemes == [(0, "closed"), (50, "aa")]
    assert [(g.avatar, g.name, g.message_id) for g in bus.published if isinstance(g, Gesture)] == [("Celia", "nod", "m1")]
    assert captions[0] is not None and (captions[0].avatar, captions[0].message_id, captions[0].text) == ("Celia", "m1", "Deal.")
    assert hub.snapshot().speaking is None and hub.snapshot().captions["Celia"] == captions[0]  # the caption stays shown
    assert speech.counts() == {"barge_ins": 1} and speech.spoken()[0].result.cancelled
    assert speech.health()["spoken"] == 1


def test_a_sellers_typed_bid_goes_into_the_books_once() -> None:
    settings = AvatarSettings().for_room(AVATARS)
    bus, hub, ledger = RecordingBus(), DisplayHub(AVATARS, "buyer"), ledger_in_memory()
    key = ledger.begin_round("r1", {}, 50.0, "USD", "round", 1, None).key
    speech = SpeechOutput(settings, AVATARS, bus, "avatar", hub, cast(Speaker, ScriptedSpeaker()))
    room = Room(ledger, RoundEvents(ledger), RoundBooks(ledger, hub, settings), bus, "avatar", hub)
    intake = MessageIntake(settings, AVATARS, room, speech, DisplayHistory(room))
    base = {"addressee": "Human", "role": "seller", "environmentUUID": "e", "roundId": "r1", "timeStamp": "2020-02-20T08:08:05.825Z"}
    offer = parse_message({**base, "speaker": "Celia", "text": "Two eggs for 0.8 USD.",
                           "bid": {"type": "SellOffer", "quantity": {"egg": 2, "milk": 0}, "price": {"unit": "USD", "value": 0.8}}})
    accept = parse_message({**base, "speaker": "Celia", "text": "Deal.",
                            "bid": {"type": "Accept", "quantity": {"egg": 2}, "price": {"unit": "USD", "value": 0.8}}})
    assert intake.receive_message(offer) == "queued"
    book = ledger.book(key)
    assert [(o.seller, o.goods, o.price) for o in book.offers] == [("Celia", {"egg": 2}, 0.8)]
    intake.receive_message(accept)
    intake.receive_message(accept)  # the same message twice is booked once
    assert [(d.seller, d.goods, d.price) for d in ledger.book(key).deals] == [("Celia", {"egg": 2}, 0.8)]
    assert message_key(accept.body()) != message_key(offer.body()) and intake.counts() == {"messages": 3}


class BrokenBooks(RoundBooks):
    """Books whose views cannot be derived (a bug in a view, a screen that fails)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.tries = threading.Semaphore(0)

    def refresh(self) -> Any:
        self.tries.release()
        raise RuntimeError("a view failed")


def test_a_failing_refresh_neither_ends_the_views_thread_nor_stops_speech() -> None:
    settings = AvatarSettings().for_room(AVATARS)
    bus, hub, ledger = RecordingBus(), DisplayHub(AVATARS, "buyer"), ledger_in_memory()
    ledger.begin_round("r1", {}, 50.0, "USD", "round", 1, None)
    books = BrokenBooks(ledger, hub, settings)
    speech = SpeechOutput(settings, AVATARS, bus, "avatar", hub, cast(Speaker, ScriptedSpeaker()))
    room = Room(ledger, RoundEvents(ledger), books, bus, "avatar", hub)
    intake = MessageIntake(settings, AVATARS, room, speech, DisplayHistory(room))
    offer = parse_message({"addressee": "Human", "role": "seller", "environmentUUID": "e", "roundId": "r1", "speaker": "Celia",
                           "timeStamp": "2020-02-20T08:08:05.825Z", "text": "Two eggs for 0.8 USD.",
                           "bid": {"type": "SellOffer", "quantity": {"egg": 2}, "price": {"unit": "USD", "value": 0.8}}})
    assert intake.receive_message(offer) == "queued"  # no views' thread: the refresh ran here, and failed
    assert books.tries.acquire(timeout=0)
    books.start()
    try:
        for _ in range(2):
            books.changed()
            assert books.tries.acquire(timeout=5)  # tried on the views' thread, and failed
        assert intake.receive_message(offer) == "queued"
        assert books._thread is not None and books._thread.is_alive()  # the views' thread outlived each failure
    finally:
        books.stop()


def test_after_a_barge_in_the_next_answer_waits_for_the_buyer_to_finish() -> None:
    bus, hub, speaker = RecordingBus(), DisplayHub(AVATARS, "buyer"), ScriptedSpeaker()
    speech = SpeechOutput(AvatarSettings().for_room(AVATARS), AVATARS, bus, "avatar", hub, cast(Speaker, speaker))
    barged = threading.Event()

    def while_speaking() -> None:
        if not barged.is_set():  # the buyer talks over Celia; Watson's answer is already queued
            barged.set()
            speech.barge_in("t", BargeIn(source="mic", level_db=-20.0, echo_db=-40.0, utterance_id="u7", at=1))

    speaker.seen_while_speaking = while_speaking
    speech.start()
    speech.submit(SpeechRequest("Celia", prepare("How about two eggs."), "m1"))
    speech.submit(SpeechRequest("Watson", prepare("I can beat that."), "m2"))
    assert speech.wait_spoken(1, 5)
    assert not speech.wait_spoken(2, 0.3)  # the buyer has the floor
    speech.on_vad("t", VadEvent(source="mic", event="speech_end", utterance_id="other", at=2))
    assert not speech.wait_spoken(2, 0.3)  # someone else's end is not the buyer's
    speech.on_vad("t", VadEvent(source="mic", event="speech_end", utterance_id="u7", at=3))
    assert speech.wait_spoken(2, 5)  # the buyer finished: Watson answers
    speech.stop()
    assert [s.request.message_id for s in speech.spoken()] == ["m1", "m2"]
