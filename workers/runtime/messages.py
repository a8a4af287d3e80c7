"""The MQTT message envelope and the payload models every worker agrees on.

Every payload is JSON ``{"v": 1, "type": ..., "source": <worker id>, "ts": <ms>, ...}``.
The models are the contract between workers that may run on different machines, so they are
strict about what they need (missing or mistyped fields fail validation and the subscriber
drops the payload with one log line) and tolerant of what they do not know (extra keys are
kept, so a newer publisher does not break an older subscriber).
"""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

ENVELOPE_VERSION: Final = 1
NOBODY = ""
"""Addressee / attention target meaning "nobody in particular" (the platform's ``""``)."""


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch: the time unit of everything on the wire."""
    return time.time_ns() // 1_000_000


def new_id() -> str:
    return uuid.uuid4().hex


class Stage:
    """Names of the stage timestamps a message carries in its ``stages`` map (ms since the
    epoch), so that the operator and ``eval`` can see where the time between the buyer's last
    word and the avatar's answer goes. Human side (on :class:`OutgoingMessage`):"""

    SPEECH_START: Final = "speech_start"
    """The first word (audio clock)."""
    SPEECH_END: Final = "speech_end"
    """The last voiced audio (audio clock)."""
    FINAL: Final = "final"
    """The recogniser's final transcript was produced (the latest part's, for a merged one)."""
    RELEASED: Final = "released"
    """The merger let the utterance go (after any merge hold)."""
    RELAY_SENT: Final = "relay_sent"
    """The first ``/relayMessage`` attempt started."""
    EO_ANSWER: Final = "eo_answer"
    """The EO's answer arrived."""
    # agent side (on :class:`Speaking`)
    RECEIVED: Final = "received"
    """The Avatar Controller received the agent's message from the EO."""
    FIRST_AUDIO: Final = "first_audio"
    """The avatar's first audio went to the speaker."""
    SPEAKING_END: Final = "speaking_end"
    """The avatar's audio ended."""


Stages = dict[str, int]
"""Stage name (:class:`Stage`) -> ms since the epoch; unknown names are kept."""


class Origin(BaseModel):
    """The process that published a message, as its bus names itself in its retained status:
    the host, the pid and when the bus started (a restarted worker is another origin)."""

    model_config = ConfigDict(frozen=True)

    host: str
    pid: int
    started_at: int


class Envelope(BaseModel):
    """Fields every payload carries. ``id`` lets a subscriber drop QoS 1 redeliveries."""

    model_config = ConfigDict(extra="allow")

    v: Literal[1] = ENVELOPE_VERSION
    type: str
    source: str
    ts: int = Field(default_factory=now_ms)
    id: str = Field(default_factory=new_id)
    origin: Origin | None = None
    """Who published it: set by the publishing bus (:meth:`workers.runtime.bus.Bus.publish`).
    ``source`` is a claim any client can write; a reader that shows a message as a room worker's
    holds its origin to that worker's retained status (:func:`workers.runtime.origins.vouched`)."""


# -- lifecycle ---------------------------------------------------------------------------------
WorkerState = Literal["starting", "online", "error", "offline"]
"""A worker's state as its retained :class:`Status` says it."""


class Status(Envelope):
    """Retained worker state; the ``offline`` form is also registered as the MQTT last will."""

    type: Literal["status"] = "status"
    state: WorkerState
    worker: str
    version: str
    host: str
    pid: int
    started_at: int
    detail: str = ""
    health: dict[str, object] = Field(default_factory=dict)
    reads: list[str] = Field(default_factory=list, max_length=16)
    """Optional fields of the messages this worker subscribes to that it reads (the transcript
    worker: :data:`PITCH_END`, :data:`TURN_COMPLETE` of the finals when its merger holds by them).
    Their publishers measure them only while a reader asks, whatever machine or configuration
    file each worker runs with."""
    refresh_s: float | None = Field(None, gt=0, le=3600)
    """How often the sender publishes this status again while it runs (a worker: its health
    interval). ``None``: never (the supervisor, a tool, a test's observer), so its silence says
    nothing about whether it is alive."""
    fallback: bool = False
    """The worker does not run here by a documented fallback the room goes on without (no webcam
    on a laptop: the addressee comes from names): said, not raised as a fault."""


