"""The Avatar Controller: the room's collaborators composed in one place (no HTTP here).

* :class:`~avatar.eo_intake.MessageIntake`: the EO's permitted messages and its verdicts;
* :class:`~avatar.speech_output.SpeechOutput`: the speech queue and what each utterance tells as it is heard;
* :class:`~avatar.confirmations.Confirmations`: ``/confirmAccept`` and who answers it;
* :class:`~avatar.round_life.RoundLife`: the EO's round events, the retained round state;
* :class:`~avatar.display_history.DisplayHistory` and :class:`~avatar.round_books.RoundBooks`: what the pages show.

Every method the EO's endpoints call returns at once: the EO waits for our HTTP answer (it has no
timeout), so anything slow - speech above all - is handed to the speech queue's thread. The one
deliberate exception is ``/confirmAccept`` in ``operator`` mode, which waits for a person by design.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Callable
from typing import Any

from avatar.books.ledger import RoomLedger
from avatar.confirmations import Confirmations
from avatar.display import DisplayHub
from avatar.display_history import DisplayHistory
from avatar.eo_intake import MessageIntake
from avatar.page_events import AttentionEvent, AttentionView, CameraStateEvent, CameraView, DisplayState
from avatar.room import Room
from avatar.room_bus import Publisher
from avatar.round_books import RoundBooks
from avatar.round_life import RoundLife
from avatar.round_state import RoundEvents
from avatar.settings import AvatarSettings
from avatar.speech_output import SpeechOutput
from hardware.speaker import Speaker
from humaine_platform.models import (
    ConfirmAccept,
    EndRound,
    LogEntry,
    Message,
    Rejection,
    RoundMetadata,
    RoundTotals,
    SetUtility,
    StartRound,
)
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import Attention, BargeIn, ConfirmAnswer, RoundState, Status, VadEvent, now_ms
from workers.runtime.worker_ids import AVATAR as AVATAR_WORKER
from workers.runtime.worker_ids import CAMERA as CAMERA_WORKER
from workers.runtime.worker_ids import MICROPHONE as MICROPHONE_WORKER

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)


@dataclasses.dataclass(frozen=True)
class BooksCheck:
    """What the last check of the round's books against the EO's found (:mod:`avatar.reconcile`)."""

    round: int | str
    found: str
    at: int


def _keep_camera(view: CameraView, state: DisplayState) -> None:
    state.camera = view


def _keep_attention(view: AttentionView, state: DisplayState) -> None:
    state.attention = view


AlertListener = Callable[[str, str], None]
"""Told ``(kind, text)`` of what the operator must know about the round's books."""


