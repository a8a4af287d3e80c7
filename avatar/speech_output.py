"""The avatars' speech: the speech queue, and what each utterance tells the room as it is heard.

The speech queue's thread speaks one request at a time (:class:`~avatar.speech_queue.SpeechQueue`);
the speaker calls back as the audio plays: its first sample (``speaking`` begin on the bus, the
caption on the display), each word, each ``<mark>`` (a gesture), each chunk of phonemes (the
mouth's visemes), and its end (``speaking`` end, the utterance kept in the history). Those
callbacks are methods here, bound to the one :class:`Utterance` being spoken.
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from avatar import gestures, visemes
from avatar.display import AUDIO_PATH, DisplayHub
from avatar.page_events import (
    Caption,
    DisplayState,
    GestureEvent,
    NotSpokenEvent,
    SpeakingBegin,
    SpeakingEnd,
    VisemesEvent,
    WordEvent,
)
from avatar.room_bus import Publisher
from avatar.settings import AvatarSettings
from avatar.speech_queue import QueueStats, SpeechQueue, SpeechRequest, Verdict
from hardware.speaker import Speaker, SpeechEvent, SpokenUtterance
from hardware.speaker_stream import stream_sink
from workers.runtime.messages import BargeIn, Gesture, Speaking, Stage, VadEvent, now_ms

log = logging.getLogger(__name__)

HISTORY_KEPT = 64
FLOOR_HOLD_S = 10.0
"""After a barge-in the avatars say nothing more until the buyer's utterance ends (its voice
activity ``speech_end``), or this long at most (a lost event must not silence them for good):
the next queued answer, started at once, would talk over the buyer who just took the floor."""


@dataclass
class Spoken:
    """One finished utterance (kept for /health, tests and the benchmark)."""

    request: SpeechRequest
    result: SpokenUtterance


@dataclass
class Utterance:
    """The request being spoken, and the mouth's timeline so far."""

    request: SpeechRequest
    mouth: visemes.Timeline = field(default_factory=list)

    @property
    def avatar(self) -> str:
        return self.request.avatar

    @property
    def message_id(self) -> str:
        return self.request.message_id

    @property
    def name(self) -> str:
        """The utterance's name at the speaker (the page fetches its audio under it)."""
        return f"{self.avatar}-{self.message_id}"


def _show_caption(caption: Caption, state: DisplayState) -> None:
    state.speaking = caption
    state.captions[caption.avatar] = caption


def _end_caption(message_id: str, state: DisplayState) -> None:
    if state.speaking is not None and state.speaking.message_id == message_id:
        state.speaking = None