# -- camera ------------------------------------------------------------------------------------
class HeadPose(Envelope):
    """One head-pose sample. Angles in degrees: yaw > 0 when the person turns to their own
    left (towards image right in an unmirrored camera), pitch > 0 looking up, roll > 0 when
    the head tilts towards the person's own left shoulder (clockwise in the image)."""

    type: Literal["headpose"] = "headpose"
    yaw: float
    pitch: float
    roll: float
    confidence: float
    face_box: tuple[float, float, float, float] | None = None
    """x, y, width, height as fractions of the frame."""
    face_id: int | None = None
    frame_ts: int
    """Capture time of the frame, ms since the epoch."""
    mouth_open: float | None = Field(None, ge=0, le=10)
    """The buyer's inner-lip gap over their outer eye-corner distance in this frame (about 0
    closed, up to 0.3 talking); ``None``: not measured. The microphone tells the buyer's speech
    from a bystander's by it (``[microphone] lips``)."""


class Attention(Envelope):
    """The buyer's attention target changed (retained: the current target and since when)."""

    type: Literal["attention"] = "attention"
    target: str
    """An avatar name, or ``NOBODY`` (``""``)."""
    previous: str | None = None
    since: int
    """When the target became current, ms since the epoch (frame time)."""


# -- microphone --------------------------------------------------------------------------------
TranscriptSource = Literal["mic", "file", "replay", "typed"]


class Word(BaseModel):
    model_config = ConfigDict(extra="allow")

    word: str
    start: int
    """ms since the epoch, from the audio clock."""
    end: int
    conf: float = 1.0


class Doubt(BaseModel):
    """A part of a final transcript not to be trusted as written: a ``quantity`` the recogniser
    was unsure of or that is implausible for the goods ("60 spoons"), a ``name`` it wrote as an
    avatar's name from words it heard unsurely ("Sally," as "Celia,"), or a ``price`` it wrote
    garbled or without its amount ("I'll pay dollars for the eggs")."""

    model_config = ConfigDict(extra="allow")

    kind: Literal["quantity", "name", "price"]
    text: str
    """The words as they stand in the transcript's text."""
    heard: str = ""
    """``name``: the words the recogniser wrote before they were read as the name; ``price``
    (``garbled``): the pieces the decoder wrote ("$4 .0 .0."), of which the text keeps only what
    they say unambiguously ("$4")."""
    start: int
    """ms since the epoch, from the audio clock."""
    end: int
    conf: float = 1.0
    reasons: list[str] = Field(default_factory=list)
    """``quantity``: ``unsure``, ``implausible``, ``not_a_unit``; ``name``: ``sounds_like``,
    ``second_pass``; ``price``: ``garbled`` (pieces that make no one amount), ``no_amount`` (a
    money word with no amount before it)."""
    maybe: str = ""
    """What a quantity may have been when its sound says ("6 teaspoons"); never in the text."""


TURN_COMPLETE_AT = 0.5
"""A final's ``turn_complete`` at or above this says the turn is complete: the end-of-turn model's
own decision threshold (Pipecat's), shared by the microphone that measures it and the merger that
reads it."""


class Transcript(Envelope):
    """An interim (``final=False``) or final recognition result for one utterance."""

    type: Literal["transcript"] = "transcript"
    final: bool
    utterance_id: str
    text: str
    confidence: float = 1.0
    words: list[Word] = Field(default_factory=list)
    start: int
    """Utterance start, ms since the epoch, from the audio clock."""
    end: int
    engine: str
    source: TranscriptSource
    """For transcripts the envelope's ``source`` names where the words came from (the input
    kind, which downstream consumers care about); the publishing worker is in ``worker``."""
    worker: str = ""
    echo: bool = False
    """True when captured while an avatar spoke (published only if echo mode is ``tag``)."""
    pitch_end: float | None = Field(None, ge=-48, le=48)
    """Finals: semitones from the utterance's median pitch to the pitch of its last voiced 50 ms
    (negative: it fell, as a finished statement does; see ``workers/microphone/prosody.py``);
    ``None`` with too little voiced speech, or from a source that does not measure it."""
    doubts: list[Doubt] = Field(default_factory=list)
    """Finals: what not to trust as written (``workers/microphone/quantities.py``, ``names.py``,
    ``prices.py``);
    empty from sources that do not check."""
    turn_complete: float | None = Field(None, ge=0, le=1)
    """Finals: the end-of-turn model's probability that the speaker's turn ends with this
    utterance (``workers/microphone/turn.py``); ``None`` from a source without the model."""


PITCH_END = "pitch_end"
TURN_COMPLETE = "turn_complete"
"""The finals' measured fields a reader can ask for in its :attr:`Status.reads`."""
if not {PITCH_END, TURN_COMPLETE} <= set(Transcript.model_fields):  # pragma: no cover - renamed field
    raise ImportError("Transcript lost a field that Status.reads names")