class BookAlerts:
    """What the operator must know about the round's books: in the log, and to each listener
    (the console)."""

    def __init__(self) -> None:
        self._listeners: list[AlertListener] = []

    def listen(self, listener: AlertListener) -> None:
        self._listeners.append(listener)

    def alert(self, kind: str, text: str) -> None:
        _notes.warning((kind, text), "%s", text)
        for listener in self._listeners:
            try:
                listener(kind, text)
            except Exception as exc:  # the console must never cost the EO an answer
                log.debug("an alert listener failed: %s", exc)


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
        eo_url: str | None = None,
    ) -> None:
        """``ledger``: the room's books (:mod:`avatar.room_ledger`: under ``data_dir`` in a
        worker). ``eo_url``: the EO whose books the round's are held against while it lasts
        (:mod:`avatar.reconcile`; None: none)."""
        self.settings = settings.for_room(avatars)
        self.avatars = list(avatars)
        self.eo_url = eo_url
        self.speaker = speaker
        self._bus = bus
        self._source = source
        self.hub = DisplayHub(self.avatars, self.settings.confirm_accept, self.settings.looks(self.avatars))
        self.ledger = ledger
        self.books = RoundBooks(self.ledger, self.hub, self.settings)
        self.speech = SpeechOutput(self.settings, self.avatars, bus, source, self.hub, speaker)
        room = Room(self.ledger, RoundEvents(self.ledger), self.books, bus, source, self.hub)
        self.display_history = DisplayHistory(room)
        self.intake = MessageIntake(self.settings, self.avatars, room, self.speech, self.display_history)
        self.confirms = Confirmations(self.settings, room)
        self.rounds = RoundLife(self.avatars, room)
        self._alerts = BookAlerts()
        self._voices_in_use: dict[str, str] = {}
        """Avatar -> the engine and voice that really speak it (the fallback when its own is missing)."""
        self._books_check: BooksCheck | None = None
        """What the last check of the round's books against the EO's found (:meth:`books_checked`)."""

    @property
    def cut_prompts(self) -> int:
        """Confirmations a previous run of the controller left unanswered (found at start)."""
        return self.rounds.cut_prompts

    # -- lifecycle ---------------------------------------------------------------------------
    def check(self) -> None:
        """Fail early, with a readable reason, on a voice espeak-ng does not have."""
        for avatar in self.avatars:
            voice = self.speaker.check_voice(self.settings.voice_for(avatar))
            self._voices_in_use[avatar] = f"{voice.engine} {voice.voice}"

    def start(self) -> None:
        self.rounds.take_up()
        self.books.start()
        self.speech.start()
        self._subscribe()
        if self.ledger.current() is not None:
            self.rounds.refresh()  # the ledger's round over whatever the broker kept
            self.display_history.restore()
        self.confirms.publish_pending()  # a confirmation a previous run left waiting is gone with it

    def _subscribe(self) -> None:
        topics = self._bus.topics
        self._bus.subscribe(topics.attention(), Attention, self._on_attention)
        self._bus.subscribe(topics.round_state(), RoundState, self.rounds.on_retained)
        # the round state is ours: only we hear the EO's round events, and the EO offers no way to
        # ask which round runs (/viewQueue needs its id); garbage retained there, or a broker that
        # lost it, would leave every worker that (re)connects without a round, so we publish what
        # we know over it at once
        self._bus.own(topics.round_state(), RoundState, self.rounds.state)
        self._bus.subscribe(topics.barge_in(), BargeIn, self.speech.barge_in)
        self._bus.subscribe(topics.vad(), VadEvent, self.speech.on_vad)
        self._bus.subscribe(topics.status(CAMERA_WORKER), Status, self._on_camera_status)
        self._bus.subscribe(topics.status(MICROPHONE_WORKER), Status, self.confirms.on_microphone_status)
        self._bus.subscribe(topics.confirm_answer(), ConfirmAnswer, self.confirms.on_answer)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The HTTP server's event loop (confirmations are answered on it)."""
        self.hub.attach(loop)
        self.confirms.attach(loop)

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The HTTP server's event loop, once known (what confirmations are answered on)."""
        return self.confirms.loop

    def detach(self) -> None:
        self.hub.detach()

    def answer_pending(self) -> int:
        """Give every waiting confirmation its configured answer (on the event loop): the EO gets
        its answer before the controller stops. Returns how many there were."""
        return self.confirms.answer_all()

    def stop(self) -> None:
        self.books.stop()
        self.speech.stop()

    def health(self) -> dict[str, Any]:
        return {
            **self.speech.health(),
            "display_clients": self.hub.client_count,
            "round": self.round_state().model_dump(include={"round_id", "phase", "phase_deadline"}),
            "confirms_waiting": self.confirms.waiting(),
            "books_check": dataclasses.asdict(self._books_check) if self._books_check is not None else None,
            "ledger": self.ledger.where,
            "voices": dict(self._voices_in_use),
            **self.intake.counts(),
            **self.speech.counts(),
        }

    # -- the round's books -------------------------------------------------------------------
    def on_alert(self, listener: AlertListener) -> None:
        """``listener(kind, text)`` is told what the operator must know about the round's books."""
        self._alerts.listen(listener)

    def alert(self, kind: str, text: str) -> None:
        """Something the operator must know about the round's books: the log and the console."""
        self._alerts.alert(kind, text)

    def books_checked(self, round_id: int | str, found: str) -> None:
        """What a check of the round's books against the EO's found (in ``/health``)."""
        self._books_check = BooksCheck(round_id, found, now_ms())

    # -- what the EO's endpoints call ----------------------------------------------------------
    def receive_message(self, message: Message) -> str:
        return self.intake.receive_message(message)

    def receive_log(self, entry: LogEntry) -> None:
        self.intake.receive_log(entry)

    def receive_rejection(self, rejection: Rejection) -> None:
        self.intake.receive_rejection(rejection)

    async def confirm_accept(self, body: ConfirmAccept | None) -> dict[str, Any]:
        return await self.confirms.confirm_accept(body)

    def decide(self, confirm_id: str, accepted: bool, by: str) -> bool:
        return self.confirms.decide(confirm_id, accepted, by)

    def round_metadata(self, body: RoundMetadata) -> None:
        self.rounds.metadata(body)

    def start_round(self, body: StartRound) -> None:
        self.rounds.start(body)

    def end_round(self, body: EndRound) -> None:
        self.rounds.end(body)

    def round_totals(self, body: RoundTotals) -> None:
        self.rounds.totals(body)

    def set_utility(self, body: SetUtility) -> None:
        self.rounds.set_utility(body)

    # -- what the pages call -------------------------------------------------------------------
    def round_state(self) -> RoundState:
        """The round as the ledger has it, as the retained round state."""
        return self.rounds.state()

    def refresh_round(self) -> None:
        self.rounds.refresh()

    def name_buyer(self, label: str, running: bool) -> None:
        self.rounds.name_buyer(label, running)

    def undelivered(self, round_id: object) -> None:
        self.rounds.undelivered(round_id)

    def wait_spoken(self, count: int, timeout: float) -> bool:
        """True once ``count`` utterances have finished (tests, benchmark)."""
        return self.speech.wait_spoken(count, timeout)

    # -- the display's view of the other workers (MQTT thread) ---------------------------------
    def _on_camera_status(self, _topic: str, message: Status) -> None:
        """Whether gaze is available: the display says "no camera" rather than "nobody"."""
        event = CameraStateEvent(state=message.state, detail=message.detail)
        self.hub.emit(event, functools.partial(_keep_camera, event.view()))

    def _on_attention(self, _topic: str, message: Attention) -> None:
        event = AttentionEvent(target=message.target, since=message.since)
        self.hub.emit(event, functools.partial(_keep_attention, event.view()))
