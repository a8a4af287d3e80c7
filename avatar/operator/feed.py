"""The operator console's live picture of the room, kept from the bus.

Every handler runs on the MQTT network thread, so each one only updates a bounded structure
under a lock and hands one event to the hub (:class:`FeedHub`), which serialises it and queues it
for the event loop. Nothing grows without bound: the last :data:`UTTERANCES_KEPT` utterances,
:data:`ALERTS_KEPT` alerts, :data:`POSES_KEPT` head poses, :data:`ENGINES_KEPT` transcript engines,
:data:`WORKERS_KEPT` statuses, :data:`AVATARS_KEPT` speaking states.

It shows only what the room's own workers said: an utterance, an avatar's speech or the EO's
verdict counts when it comes from the process whose retained status its ``source`` worker keeps
(:mod:`workers.runtime.origins`), and a worker's status only from its own status topic. A
message that claims a worker's name from elsewhere prints no forged "buyer → Celia" line.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from typing import Any, Final, Protocol, TypeGuard, get_args

from pydantic import BaseModel

from avatar.books.records import day_of
from avatar.display import EventHub
from avatar.operator.alerts import ALERTS_KEPT, AlertBook
from avatar.page_events import (
    TIMELINE,
    Alert,
    AlertEvent,
    AlertKind,
    AlertLevel,
    AttentionEvent,
    AvatarSpeakingEvent,
    CalibrationEvent,
    CameraGeometryEvent,
    CompetitionEvent,
    ConsoleEvent,
    ConsoleSnapshot,
    DayEvent,
    DaySummary,
    HeadposeEvent,
    LinkEvent,
    PoseView,
    RoundEvent,
    StatusEvent,
    UtteranceEvent,
    UtteranceView,
    WorkerView,
)
from humaine_platform.models import HUMAN
from workers.runtime.logs import RateLimitedLog
from workers.runtime.messages import (
    PHASE_NAMES,
    Attention,
    Calibration,
    CameraGeometry,
    Envelope,
    EOVerdict,
    HeadPose,
    OutgoingMessage,
    RoundState,
    Speaking,
    Status,
    Transcript,
    now_ms,
)
from workers.runtime.origins import own_status, vouched
from workers.runtime.topics import Topic, Topics
from workers.runtime.worker_ids import CAMERA as CAMERA_WORKER

log = logging.getLogger(__name__)
_notes = RateLimitedLog(log)

UTTERANCES_KEPT: Final = 20
POSES_KEPT: Final = 45
"""Three seconds of head pose at the camera's 15 Hz: the trail on the plot."""
ENGINES_KEPT: Final = 256
"""Recent final transcripts' engines, by utterance id (a message names its parts' ids)."""
AVATARS_KEPT: Final = 16
"""Avatars whose speaking state is followed (a room has two)."""
WORKERS_KEPT: Final = 64
"""Statuses kept; beyond, the one heard of least recently is forgotten (bus clients come and go)."""
ALERT_KINDS: Final = frozenset(get_args(AlertKind))
WORKER_ALERTS: Final[tuple[AlertKind, ...]] = ("worker_offline", "worker_error", "worker_silent")
"""What a worker's alerts can say; each is resolved once the worker is online again."""
MISSED_REFRESHES: Final = 3
"""A worker that is not offline refreshes its status every ``refresh_s`` it states: this many
missed refreshes and it is reported silent (hung, or cut off from the broker without its last
will). A client that states none (the supervisor, a tool) is never reported silent."""
UNDELIVERED_OUTCOMES: Final[dict[str, AlertKind]] = {"undelivered": "undelivered", "failed": "undelivered",
                                                     "maybe_delivered": "maybe_delivered"}
"""An utterance outcome that raises an alert -> the alert's kind (``blocked`` has its own)."""


def view(model: BaseModel) -> dict[str, Any]:
    """A kept view as the console's snapshot carries it."""
    return model.model_dump(mode="json")


def _is_alert_kind(kind: str) -> TypeGuard[AlertKind]:
    return kind in ALERT_KINDS