class SpeechOutput:
    """Speaks the avatars' messages in turn and tells the bus and the display as it goes."""

    def __init__(self, settings: AvatarSettings, avatars: list[str], bus: Publisher, source: str, hub: DisplayHub,
                 speaker: Speaker) -> None:
        self._settings = settings
        self._avatars = list(avatars)
        self._bus = bus
        self._topics = bus.topics
        self._source = source
        self._hub = hub
        self._speaker = speaker
        self._queue = SpeechQueue(self._speak, settings.queue_max, settings.stale_after_s, settings.max_words,
                                 on_drop=self._dropped)
        self._history: collections.deque[Spoken] = collections.deque(maxlen=HISTORY_KEPT)
        self._history_cond = threading.Condition()
        self._counters: collections.Counter[str] = collections.Counter()
        self._speaking: str | None = None
        """The message id being spoken right now (the speech queue's thread sets and clears it)."""
        self._floor: str | None = None
        """The buyer's utterance that barged in, while the avatars wait for its end."""

    def start(self) -> None:
        # A controller that died mid-sentence left a retained "begin" behind, which would gate
        # the microphone for good: start from "nobody is speaking".
        for avatar in self._avatars:
            self._bus.publish(self._topics.speaking(avatar), Speaking(source=self._source, avatar=avatar, state="end"))
        self._queue.start()

    def stop(self) -> None:
        self._speaker.cancel()
        self._queue.stop()
        self._speaker.close()

    def submit(self, request: SpeechRequest) -> Verdict:
        """Queue ``request`` (never blocks)."""
        return self._queue.submit(request)

    def gesture(self, avatar: str, name: str, message_id: str) -> None:
        """``avatar`` plays gesture ``name`` now: on the bus and on the display."""
        at = now_ms()
        self._bus.publish(self._topics.gesture(avatar),
                          Gesture(source=self._source, avatar=avatar, name=name, at=at, message_id=message_id))
        self._hub.emit(GestureEvent(avatar=avatar, name=name, message_id=message_id, at=at))

    def barge_in(self, _topic: str, message: BargeIn) -> None:
        """The buyer talks over the avatar: stop the current utterance (its end says ``cut``)."""
        speaking = self._speaking
        if speaking is None:
            return
        self._counters["barge_ins"] += 1
        log.info("barge-in (%.1f dBFS over an echo of %.1f): stopping message %s", message.level_db, message.echo_db, speaking)
        self._floor = message.utterance_id
        self._queue.hold(FLOOR_HOLD_S)
        self._speaker.cancel()

    def on_vad(self, _topic: str, event: VadEvent) -> None:
        """The buyer who barged in stopped talking: the avatars may answer again."""
        if event.event == "speech_end" and self._floor is not None and event.utterance_id == self._floor:
            self._floor = None
            self._queue.release()

    def wait_spoken(self, count: int, timeout: float) -> bool:
        """True once ``count`` utterances have finished (tests, benchmark)."""
        with self._history_cond:
            return self._history_cond.wait_for(lambda: len(self._history) >= count, timeout)

    def spoken(self) -> list[Spoken]:
        """The utterances finished so far (the last :data:`HISTORY_KEPT`), oldest first."""
        with self._history_cond:
            return list(self._history)

    @property
    def stats(self) -> QueueStats:
        return self._queue.stats

    def idle(self) -> bool:
        """Nothing queued and nothing being spoken."""
        return self._queue.idle()

    def wait_idle(self, timeout: float) -> bool:
        return self._queue.wait_idle(timeout)

    def counts(self) -> dict[str, int]:
        """``not_spoken_<reason>`` and ``barge_ins``, as far as they happened (in ``/health``)."""
        return dict(self._counters)

    def health(self) -> dict[str, Any]:
        stats = self._queue.stats
        return {
            "speaker": self._speaker.sink.describe(),
            "queue": self._queue.pending(),
            "spoken": stats.spoken,
            "refused_too_long": stats.refused_too_long,
            "refused_full": stats.refused_full,
            "dropped_stale": stats.dropped_stale,
            "failed": stats.failed,
        }

    def _dropped(self, request: SpeechRequest, reason: str) -> None:
        self._counters[f"not_spoken_{reason}"] += 1
        self._hub.emit(NotSpokenEvent(avatar=request.avatar, message_id=request.message_id, reason=reason))

    # -- one utterance (the speech queue's thread) ---------------------------------------------
    def _speak(self, request: SpeechRequest) -> None:
        utterance = Utterance(request)
        spoken = self._speaker.speak(
            request.text.ssml,
            self._settings.voice_for(request.avatar),
            name=utterance.name,
            on_begin=functools.partial(self._began, utterance),
            on_end=functools.partial(self._ended, utterance),
            on_word=functools.partial(self._word, utterance),
            on_mark=functools.partial(self._mark, utterance),
            max_s=self._settings.max_speaking_s,
            on_phonemes=functools.partial(self._phonemes, utterance),
        )
        if spoken.cut:
            log.warning("%s's message %s was cut after %.0f s (max_speaking_s)", request.avatar, request.message_id,
                        self._settings.max_speaking_s)

    def _began(self, utterance: Utterance) -> None:
        """The first sample is heard: ``speaking`` begin, the caption, the message's gestures."""
        request, avatar = utterance.request, utterance.avatar
        self._speaking = utterance.message_id
        at = now_ms()
        request.stages[Stage.FIRST_AUDIO] = at
        self._bus.publish(
            self._topics.speaking(avatar),
            Speaking(source=self._source, avatar=avatar, state="begin", message_id=utterance.message_id,
                     text=request.text.plain, at=at, stages=dict(request.stages)),
        )
        begin = SpeakingBegin(avatar=avatar, text=request.text.plain, message_id=utterance.message_id, at=at,
                              latency_ms=round(self._speaker.sink.latency_s * 1000))
        if stream_sink(self._speaker.sink) is not None:
            begin.audio = f"{AUDIO_PATH}/{quote(utterance.name)}"  # the page plays it
        self._hub.emit(begin, functools.partial(_show_caption, begin.caption()))
        for name in request.gestures:
            self.gesture(avatar, name, utterance.message_id)

    def _mark(self, utterance: Utterance, event: SpeechEvent) -> None:
        name = gestures.from_mark(event.name)
        if name is not None and gestures.is_known(name):
            self.gesture(utterance.avatar, name, utterance.message_id)

    def _phonemes(self, utterance: Utterance, events: list[SpeechEvent]) -> None:
        mouth = utterance.mouth
        shapes = visemes.timeline(events, mouth[-1][1] if mouth else None)
        if not shapes:
            return
        mouth.extend(shapes)
        self._hub.emit(VisemesEvent(avatar=utterance.avatar, message_id=utterance.message_id, visemes=shapes))

    def _word(self, utterance: Utterance, event: SpeechEvent) -> None:
        self._hub.emit(WordEvent(avatar=utterance.avatar, message_id=utterance.message_id, word=event.name))

    def _ended(self, utterance: Utterance, result: SpokenUtterance) -> None:
        """The last sample is heard: kept in the history first, so whoever hears ``speaking``
        end finds the utterance there."""
        request, avatar, message_id = utterance.request, utterance.avatar, utterance.message_id
        self._speaking = None
        at = now_ms()
        request.stages[Stage.SPEAKING_END] = at
        with self._history_cond:
            self._history.append(Spoken(request, result))
            self._history_cond.notify_all()
        self._bus.publish(
            self._topics.speaking(avatar),
            Speaking(source=self._source, avatar=avatar, state="end", message_id=message_id, text=request.text.plain, at=at,
                     stages=dict(request.stages), cut=result.cancelled, visemes=list(utterance.mouth)),
        )
        self._hub.emit(SpeakingEnd(avatar=avatar, message_id=message_id, at=at, cut=result.cancelled),
                       functools.partial(_end_caption, message_id))
