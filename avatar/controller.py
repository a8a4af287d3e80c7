"""What the Avatar Controller does with each thing the EO tells it (no HTTP here).

Every public method returns at once: the EO waits for our HTTP answer (it has no timeout), so
anything slow - speech above all - is handed to the speech queue's thread. The one deliberate
exception is ``/confirmAccept`` in ``operator`` mode, which waits for a person by design.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import quote

from avatar import gestures, visemes
from avatar.books.ledger import RoomLedger
from avatar.books.rules import is_booked_deal, is_standing_offer
from avatar.competition.store import HUMAN_SERVICES_FACT
from avatar.confirm_queue import SHUTDOWN, Answer, ConfirmQueue
from avatar.display import AUDIO_PATH, DisplayHub
from avatar.page_events import (
    AttentionEvent,
    BookedEvent,
    CameraStateEvent,
    ConfirmDoneEvent,
    DisplayState,
    GestureEvent,
    LogEvent,
    MessageEvent,
    NotSpokenEvent,
    RejectionEvent,
    RoundEvent,
    SpeakingBegin,
    SpeakingEnd,
    UtilityEvent,
    VisemesEvent,
    WordEvent,
)
from avatar.round_books import RoundBooks
from avatar.round_state import RoundEvents, state_of
from avatar.settings import AvatarSettings
from avatar.speech_queue import SpeechQueue, SpeechRequest, Verdict
from avatar.ssml import SpeechText, prepare
from formats import written
from hardware.speaker import Speaker, SpeechEvent, SpokenUtterance
from hardware.speaker_stream import stream_sink
from humaine_platform.endpoints import CONFIRM_ACCEPT_STATUS, HUMAN_SERVICE_NAMES
from humaine_platform.models import (
    HUMAN,
    AgentMessage,
    ConfirmAccept,
    EndRound,
    LogEntry,
    Message,
    Rejection,
    RoundMetadata,
    RoundTotals,
    SetUtility,
    StartRound,
    confirm_accept_answer,
)
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import (
    AgentMessageSeen,
    Attention,
    BargeIn,
    ConfirmAnswer,
    ConfirmPending,
    Envelope,
    EOVerdict,
    Gesture,
    RoundState,
    Speaking,
    Stage,
    Status,
    new_id,
    now_ms,
)
from workers.runtime.topics import Topic, Topics
from workers.runtime.worker_ids import AVATAR as AVATAR_WORKER
from workers.runtime.worker_ids import CAMERA as CAMERA_WORKER
from workers.runtime.worker_ids import MICROPHONE as MICROPHONE_WORKER

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

CONFIRM_REJECTED_STATUS = "rejected"
"""Our answer when the operator declines a deal: anything but the EO's exact yes rejects it."""
HISTORY_KEPT = 64
ROUND_VIEW = {"round_id", "phase", "durations", "phase_started", "phase_deadline"}
"""The round state's fields the display shows."""
DISPLAY_LOG_KEPT = 30
HISTORY_DUPLICATE_WINDOW = 5
"""How far back a blocked message counts as already shown."""


def _message_key(body: dict[str, Any]) -> str:
    """What tells one forwarded message from another (the same one twice is booked once)."""
    fields = {k: body.get(k) for k in ("speaker", "addressee", "text", "timeStamp", "timestamp", "bid")}
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _answer(accepted: bool) -> dict[str, Any]:
    """One of the two answers the EO understands to ``/confirmAccept``."""
    return confirm_accept_answer() if accepted else {"status": CONFIRM_REJECTED_STATUS}


class Publisher(Protocol):
    """The part of :class:`workers.runtime.bus.Bus` the controller uses."""

    topics: Topics

    def publish(self, topic: Topic, message: Envelope) -> None: ...

    def subscribe(self, topic: Topic, model: Any, handler: Any) -> None: ...

    def own(self, topic: Topic, model: Any, current: Any) -> None: ...


@dataclass
class Spoken:
    """One finished utterance (kept for /health, tests and the benchmark)."""

    request: SpeechRequest
    result: SpokenUtterance