class Subscriber(Protocol):
    """The part of :class:`workers.runtime.bus.Bus` the feed needs."""

    topics: Topics

    def subscribe(self, topic: Topic, model: Any, handler: Any) -> None: ...


class FeedHub(EventHub[ConsoleEvent]):
    """The console's feed (thread-safe fan-out, slow pages dropped, as the display's), whose
    snapshot ``view_of`` builds from the feed's own picture."""

    def __init__(self, view_of: Callable[[], dict[str, Any]]) -> None:
        super().__init__()
        self._view_of = view_of

    def snapshot(self) -> ConsoleSnapshot:
        return ConsoleSnapshot(**self._view_of(), now=now_ms())


class OperatorFeed:
    """Subscribes to the room's topics on ``bus`` and keeps what the console shows."""

    def __init__(self, bus: Subscriber, alert_book: AlertBook | None = None,
                 on_undelivered: Callable[[Any], None] | None = None) -> None:
        """``alert_book``: where the day's alerts are kept (None: this process's memory only)."""
        self.topics = bus.topics
        self.hub = FeedHub(self.view)
        self.alert_book = alert_book
        self._day: DaySummary | None = None
        self.on_undelivered = on_undelivered
        """Told the round of each of the buyer's utterances that never reached the EO (the day book)."""
        self._lock = threading.Lock()
        self._camera: dict[str, Any] = {"targets": {}, "tolerance_deg": None, "hysteresis_deg": None,
                                        "worker": CAMERA_WORKER}
        """The camera worker's geometry (:class:`CameraGeometry`): none until it says."""
        self._workers: dict[str, WorkerView] = {}
        self._round: dict[str, Any] | None = None
        self._attention: dict[str, Any] | None = None
        self._poses: collections.deque[PoseView] = collections.deque(maxlen=POSES_KEPT)
        self._speaking: dict[str, bool] = {}
        self._utterances: collections.deque[UtteranceView] = collections.deque(maxlen=UTTERANCES_KEPT)
        self._alerts: collections.deque[Alert] = collections.deque(maxlen=ALERTS_KEPT)
        if alert_book is not None:
            try:
                self._alerts.extend(alert_book.of_day(day_of(now_ms()), ALERTS_KEPT))  # the day's, through any restart
            except Exception as exc:  # a ledger that cannot be read must not keep the console away
                _notes.warning(("alerts", type(exc).__name__), "the day's alerts cannot be read: %s: %s", type(exc).__name__, exc)
        self._engines: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._links: dict[str, dict[str, Any]] = {"broker": {"connected": False}, "eo": {"url": "", "reachable": None, "detail": ""}}
        bus.subscribe(self.topics.all_status(), Status, self.on_status)
        bus.subscribe(self.topics.round_state(), RoundState, self.on_round)
        bus.subscribe(self.topics.attention(), Attention, self.on_attention)
        bus.subscribe(self.topics.headpose(), HeadPose, self.on_headpose)
        bus.subscribe(self.topics.transcript_final(), Transcript, self.on_final)
        bus.subscribe(self.topics.outgoing_message(), OutgoingMessage, self.on_outgoing)
        bus.subscribe(self.topics.all_speaking(), Speaking, self.on_speaking)
        bus.subscribe(self.topics.eo_verdict(), EOVerdict, self.on_verdict)
        self._calibration: dict[str, Any] | None = None
        self._competition: dict[str, Any] | None = None
        bus.subscribe(self.topics.camera_calibration(), Calibration, self.on_calibration)
        bus.subscribe(self.topics.camera_geometry(), CameraGeometry, self.on_geometry)

    # -- the picture a newly opened console gets -------------------------------------------------
    def view(self) -> dict[str, Any]:
        with self._lock:
            return {
                "timeline": [{"stage": stage, "label": label, "reply": reply} for stage, label, reply in TIMELINE],
                "phase_names": dict(PHASE_NAMES),
                "camera": self._camera,
                "links": {name: dict(link) for name, link in self._links.items()},
                "workers": {name: view(w) for name, w in self._workers.items()},
                "round": self._round,
                "attention": self._attention,
                "poses": [view(p) for p in self._poses],
                "speaking": dict(self._speaking),
                "utterances": [view(u) for u in self._utterances],
                "alerts": [view(a) for a in self._alerts],
                "day": self._day,
                "calibration": self._calibration,
                "competition": self._competition,
            }

    def utterances(self) -> list[UtteranceView]:
        with self._lock:
            return [u.model_copy(deep=True) for u in self._utterances]

    def alerts(self) -> list[Alert]:
        with self._lock:
            return list(self._alerts)

    # -- bus handlers (MQTT network thread) ------------------------------------------------------
    def _said_by_its_worker(self, message: Envelope) -> bool:
        """Whether ``message`` comes from the process whose status its ``source`` worker keeps
        (:func:`workers.runtime.origins.vouched`): the console shows only what the room's own
        workers said, and the log says once a while what it left out. An info line, not a
        warning: a worker's retained message from its previous run, or one that overtook its
        status at start, is left out as well, and is no one's fault."""
        with self._lock:
            status = self._workers.get(message.source)
        if vouched(message, status):
            return True
        _notes.log(logging.INFO, ("unvouched", message.type, message.source), "a %s claiming %r as its source was not "
                   "shown: it does not come from the process that worker's status names (%s)", message.type,
                   message.source[:40], "no origin" if message.origin is None else f"host {message.origin.host[:40]}, pid "
                   f"{message.origin.pid}")
        return False

    def on_status(self, topic: str, status: Status) -> None:
        if not own_status(self.topics, topic, status):
            _notes.log(logging.INFO, ("foreign status", status.worker), "a status of %r published on %s was ignored: a "
                       "worker's status is its own topic's", status.worker[:40], topic[-80:])
            return
        worker = WorkerView.of(status)
        with self._lock:
            before = self._workers.pop(status.worker, None)
            self._workers[status.worker] = worker  # last heard of: last in the dict
            while len(self._workers) > WORKERS_KEPT:
                del self._workers[next(iter(self._workers))]
        self.hub.emit(StatusEvent(**view(worker)))
        changed = before is None or before.state != status.state or before.detail != status.detail
        # a documented fallback (no webcam on a laptop) is said, not raised as a fault
        level: AlertLevel = "notice" if status.fallback else "error"
        if changed and status.state == "offline":
            self._alert("worker_offline", level, f"{status.worker} is offline ({status.detail or 'no reason given'}); "
                                                 f"last seen on {status.host}, pid {status.pid}", subject=status.worker)
        elif changed and status.state == "error":
            self._alert("worker_error", level, f"{status.worker}: {status.detail or 'error'}", subject=status.worker)
        elif status.state == "online" and (before is None or before.state != "online" or before.silent):
            # before None: first heard since this process started; an alert an earlier run raised
            # about it (kept in the ledger) no longer holds either
            self._resolve(WORKER_ALERTS, status.worker, f"{status.worker} is online again")

    def on_round(self, _topic: str, state: RoundState) -> None:
        round_view = state.model_dump(include={"round_id", "phase", "durations", "phase_started", "phase_deadline"})
        with self._lock:
            self._round = round_view
        self.hub.emit(RoundEvent(**round_view, now=now_ms()))

    def on_calibration(self, _topic: str, message: Calibration) -> None:
        """The calibration's progress; once done, the head-pose plot shows the new targets."""
        state = message.model_dump(include={"state", "phase", "phase_deadline", "detail", "targets", "tolerance_deg", "source"})
        with self._lock:
            self._calibration = state
            if message.state == "done":
                self._camera = {**self._camera, "targets": message.targets,
                                "tolerance_deg": message.tolerance_deg or self._camera["tolerance_deg"]}
            camera = dict(self._camera)
        self.hub.emit(CalibrationEvent(**state, now=now_ms()))
        if message.state == "done":
            self.hub.emit(CameraGeometryEvent(**camera))

    def on_geometry(self, _topic: str, message: CameraGeometry) -> None:
        """The directions the camera worker uses: the head-pose plot draws them."""
        with self._lock:
            self._camera = {**self._camera, **message.model_dump(include={"targets", "tolerance_deg", "hysteresis_deg"})}
            camera = dict(self._camera)
        self.hub.emit(CameraGeometryEvent(**camera))

    def camera_unavailable(self) -> str | None:
        """Why the camera worker cannot calibrate now (None: it is online and heard of)."""
        with self._lock:
            worker = self._workers.get(CAMERA_WORKER)
        if worker is None:
            return "no camera: the camera worker is not running"
        if worker.state != "online" or worker.silent:
            why = "not heard of" if worker.state == "online" else worker.state
            return f"no camera: the camera worker is {why}{': ' + worker.detail if worker.detail else ''}"
        return None

    def on_attention(self, _topic: str, attention: Attention) -> None:
        event = AttentionEvent(target=attention.target, since=attention.since)
        with self._lock:
            self._attention = event.payload()
        self.hub.emit(event)

    def on_headpose(self, _topic: str, pose: HeadPose) -> None:
        pose_view = PoseView.of(pose)
        with self._lock:
            self._poses.append(pose_view)
        self.hub.emit(HeadposeEvent(**view(pose_view)))

    def on_final(self, _topic: str, transcript: Transcript) -> None:
        with self._lock:
            self._engines[transcript.utterance_id] = transcript.engine
            while len(self._engines) > ENGINES_KEPT:
                self._engines.popitem(last=False)

    def on_outgoing(self, _topic: str, message: OutgoingMessage) -> None:
        if not self._said_by_its_worker(message):
            return
        ids = message.message.get("utteranceIds")
        with self._lock:
            engines = [self._engines[i] for i in ids if isinstance(i, str) and i in self._engines] if isinstance(ids, list) else []
            utterance = UtteranceView.of(message, engine=", ".join(dict.fromkeys(engines)))
            self._utterances.append(utterance)
        self.hub.emit(UtteranceEvent(**view(utterance)))
        said = f"“{utterance.text[:80]}”"
        if message.outcome == "blocked":
            self._alert("blocked", "warning", f"the EO blocked the buyer's {said}: {message.reason or 'no reason given'}")
        elif message.outcome in UNDELIVERED_OUTCOMES:
            if self.on_undelivered is not None:
                self.on_undelivered(message.message.get("roundId"))
            kind = UNDELIVERED_OUTCOMES[message.outcome]
            level: AlertLevel = "warning" if kind == "maybe_delivered" else "error"
            self._alert(kind, level, f"the buyer's {said} was {message.outcome.replace('_', ' ')}: {message.reason}")

    def on_speaking(self, topic: str, speaking: Speaking) -> None:
        if not self._said_by_its_worker(speaking):
            return
        with self._lock:
            if speaking.avatar in self._speaking or len(self._speaking) < AVATARS_KEPT:
                self._speaking[speaking.avatar] = speaking.state == "begin"
            linked = None
            if speaking.message_id:
                linked = next((u for u in reversed(self._utterances) if u.takes_reply(speaking)), None)
                if linked is not None:
                    linked.add_reply(speaking)
                    linked = linked.model_copy(deep=True)
        self.hub.emit(AvatarSpeakingEvent(avatar=speaking.avatar, state=speaking.state))
        if linked is not None:
            self.hub.emit(UtteranceEvent(**view(linked)))

    def on_verdict(self, _topic: str, verdict: EOVerdict) -> None:
        """An agent's blocked message (the buyer's own come as a ``blocked`` outcome, with the
        utterance they belong to)."""
        speaker = str(verdict.message.get("speaker", ""))
        if verdict.via != "log" or verdict.permitted or speaker == HUMAN or not self._said_by_its_worker(verdict):
            return
        text = str(verdict.message.get("text", ""))[:80]
        self._alert("blocked", "warning", f"the EO blocked {speaker or 'an agent'}'s “{text}”: {verdict.rationale or 'no reason given'}")

    # -- timers (event loop) ---------------------------------------------------------------------
    def check_silent(self, now: int) -> None:
        """Report each worker whose status stopped being refreshed, once until it is heard again."""
        with self._lock:
            gone = [w for w in self._workers.values() if w.state != "offline" and not w.silent and w.refresh_s is not None
                    and now - w.seen > MISSED_REFRESHES * w.refresh_s * 1000]
            for worker in gone:
                worker.silent = True
            views = [view(w) for w in gone]
        for worker_view in views:
            self.hub.emit(StatusEvent(**worker_view))
            name = worker_view["worker"]
            self._alert("worker_silent", "warning", f"{name} has not been heard of for "
                                                    f"{(now - worker_view['seen']) // 1000} s (last state {worker_view['state']})",
                        subject=name)
            with self._lock:
                heard = self._workers.get(name)
                back = heard is None or not heard.silent
            if back:  # its status came between the look and the alert: the alert no longer holds
                self._resolve(("worker_silent",), name, f"{name} is heard of again")

    def set_day(self, summary: DaySummary) -> None:
        """The day's rounds, per buyer and seller (:class:`~avatar.operator.day.DayBook`)."""
        with self._lock:
            self._day = summary
        self.hub.emit(DayEvent.of(summary))

    # -- links (event loop) ----------------------------------------------------------------------
    def set_link(self, name: str, **values: Any) -> None:
        """Broker or EO reachability; sent only when it changed."""
        with self._lock:
            link = self._links[name]
            if all(link.get(k) == v for k, v in values.items()):
                return
            link.update(values)
            current = dict(link)
        self.hub.emit(LinkEvent(name=name, **current))

    def set_competition(self, view: dict[str, Any]) -> None:
        """The competition's picture (:meth:`avatar.competition.control.RoundControl.view`)."""
        with self._lock:
            self._competition = view
        self.hub.emit(CompetitionEvent(**view))

    def books_alert(self, kind: str, text: str) -> None:
        """What the controller says about the round's books (they differ from the EO's; a round
        the EO lost) and about the competition's rounds (an agent that exited, a round that did
        not start by itself): an error on the console."""
        self._alert(kind if _is_alert_kind(kind) else "books_differ", "error", text)

    def _alert(self, kind: AlertKind, level: AlertLevel, text: str, subject: str = "") -> None:
        """Raise an alert (kept in the ledger); one about ``subject`` while the same kind about it
        is still open is not raised again (a restarted room hears a worker's retained status anew)."""
        if subject:
            with self._lock:
                if any(a.kind == kind and a.subject == subject and a.resolved is None for a in self._alerts):
                    return
        alert = Alert(kind=kind, level=level, text=text, subject=subject)
        if self.alert_book is not None:
            try:
                self.alert_book.add(alert)
            except Exception as exc:  # shown all the same; the log says it was not kept
                _notes.warning(("alert", type(exc).__name__), "an alert was not kept in the ledger: %s: %s", type(exc).__name__, exc)
        with self._lock:
            self._alerts.append(alert)
        self.hub.emit(AlertEvent(**view(alert)))

    def _resolve(self, kinds: tuple[AlertKind, ...], subject: str, why: str) -> None:
        """The alerts of these kinds about ``subject`` no longer hold: marked resolved (kept)."""
        at = now_ms()
        with self._lock:
            open_ids = {a.id for a in self._alerts if a.kind in kinds and a.subject == subject and a.resolved is None}
        resolved: list[Alert] = []
        if self.alert_book is not None:
            try:
                resolved = self.alert_book.resolve(kinds, subject, at, why)
            except Exception as exc:
                _notes.warning(("resolve", type(exc).__name__), "alerts not resolved in the ledger: %s: %s", type(exc).__name__, exc)
        kept = {a.id: a for a in resolved}
        with self._lock:
            for place, alert in enumerate(self._alerts):
                if alert.id in open_ids or alert.id in kept:
                    self._alerts[place] = kept.get(alert.id, alert.model_copy(update={"resolved": at, "resolution": why}))
            changed = [a for a in self._alerts if a.id in open_ids or a.id in kept]
        for alert in changed:
            self.hub.emit(AlertEvent(**view(alert)))