class VadEvent(Envelope):
    type: Literal["vad"] = "vad"
    event: Literal["speech_start", "speech_end"]
    utterance_id: str
    at: int
    """ms since the epoch, from the audio clock."""


class BargeIn(Envelope):
    """The buyer started talking over an avatar (``[microphone] barge_in``): avatars yield."""

    type: Literal["barge_in"] = "barge_in"
    utterance_id: str
    at: int
    """When the buyer's speech was recognised as such, ms since the epoch (audio clock)."""
    level_db: float
    """The microphone level that triggered it, dBFS..."""
    echo_db: float
    """...and the avatar's echo level it was compared with."""


class MicrophoneControl(Envelope):
    """Privacy pause: while paused the microphone worker publishes nothing it hears."""

    type: Literal["control"] = "control"
    action: Literal["pause", "resume"]


# -- transcript worker -------------------------------------------------------------------------
class OutgoingMessage(Envelope):
    """A HUMAINE message built by the Rich Transcript worker and what became of it."""

    type: Literal["humaine_message"] = "humaine_message"
    message: dict[str, object]
    outcome: Literal["delivered", "blocked", "maybe_delivered", "failed", "undelivered", "answered"]
    """``maybe_delivered``: sent, but not answered before its deadline (or the EO failed
    mid-answer): the EO may have acted on it."""
    reason: str = ""
    stages: Stages = Field(default_factory=dict)
    """When each stage of this message happened (:class:`Stage`)."""


# -- avatar controller -------------------------------------------------------------------------
class Speaking(Envelope):
    """An avatar starts or stops producing audio; brackets the audio for echo gating."""

    type: Literal["speaking"] = "speaking"
    avatar: str
    state: Literal["begin", "end"]
    message_id: str = ""
    text: str = ""
    at: int = Field(default_factory=now_ms)
    stages: Stages = Field(default_factory=dict)
    """When the message was received, its first audio and (on ``end``) its end (:class:`Stage`)."""
    cut: bool = False
    """On ``end``: the avatar stopped before the end of the message (barge-in, shutdown)."""
    visemes: list[tuple[int, str]] = Field(default_factory=list)
    """On ``end``: the mouth shapes of the audio that was output, ``(ms from the first
    sample, viseme)``, from the speech engine's own phoneme timing (``avatar.visemes``)."""


class Gesture(Envelope):
    type: Literal["gesture"] = "gesture"
    avatar: str
    name: str
    at: int = Field(default_factory=now_ms)
    message_id: str = ""


class AgentMessageSeen(Envelope):
    """A message the EO forwarded to the Avatar Controller (for the display and recordings)."""

    type: Literal["agent_message"] = "agent_message"
    message: dict[str, object]


class EOVerdict(Envelope):
    """What the EO decided about a proposed message, as it told its human-side service (the
    Avatar Controller): every ``/receiveLog`` (``via: log``, permitted or not) and every
    ``/receiveRejection`` (``via: rejection``). The EO's ``/relayMessage`` answer does not
    say why a message was blocked; this does. ``message`` is the body the EO echoed."""

    type: Literal["eo_verdict"] = "eo_verdict"
    via: Literal["log", "rejection"]
    permitted: bool
    rationale: str | None = None
    message: dict[str, object]


class ConfirmPending(Envelope):
    """Retained: the seller's Accept that waits for the buyer's yes or no (``confirm_id``
    ``None``: nothing waits). The Rich Transcript worker takes the buyer's next "yes" or "no"
    as the answer instead of sending it to the EO."""

    type: Literal["confirm_pending"] = "confirm_pending"
    confirm_id: str | None = None
    seller: str | None = None
    deal: str = Field("", max_length=500)
    """What the seller accepts, as people read it ("2 eggs for $9.00")."""
    deadline: int | None = None
    """When the configured answer is given instead, ms since the epoch."""


class ConfirmAnswer(Envelope):
    """The buyer answered a pending confirmation by voice (``text``: what they said)."""

    type: Literal["confirm_answer"] = "confirm_answer"
    confirm_id: str
    accept: bool
    text: str = ""


class CameraGeometry(Envelope):
    """Retained: the directions the camera worker takes each avatar to be in and how far a look
    may stray, as its addressee decision uses them now (the configuration, or the last
    calibration). The console draws them under the buyer's head pose: they are the camera's,
    wherever it runs."""

    type: Literal["camera_geometry"] = "camera_geometry"
    targets: dict[str, dict[str, float]] = Field(max_length=16)
    """Avatar -> {"yaw", "pitch"} in degrees, as :class:`HeadPose` measures them."""
    tolerance_deg: float = Field(gt=0, le=180)
    hysteresis_deg: float = Field(ge=0, le=180)