class AvatarController:
    """Speech, gestures, round state and the display feed of one room."""

    def __init__(
        self,
        settings: AvatarSettings,
        avatars: list[str],
        bus: Publisher,
        speaker: Speaker,
        source: str = AVATAR_WORKER,
        *,
        ledger: RoomLedger,
    ) -> None:
        """``ledger``: the room's books (:mod:`avatar.room_ledger`: under ``data_dir`` in a worker)."""
        self.settings = settings.for_room(avatars)
        self.avatars = list(avatars)
        self.bus = bus
        self.topics = bus.topics
        self.speaker = speaker
        self.source = source
        self.hub = DisplayHub(self.avatars, settings.confirm_accept, self.settings.looks(self.avatars))
        self.buyer_can_speak = False
        """The microphone worker is online: the buyer may answer a confirmation by voice."""
        self.voices_in_use: dict[str, str] = {}
        """Avatar -> the engine and voice that really speak it (the fallback when its own is missing)."""
        self.ledger = ledger
        self.books = RoundBooks(self.ledger, self.hub, settings)
        self.rounds = RoundEvents(self.ledger)
        self.confirms = ConfirmQueue(self.ledger, settings.confirm_timeout_s,
                                     settings.confirm_timeout_answer == CONFIRM_ACCEPT_STATUS, self._confirms_changed)
        self.limits = settings.ssml_limits()
        self.queue = SpeechQueue(
            self._speak, settings.queue_max, settings.stale_after_s, settings.max_words, on_drop=self._dropped
        )
        self.history: collections.deque[Spoken] = collections.deque(maxlen=HISTORY_KEPT)
        self._history_cond = threading.Condition()
        self.counters: collections.Counter[str] = collections.Counter()
        self._speaking: str | None = None
        """The message id being spoken right now (speech-queue thread sets and clears it)."""
        self.alert_listeners: list[Callable[[str, str], None]] = []
        """Told ``(kind, text)`` of what the operator must know about the round's books (the console)."""
        self.cut_prompts = 0
        """Confirmations a previous run of the controller left unanswered (found at start)."""
        self.eo_url: str | None = None
        """The EO whose books the round's are held against while it lasts (:mod:`avatar.reconcile`)..."""
        self.books_check: dict[str, Any] | None = None
        """...and what the last check of them found."""

    # -- lifecycle ---------------------------------------------------------------------------
    def check(self) -> None:
        """Fail early, with a readable reason, on a voice espeak-ng does not have."""
        for avatar in self.avatars:
            voice = self.speaker.check_voice(self.settings.voice_for(avatar))
            self.voices_in_use[avatar] = f"{voice.engine} {voice.voice}"

    def start(self) -> None:
        # A controller that died mid-sentence left a retained "begin" behind, which would gate
        # the microphone for good: start from "nobody is speaking".
        for avatar in self.avatars:
            self.bus.publish(self.topics.speaking(avatar), Speaking(source=self.source, avatar=avatar, state="end"))
        self._take_up_the_round()
        self.books.start()
        self.queue.start()
        self.bus.subscribe(self.topics.attention(), Attention, self._on_attention)
        self.bus.subscribe(self.topics.round_state(), RoundState, self._on_retained_round)
        # the round state is ours: only we hear the EO's round events, and the EO offers no way to
        # ask which round runs (/viewQueue needs its id); garbage retained there, or a broker that
        # lost it, would leave every worker that (re)connects without a round, so we publish what
        # we know over it at once
        self.bus.own(self.topics.round_state(), RoundState, self.round_state)
        self.bus.subscribe(self.topics.barge_in(), BargeIn, self._on_barge_in)
        self.bus.subscribe(self.topics.status(CAMERA_WORKER), Status, self._on_camera_status)
        self.bus.subscribe(self.topics.status(MICROPHONE_WORKER), Status, self._on_microphone_status)
        self.bus.subscribe(self.topics.confirm_answer(), ConfirmAnswer, self._on_confirm_answer)
        if self.ledger.current() is not None:
            self.refresh_round()  # the ledger's round over whatever the broker kept
            self._restore_history()
        self._publish_pending()  # a confirmation a previous run left waiting is gone with it

    def _take_up_the_round(self) -> None:
        """A restart: the round goes on from the ledger. Confirmations the previous run left
        unanswered were cut with its connections (the platform EO exits on that): said here, and
        the round's books are then checked against the EO's (:mod:`avatar.reconcile`)."""
        cut = self.ledger.cut_waiting_prompts()
        self.cut_prompts = len(cut)
        current = self.ledger.current()
        if cut and current is not None:
            text = (f"the Avatar Controller stopped while {len(cut)} confirmation(s) of round {current.round_id} waited: the EO "
                    f"got no answer to them (the platform's EO exits then; the stand-in does not book them)")
            log.error("%s", text)
            self.ledger.note(current.key, text)
        if current is not None and current.open:
            log.info("continuing round %s (phase %s) from the room's ledger", current.round_id, current.phase)
        self.books.changed()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The HTTP server's event loop (confirmations are answered on it)."""
        self.hub.attach(loop)
        self.confirms.loop = loop

    def detach(self) -> None:
        self.hub.detach()

    def answer_pending(self) -> int:
        """Give every waiting confirmation its configured answer (on the event loop): the EO gets
        its answer before the controller stops. Returns how many there were."""
        answered = self.confirms.answer_all(SHUTDOWN)
        if answered:
            log.info("stopping: %d waiting confirmation(s) answered %s", answered, self.settings.confirm_timeout_answer)
        return answered

    def stop(self) -> None:
        self.books.stop()
        self.speaker.cancel()
        self.queue.stop()
        self.speaker.close()

    def health(self) -> dict[str, Any]:
        stats = self.queue.stats
        return {
            "speaker": self.speaker.sink.describe(),
            "queue": self.queue.pending(),
            "spoken": stats.spoken,
            "refused_too_long": stats.refused_too_long,
            "refused_full": stats.refused_full,
            "dropped_stale": stats.dropped_stale,
            "failed": stats.failed,
            "display_clients": self.hub.client_count,
            "round": self.round_state().model_dump(include={"round_id", "phase", "phase_deadline"}),
            "confirms_waiting": len(self.confirms),
            "books_check": self.books_check,
            "ledger": self.ledger.where,
            "voices": dict(self.voices_in_use),
            **dict(self.counters),
        }

    def round_state(self) -> RoundState:
        """The round as the ledger has it, as the retained round state."""
        return state_of(self.ledger.current(), self.source)

    def alert(self, kind: str, text: str) -> None:
        """Something the operator must know about the round's books: the log and the console."""
        _notes.warning((kind, text), "%s", text)
        for listener in self.alert_listeners:
            try:
                listener(kind, text)
            except Exception as exc:  # the console must never cost the EO an answer
                log.debug("an alert listener failed: %s", exc)

    # -- messages ----------------------------------------------------------------------------
    def receive_message(self, message: Message) -> str:
        """A permitted message: show it, and if an avatar said it, queue it for speech."""
        self.counters["messages"] += 1
        received = now_ms()
        body = message.body()
        message_id = new_id()
        self.bus.publish(self.topics.agent_message(), AgentMessageSeen(source=self.source, message=body))
        text = prepare(message.text, self.settings.ssml_limits(message.speaker) if message.speaker in self.avatars else self.limits)
        event = MessageEvent(message_id=message_id, speaker=message.speaker, addressee=message.addressee, text=text.plain,
                             bid=body.get("bid"), at=now_ms())
        if message.speaker == HUMAN:
            shown = event.wire()

            def keep_human(state: DisplayState) -> None:
                state.last_human = shown

            self.hub.emit(event, keep_human)
            return "displayed"
        self._keep_books(message, body, text.plain)
        if message.speaker not in self.avatars:
            log.warning("message from unknown speaker %r not spoken (avatars: %s)", message.speaker, self.avatars)
            self.hub.emit(event.model_copy(update={"verdict": "unknown_speaker"}))
            return "unknown_speaker"
        wanted = gestures.parse_field((message.model_extra or {}).get(gestures.GESTURE_FIELD))
        if wanted.unknown:
            log.warning("%s asked for unknown gesture(s) %s; known: %s", message.speaker, wanted.unknown, ", ".join(gestures.VOCABULARY))
        if text.dropped:
            log.info("%s's message %s: markup espeak-ng cannot use was removed: %s", message.speaker, message_id, text.dropped)
        if text.cut and text.spoken_words <= self.settings.max_words:
            log.warning("%s's message %s would speak past max_speaking_s (%g s): only its first %.0f s are spoken",
                        message.speaker, message_id, self.settings.max_speaking_s, text.expected_s)
        self._check_marks(message.speaker, text)
        if not text.plain and not text.spoken_words:  # words past the budget are still refused by R4 (one line)
            for name in wanted.names:
                self._gesture(message.speaker, name, message_id)
            self.hub.emit(event.model_copy(update={"verdict": "gesture_only"}))
            return "gesture_only"
        request = SpeechRequest(message.speaker, text, message_id, wanted.names, stages={Stage.RECEIVED: received})
        verdict: Verdict = self.queue.submit(request)
        self.hub.emit(event.model_copy(update={"verdict": verdict}))
        return verdict

    def _keep_books(self, message: Message, body: dict[str, Any], plain: str) -> None:
        """A seller's permitted message into the ledger: an offer is that seller's current offer;
        an Accept with its bid addressed to the buyer is a deal the EO has booked (it forwards an
        Accept only after every human side said yes, and books it for speaker and addressee)."""
        if not isinstance(message, AgentMessage) or message.bid is None:
            return
        bid = message.bid
        offer = is_standing_offer(bid)
        if not (offer or is_booked_deal(message)):
            return
        try:
            rnd = self.rounds.round_of(body.get("roundId"))
            if offer:
                self.ledger.set_offer(rnd.key, message.speaker, bid, plain, now_ms())
            else:
                deal = self.ledger.book_deal(rnd.key, message.speaker, bid, plain, _message_key(body), now_ms())
                if deal is not None:
                    log.info("round %s: the EO booked %s's deal: %s for %.2f", rnd.round_id, message.speaker, deal.goods, deal.price)
                    self.hub.emit(BookedEvent(seller=deal.seller, goods=deal.goods, price=deal.price, prompt_id=deal.prompt_id,
                                              at=deal.booked_ms))
        except Exception as exc:  # a ledger that cannot be written is said; the message is still spoken
            _notes.error(("books", type(exc).__name__), "the round's books cannot be kept: %s: %s", type(exc).__name__, exc)
            return
        self.books.changed()

    def _check_marks(self, avatar: str, text: SpeechText) -> None:
        for mark in text.marks:
            name = gestures.from_mark(mark)
            if name is not None and not gestures.is_known(name):
                log.warning("%s's text has an unknown gesture mark %r; ignored", avatar, mark)

    # -- speech (speech-queue thread) --------------------------------------------------------
    def _speak(self, request: SpeechRequest) -> None:
        avatar, message_id, plain = request.avatar, request.message_id, request.text.plain
        utterance_name = f"{avatar}-{message_id}"
        mouth: visemes.Timeline = []

        def on_begin() -> None:
            self._speaking = message_id
            at = now_ms()
            request.stages[Stage.FIRST_AUDIO] = at
            self.bus.publish(
                self.topics.speaking(avatar),
                Speaking(source=self.source, avatar=avatar, state="begin", message_id=message_id, text=plain, at=at,
                         stages=dict(request.stages)),
            )
            begin = SpeakingBegin(avatar=avatar, text=plain, message_id=message_id, at=at,
                                  latency_ms=round(self.speaker.sink.latency_s * 1000))
            if stream_sink(self.speaker.sink) is not None:
                begin.audio = f"{AUDIO_PATH}/{quote(utterance_name)}"  # the page plays it
            caption = begin.payload()

            def update(state: DisplayState) -> None:
                state.speaking = caption
                state.captions[avatar] = caption

            self.hub.emit(begin, update)
            for name in request.gestures:
                self._gesture(avatar, name, message_id)

        def on_mark(event: SpeechEvent) -> None:
            name = gestures.from_mark(event.name)
            if name is not None and gestures.is_known(name):
                self._gesture(avatar, name, message_id)

        def on_phonemes(events: list[SpeechEvent]) -> None:
            shapes = visemes.timeline(events, mouth[-1][1] if mouth else None)
            if not shapes:
                return
            mouth.extend(shapes)
            self.hub.emit(VisemesEvent(avatar=avatar, message_id=message_id, visemes=shapes))

        def on_word(event: SpeechEvent) -> None:
            self.hub.emit(WordEvent(avatar=avatar, message_id=message_id, word=event.name))

        def on_end(result: SpokenUtterance) -> None:
            self._speaking = None
            at = now_ms()
            request.stages[Stage.SPEAKING_END] = at
            # kept before it is announced: whoever hears "end" finds the utterance in the history
            with self._history_cond:
                self.history.append(Spoken(request, result))
                self._history_cond.notify_all()
            self.bus.publish(
                self.topics.speaking(avatar),
                Speaking(source=self.source, avatar=avatar, state="end", message_id=message_id, text=plain, at=at,
                         stages=dict(request.stages), cut=result.cancelled, visemes=list(mouth)),
            )

            def update(state: DisplayState) -> None:
                if state.speaking and state.speaking["message_id"] == message_id:
                    state.speaking = None

            self.hub.emit(SpeakingEnd(avatar=avatar, message_id=message_id, at=at, cut=result.cancelled), update)

        spoken = self.speaker.speak(
            request.text.ssml,
            self.settings.voice_for(avatar),
            name=utterance_name,
            on_begin=on_begin,
            on_end=on_end,
            on_word=on_word,
            on_mark=on_mark,
            max_s=self.settings.max_speaking_s,
            on_phonemes=on_phonemes,
        )
        if spoken.cut:
            log.warning("%s's message %s was cut after %.0f s (max_speaking_s)", avatar, message_id, self.settings.max_speaking_s)

    def wait_spoken(self, count: int, timeout: float) -> bool:
        """True once ``count`` utterances have finished (tests, benchmark)."""
        with self._history_cond:
            return self._history_cond.wait_for(lambda: len(self.history) >= count, timeout)

    def _gesture(self, avatar: str, name: str, message_id: str) -> None:
        at = now_ms()
        self.bus.publish(
            self.topics.gesture(avatar),
            Gesture(source=self.source, avatar=avatar, name=name, at=at, message_id=message_id),
        )
        self.hub.emit(GestureEvent(avatar=avatar, name=name, message_id=message_id, at=at))

    def _dropped(self, request: SpeechRequest, reason: str) -> None:
        self.counters[f"not_spoken_{reason}"] += 1
        self.hub.emit(NotSpokenEvent(avatar=request.avatar, message_id=request.message_id, reason=reason))

    # -- round life cycle ----------------------------------------------------------------------
    def refresh_round(self) -> None:
        """The round as the ledger has it: the retained round state, the display's timer, and
        every view of the round's books."""
        state = self.round_state()
        self.bus.publish(self.topics.round_state(), state)
        self.hub.set_round(RoundEvent(**state.model_dump(include=ROUND_VIEW), now=now_ms()))
        self.books.changed()

    def round_metadata(self, body: RoundMetadata) -> None:
        self.rounds.metadata(body)
        self.refresh_round()

    def start_round(self, body: StartRound) -> None:
        self.rounds.start(body)
        self.refresh_round()

    def end_round(self, body: EndRound) -> None:
        self.rounds.end(body)
        self.refresh_round()

    def round_totals(self, body: RoundTotals) -> None:
        self.rounds.totals(body, body.body()["roundTotals"])
        self.refresh_round()

    def set_utility(self, body: SetUtility) -> None:
        """The buyer's utility function: the buyer page shows what each good is worth."""
        log.info("utility for %s (round %s): %s", body.name, body.roundId, ", ".join(body.utility))
        self.hub.emit(UtilityEvent(name=body.name, roundId=body.roundId, goods=list(body.utility)))
        rnd = self.rounds.round_of(body.roundId)
        self.ledger.set_utility(rnd.key, body.utility)
        if body.name and body.name not in self.avatars:
            # the name the EO calls this service by (its negotiatorsInfo): ending a round on the
            # platform's EO names it again (humaine_platform.end_round)
            known = self.ledger.recall(HUMAN_SERVICES_FACT) or []
            if body.name not in known:
                self.ledger.remember(HUMAN_SERVICES_FACT, [*known, body.name][-len(HUMAN_SERVICE_NAMES):])
        self.books.changed()

    def name_buyer(self, label: str, running: bool) -> None:
        """The operator named the buyer: of the next rounds, and of the round running when
        ``running`` (the round's records are filed under the name)."""
        current = self.ledger.current()
        self.ledger.name_buyer(label, current.key if running and current is not None and current.open else None)
        self.refresh_round()

    def undelivered(self, round_id: object) -> None:
        """One of the buyer's utterances in this round never reached the EO (the day book counts them)."""
        if round_id is not None and self.ledger.count_undelivered(round_id):
            self.books.changed()

    def receive_log(self, entry: LogEntry) -> None:
        """The EO's verdict on a proposed message: on MQTT (the transcript worker reads its own
        outcomes there) and on the display."""
        self._publish_verdict("log", entry.permitted, entry.rationale, entry)
        self._add_history(entry.speaker, prepare(entry.text).plain, entry.permitted, entry.rationale)

    def receive_rejection(self, rejection: Rejection) -> None:
        self._publish_verdict("rejection", False, rejection.rationale, rejection)
        log.info("the EO blocked %s's message (%s): %s", rejection.speaker, rejection.rationale, rejection.text[:80])
        text = prepare(rejection.text).plain
        self.hub.emit(RejectionEvent(speaker=rejection.speaker, text=text, rationale=rejection.rationale))
        self._add_history(rejection.speaker, text, False, rejection.rationale)

    def _add_history(self, speaker: str, text: str, permitted: bool, rationale: str | None) -> None:
        """One line of the display's history. A blocked message the EO reports twice (its log
        and a rejection) is shown once."""
        event = LogEvent(speaker=speaker, text=text, permitted=permitted, rationale=rationale, at=now_ms())
        item = event.payload()
        key = (speaker, event.text, permitted)  # the text as the kept lines have it

        shown: list[bool] = []

        def update(state: DisplayState) -> bool:
            recent = state.log[-HISTORY_DUPLICATE_WINDOW:]
            if not permitted and any((i["speaker"], i["text"], i["permitted"]) == key for i in recent):
                return False
            state.log = [*state.log, item][-DISPLAY_LOG_KEPT:]
            shown.append(True)
            return True

        self.hub.emit(event, update)
        if shown:  # written after the display's lock is let go: the speaker's thread takes it too
            self._keep_log_line(item)

    def _keep_log_line(self, item: dict[str, Any]) -> None:
        """The history line in the ledger too: a restarted controller's display shows it again."""
        current = self.ledger.current()
        if current is None:
            return
        try:
            self.ledger.add_log_line(current.key, item["at"], item["speaker"], item["text"], item["permitted"], item["rationale"])
        except Exception as exc:  # shown all the same: a disk that fails must not cost the EO its answer
            _notes.warning(("log line", type(exc).__name__), "a history line was not kept: %s: %s", type(exc).__name__, exc)

    def _restore_history(self) -> None:
        """The current round's history as the display showed it before a restart."""
        current = self.ledger.current()
        if current is None:
            return
        lines = self.ledger.log_lines(current.key, DISPLAY_LOG_KEPT)
        if not lines:
            return

        def restore(state: DisplayState) -> None:
            state.log = [LogEvent(**line).payload() for line in lines]

        self.hub.emit(LogEvent(**lines[-1]), restore)

    def _publish_verdict(self, via: Literal["log", "rejection"], permitted: bool, rationale: str | None,
                         echoed: LogEntry | Rejection) -> None:
        message = echoed.as_sent()  # what the EO said: a role it sent as null is not ours to fill in here
        for key in ("permitted", "rationale"):
            message.pop(key, None)
        self.bus.publish(
            self.topics.eo_verdict(),
            EOVerdict(source=self.source, via=via, permitted=permitted, rationale=rationale, message=message),
        )

    # -- /confirmAccept --------------------------------------------------------------------------
    async def confirm_accept(self, body: ConfirmAccept | None) -> dict[str, Any]:
        """The EO's yes at once (``auto``, ``competition-ui``), or the answer of the person
        ``confirm_accept`` names (``buyer``: the buyer page or the buyer's voice; ``operator``: the
        display page). Prompts that arrive together are asked one at a time
        (:class:`~avatar.confirm_queue.ConfirmQueue`). Every prompt and its answer is written to the
        ledger before the EO hears the answer; the deal is the buyer's only once the EO forwards
        the booked Accept (:meth:`_keep_books`). A body that could not be read (``None``) gets
        the answer an unattended deal gets, never an error: the EO exits on anything but one of
        its two answers."""
        settings = self.settings
        timeout_yes = settings.confirm_timeout_answer == CONFIRM_ACCEPT_STATUS
        if body is None:
            return _answer(not settings.confirm_asks or timeout_yes)
        prompt_id = new_id()
        try:
            rnd = self.rounds.round_of(body.roundId)
            self.ledger.add_prompt(prompt_id, rnd.key, body.speaker, prepare(body.text).plain, body.bid, now_ms())
        except Exception as exc:  # the EO's answer does not wait for the disk
            _notes.error(("prompt", type(exc).__name__), "a confirmation cannot be written to the ledger: %s: %s",
                         type(exc).__name__, exc)
            return _answer(not settings.confirm_asks or timeout_yes)
        if not settings.confirm_asks:
            return self._answered_at_once(prompt_id, True, settings.confirm_accept)
        by_voice = settings.confirm_accept == "buyer" and self.buyer_can_speak
        if self.hub.client_count == 0 and not by_voice and not self.confirms:
            log.warning("nobody can confirm %s's accept (no page open, no microphone); answering %s at once", body.speaker,
                        settings.confirm_timeout_answer)
            return self._answered_at_once(prompt_id, timeout_yes, "no page")
        accepted, _by = await self.confirms.ask(prompt_id)
        return _answer(accepted)

    def _answered_at_once(self, prompt_id: str, accepted: bool, by: str) -> dict[str, Any]:
        self.ledger.answer_prompt(prompt_id, accepted, by, now_ms())
        self.books.changed()
        return _answer(accepted)

    def _confirms_changed(self, answer: Answer | None) -> None:
        """A prompt was queued, asked or answered: the retained pending prompt and the pages
        (an answer also as the buyer page's notice)."""
        self._publish_pending()
        if answer is not None:
            self.hub.emit(ConfirmDoneEvent(id=answer.prompt_id, accepted=answer.accepted, by=answer.by))
        self.books.changed()

    def decide(self, confirm_id: str, accepted: bool, by: str) -> bool:
        """A person answered confirmation ``confirm_id`` (on the event loop): the first answer
        wins, a later one (another page, the voice) changes nothing."""
        return self.confirms.decide(confirm_id, accepted, by)

    def _publish_pending(self) -> None:
        """Tell the room which confirmation is asked now (the buyer may answer it by voice):
        always the one the pages show, the first of the queue."""
        pending = ConfirmPending(source=self.source)
        head = self.confirms.head()
        prompt = self.ledger.prompt(head) if head is not None else None
        if prompt is not None:
            deal = written.goods(prompt.goods) + (f" for {written.money(prompt.price)}" if prompt.price is not None else "")
            pending = ConfirmPending(source=self.source, confirm_id=prompt.id, seller=prompt.seller, deal=deal,
                                     deadline=prompt.deadline_ms)
        self.bus.publish(self.topics.confirm_pending(), pending)

    def _on_confirm_answer(self, _topic: str, message: ConfirmAnswer) -> None:
        """The buyer said yes or no to the pending confirmation (MQTT thread)."""
        loop = self.confirms.loop
        if loop is None or loop.is_closed():
            return
        log.info("the buyer answered %s by voice: %r", "yes" if message.accept else "no", message.text[:60])
        loop.call_soon_threadsafe(self.decide, message.confirm_id, message.accept, "voice")

    # -- MQTT ---------------------------------------------------------------------------------
    def _on_retained_round(self, _topic: str, message: RoundState) -> None:
        adopted = self.rounds.adopt(message)
        if adopted is not None:
            log.info("continuing round %s (phase %s) from the retained round state", adopted.round_id, adopted.phase)
            self.refresh_round()

    def _on_barge_in(self, _topic: str, message: BargeIn) -> None:
        """The buyer talks over the avatar: stop the current utterance (its end says ``cut``)."""
        speaking = self._speaking
        if speaking is None:
            return
        self.counters["barge_ins"] += 1
        log.info("barge-in (%.1f dBFS over an echo of %.1f): stopping message %s", message.level_db, message.echo_db, speaking)
        self.speaker.cancel()

    def _on_microphone_status(self, _topic: str, message: Status) -> None:
        """Whether the buyer can answer a confirmation by voice (or typing, on a laptop)."""
        self.buyer_can_speak = message.state == "online"

    def _on_camera_status(self, _topic: str, message: Status) -> None:
        """Whether gaze is available: the display says "no camera" rather than "nobody"."""
        event = CameraStateEvent(state=message.state, detail=message.detail)
        view = event.payload()

        def keep(state: DisplayState) -> None:
            state.camera = view

        self.hub.emit(event, keep)

    def _on_attention(self, _topic: str, message: Attention) -> None:
        event = AttentionEvent(target=message.target, since=message.since)
        view = event.payload()

        def keep(state: DisplayState) -> None:
            state.attention = view

        self.hub.emit(event, keep)
