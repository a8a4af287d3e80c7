"""What the operator console shows, as plain views built from bus messages (no I/O here).

The console reads the bus, never the workers' internals, so it shows a room spread over
several machines as well as one; these views are what it keeps of each message, small enough
to send to every open console and to keep the last few of.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, Field

from workers.runtime.messages import NOBODY, HeadPose, OutgoingMessage, Speaking, Stage, Stages, Status, new_id, now_ms

AlertKind = Literal["worker_offline", "worker_error", "worker_silent", "blocked", "undelivered", "maybe_delivered",
                    "books_differ", "round_lost"]
AlertLevel = Literal["error", "warning"]

UNDELIVERED_OUTCOMES: Final = {"undelivered": "undelivered", "failed": "undelivered", "maybe_delivered": "maybe_delivered"}
"""An utterance outcome that raises an alert -> the alert's kind (``blocked`` has its own)."""
REPLY_WINDOW_MS: Final = 60_000
"""An agent message received this long after the buyer's relay is no longer its reply."""
REPLIES_KEPT: Final = 4
TIMELINE: Final = (
    (Stage.SPEECH_END, "speech end", False), (Stage.FINAL, "final", False), (Stage.RELAY_SENT, "relay", False),
    (Stage.EO_ANSWER, "EO answer", False), (Stage.RECEIVED, "agent reply", True), (Stage.FIRST_AUDIO, "avatar speaking", True),
)
"""The stages the console draws, in order: (name, label, whether a reply's): the buyer's (speech
end to the EO's answer), then each reply's (received by the Avatar Controller, first audio)."""


class WorkerView(BaseModel):
    """A worker's retained status as the console shows it."""

    worker: str
    state: str
    host: str
    pid: int
    version: str
    started_at: int
    detail: str
    health: dict[str, object]
    ts: int
    refresh_s: float | None = None
    """How often it refreshes its status (``None``: never, so it cannot go silent)."""
    seen: int = Field(default_factory=now_ms)
    """When this status arrived here (this machine's clock: the worker's may differ)."""
    silent: bool = False
    """Its status has not been refreshed for longer than workers refresh it."""

    @classmethod
    def of(cls, status: Status) -> WorkerView:
        return cls.model_validate(status.model_dump(include={"worker", "state", "host", "pid", "version", "started_at",
                                                             "detail", "health", "ts", "refresh_s"}))


class PoseView(BaseModel):
    yaw: float
    pitch: float
    roll: float
    confidence: float
    face_id: int | None
    frame_ts: int

    @classmethod
    def of(cls, pose: HeadPose) -> PoseView:
        return cls.model_validate(pose.model_dump(include=set(cls.model_fields)))


class ReplyView(BaseModel):
    """An agent's message spoken after the buyer's utterance, with its stages."""

    avatar: str
    message_id: str
    text: str
    stages: Stages
    cut: bool = False


class UtteranceView(BaseModel):
    """One buyer utterance: what was said, to whom and why, what became of it, and when each
    stage happened (its own stages, then the stages of the agents' replies)."""

    id: str
    at: int
    text: str
    addressee: str
    addressee_source: str
    engine: str
    confidence: float | None
    source: str
    outcome: str
    reason: str
    stages: Stages
    replies: list[ReplyView] = Field(default_factory=list)

    @classmethod
    def of(cls, message: OutgoingMessage, engine: str) -> UtteranceView:
        body = message.message
        confidence = body.get("sttConfidence")
        return cls(
            id=message.id,
            at=message.ts,
            text=str(body.get("text", "")),
            addressee=str(body.get("addressee") or NOBODY),
            addressee_source=str(body.get("addresseeSource", "")),
            engine=engine,
            confidence=float(confidence) if isinstance(confidence, int | float) and not isinstance(confidence, bool) else None,
            source=str(body.get("source", "")),
            outcome=message.outcome,
            reason=message.reason,
            stages=dict(message.stages),
        )

    @property
    def relayed_at(self) -> int | None:
        """When the utterance left for the EO (or, unsent, when its final was ready)."""
        for name in (Stage.RELAY_SENT, Stage.RELEASED, Stage.FINAL):
            if name in self.stages:
                return self.stages[name]
        return None

    def takes_reply(self, speaking: Speaking) -> bool:
        """Whether ``speaking`` (an agent's message) answers this utterance: received after it
        was relayed, within :data:`REPLY_WINDOW_MS`."""
        sent, received = self.relayed_at, speaking.stages.get(Stage.RECEIVED)
        return sent is not None and received is not None and 0 <= received - sent <= REPLY_WINDOW_MS

    def add_reply(self, speaking: Speaking) -> None:
        for reply in self.replies:
            if reply.message_id == speaking.message_id:
                reply.stages.update(speaking.stages)
                reply.cut = reply.cut or speaking.cut
                return
        if len(self.replies) < REPLIES_KEPT:
            self.replies.append(ReplyView(avatar=speaking.avatar, message_id=speaking.message_id, text=speaking.text,
                                          stages=dict(speaking.stages), cut=speaking.cut))


class Alert(BaseModel):
    """Something the operator should look at."""

    id: str = Field(default_factory=new_id)
    at: int = Field(default_factory=now_ms)
    kind: AlertKind
    level: AlertLevel
    text: str


def view(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