# -- camera calibration ------------------------------------------------------------------------
CalibrationState = Literal["requested", "measuring", "done", "failed"]


class Calibration(Envelope):
    """The operator console asks the camera worker to calibrate for the buyer in the seat
    (``requested``), and the worker answers on the same topic as it goes: ``measuring`` with the
    ``phase`` (an avatar's name, or ``away``) the buyer should look at now, then ``done`` with
    the learned ``targets`` and ``tolerance_deg``, or ``failed`` with the reason in ``detail``.
    The camera worker does it because it holds the webcam: ``humaine-env calibrate`` could not
    open it while the suite runs."""

    type: Literal["calibration"] = "calibration"
    state: CalibrationState
    request_id: str = ""
    """The ``id`` of the request this answers (a request: empty)."""
    phase: str = ""
    phase_deadline: int | None = None
    """When the current phase's measurement ends, ms since the epoch."""
    detail: str = ""
    targets: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Avatar -> {"yaw", "pitch"} once ``done``."""
    tolerance_deg: float | None = None


RoundPhase = Literal["idle", "warmup", "round", "post", "ended"]
PHASE_NAMES: dict[str, str] = {"idle": "waiting", "warmup": "warm-up", "round": "negotiation", "post": "post-round", "ended": "round over"}
"""What every screen and the console call each phase (one name each: the pages get them with
their first snapshot)."""
MAX_PHASE_S = 24 * 3600.0
"""No phase of a negotiation round lasts longer: a longer one on the bus is refused."""
MAX_ROUND_ID_CHARS = 128
MAX_BUYER_CHARS = 80
"""The operator's label for a buyer goes into file and folder names: one line, bounded."""
MAX_WIRE_INT = 2**53
"""Ids and ms times beyond this are not exact in JavaScript (the display) and never real."""


def sane_round_id(value: object) -> int | str:
    """A round id the room can keep, file and show: an int in the wire's exact range, or 1 to
    :data:`MAX_ROUND_ID_CHARS` printable characters (a NUL or a newline in it would end up in a
    folder name, a CSV row, a page). A bool is refused (pydantic would take ``true`` for 1)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError("a round id is an int or a string")
    if isinstance(value, int) and not 0 <= value <= MAX_WIRE_INT:
        raise ValueError(f"round id {value} is out of range")
    if isinstance(value, str) and (not value or len(value) > MAX_ROUND_ID_CHARS or not value.isprintable()):
        raise ValueError(f"a round id is 1 to {MAX_ROUND_ID_CHARS} printable characters")
    return value


SaneRoundId = Annotated[int | str, BeforeValidator(sane_round_id)]
"""A round id as :func:`sane_round_id` takes it: on the bus and at the platform's edge alike."""


class RoundState(Envelope):
    """Retained state of the current round, published by the Avatar Controller from the EO's
    round events. ``round_id`` is ``None`` when no round is known."""

    type: Literal["round_state"] = "round_state"
    round_id: SaneRoundId | None = None
    phase: RoundPhase = "idle"
    durations: dict[str, float] = Field(default_factory=dict)
    """Seconds: ``warmUp``, ``round``, ``post`` (the platform's names)."""
    phase_started: int | None = None
    phase_deadline: int | None = None
    """When the current phase is expected to end, ms since the epoch."""
    buyer: str = Field("", max_length=MAX_BUYER_CHARS)
    """The buyer of this round as the operator named them on the console (``""``: unnamed):
    whoever files something per round (the day book, the round's recorded session) files it
    under the same name."""


    @field_validator("durations")
    @classmethod
    def _sane_durations(cls, value: dict[str, float]) -> dict[str, float]:
        for name, seconds in value.items():
            if not 0 <= seconds <= MAX_PHASE_S:  # NaN fails this too
                raise ValueError(f"duration {name!r} = {seconds} s is not between 0 and {MAX_PHASE_S:g} s")
        return value

    @model_validator(mode="after")
    def _sane_times(self) -> RoundState:
        for name in ("phase_started", "phase_deadline"):
            ms = getattr(self, name)
            if ms is not None and not 0 <= ms <= MAX_WIRE_INT:
                raise ValueError(f"{name} {ms} is not a time")
        if self.phase_started is not None and self.phase_deadline is not None:
            length_ms = self.phase_deadline - self.phase_started
            if not 0 <= length_ms <= MAX_PHASE_S * 1000:
                raise ValueError(f"the phase would last {length_ms / 1000:g} s (0 to {MAX_PHASE_S:g} s)")
        return self

    @property
    def active(self) -> bool:
        """True while human utterances may be relayed for this round."""
        return self.round_id is not None and self.phase == "round"
