"""Every event the pages receive over their WebSockets, one pydantic model each, and the one
message they send back.

Two feeds: the display hub's (the display page, ``avatar/display/static/display.js``, and the
buyer's page, ``avatar/buyer/static/buyer.js``, both on the display's socket) and the operator
console's (``avatar/operator/static/console.js``). A page's script dispatches each event on its
``type`` through a ``handlers`` map; a model's :attr:`PageEvent.pages` names the pages whose script
handles it, and ``tests/unit/avatar/test_page_events.py`` holds every script to the models (a type
no handler takes, a handler no model sends). A field's name is the key the scripts read: rename
it here and in the scripts together.

The models are built where the event happens and serialised once, by the hub
(:meth:`PageModel.wire`, then strict JSON). Numbers keep the type they came with (:data:`Number`):
the wire carries ``3`` where the platform sent 3, not ``3.0``.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Final, Literal, TypeVar, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from formats import written
from workers.runtime.messages import NOBODY, HeadPose, OutgoingMessage, Speaking, Stage, Stages, Status, new_id, now_ms

Page = Literal["display", "buyer", "console"]
Number = int | float
"""A JSON number as it came (a ``float`` field would send an int as ``3.0``)."""
RoundId = int | str | None
View = dict[str, Any]
"""A JSON object a page reads as it is (a view the hub keeps, the EO's totals)."""
Written = Annotated[str, AfterValidator(written.amounts)]
"""Words a person reads on a page (a caption, a line of the history): the dollar amounts in them
written as people write money, "0.8 USD" as "$0.80" (:func:`formats.written.amounts`), whatever
the agent sent. The records (the ledger, the bus, the session files) keep the text as it came."""


class PageModel(BaseModel):
    """What a page reads: exactly these fields (an unknown key is a bug, refused at once)."""

    model_config = ConfigDict(extra="forbid")

    optional: ClassVar[frozenset[str]] = frozenset()
    """Fields that go on the wire only when they were given (a page tells "absent" from null)."""

    @model_serializer(mode="wrap")
    def _absent_left_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """An optional field not given is left out at every dump, also of a model kept inside
        another (the display hub's picture)."""
        data: dict[str, Any] = handler(self)
        for key in self.optional - self.model_fields_set:
            data.pop(key, None)
        return data

    def wire(self) -> dict[str, Any]:
        """The fields as the page gets them (JSON-ready values, serialised by the hub)."""
        return self.model_dump()


V = TypeVar("V", bound=PageModel)
"""A view the display hub keeps of an event."""


class PageEvent(PageModel):
    """One event on a page's feed, told apart by ``type``."""

    type: str
    pages: ClassVar[frozenset[Page]] = frozenset()
    """The pages whose script handles this event; empty for an event only tools read on the
    feed (the tests and benchmarks that follow a round on it)."""

    @classmethod
    def event_type(cls) -> str:
        """The value of ``type`` (the model's ``Literal``)."""
        (value,) = get_args(cls.model_fields["type"].annotation)
        return str(value)

    def wire(self) -> dict[str, Any]:
        data = super().wire()
        return {"type": data.pop("type"), **data}  # the type first: what a reader of the feed looks for

    def payload(self) -> dict[str, Any]:
        """The wire form without ``type``: what the display hub keeps of the event for a new page."""
        data = self.wire()
        del data["type"]
        return data

    def kept_as(self, view: builtins.type[V], leaving: Iterable[str] = ()) -> V:  # `type` here is the field
        """The event as the ``view`` the display hub keeps of it: its :meth:`payload`, without
        the fields ``leaving`` (what says when it was sent rather than what it shows)."""
        data = self.payload()
        for key in leaving:
            del data[key]
        return view.model_validate(data)


# -- both feeds ----------------------------------------------------------------------------------
class RoundView(PageModel):
    """The round's phase and deadlines, as the display hub keeps them."""

    round_id: RoundId
    phase: str
    durations: dict[str, Number]
    phase_started: int | None
    phase_deadline: int | None


class RoundEvent(RoundView, PageEvent):
    """The round's phase and deadlines changed; ``now`` is the server's clock (the pages' timers)."""

    type: Literal["round"] = "round"
    pages = frozenset({"display", "buyer", "console"})
    now: int

    def view(self) -> RoundView:
        """What the hub keeps: not ``now``, the server's clock when it was sent, not the round's."""
        return self.kept_as(RoundView, leaving=("now",))


class AttentionView(PageModel):
    """Whom the buyer looks at (the camera worker's decision), and since when."""

    target: str
    since: int


class AttentionEvent(AttentionView, PageEvent):
    """Whom the buyer looks at now."""

    type: Literal["attention"] = "attention"
    pages = frozenset({"display", "console"})

    def view(self) -> AttentionView:
        return self.kept_as(AttentionView)


# -- the display hub's feed (the display and the buyer's page) -----------------------------------
class Caption(PageModel):
    """What the display hub keeps of an avatar's speaking begin (the snapshot's ``speaking`` and
    ``captions``): the event without its ``type`` and ``state``."""

    optional = frozenset({"audio"})
    avatar: str
    text: str
    """Already written for people (:data:`Written`) by the event it comes from."""
    message_id: str
    at: int
    latency_ms: int
    audio: str | None = None


class LogLine(PageModel):
    """One line of the display's history as the hub keeps it (a ``log`` event without its ``type``)."""

    speaker: str
    text: str
    """Already written for people (:data:`Written`) by the event it comes from."""
    permitted: bool
    rationale: str | None
    at: int

    def same_words(self, other: LogLine) -> bool:
        """The same line said again (what a blocked message reported twice looks like)."""
        return (self.speaker, self.text, self.permitted) == (other.speaker, other.text, other.permitted)


class MessageEvent(PageEvent):
    """A message the EO permitted: the buyer's own is shown; an avatar's says what became of it."""

    type: Literal["message"] = "message"
    pages = frozenset({"display"})
    optional = frozenset({"verdict"})
    message_id: str
    speaker: str
    addressee: str
    text: Written
    bid: View | None
    at: int
    verdict: str | None = None
    """An avatar's message only: queued for speech, or why not."""


class DisplayState(PageModel):
    """What the display hub keeps, so that a page opened mid-round shows the right picture."""

    optional = frozenset({"buyer"})
    avatars: list[str]
    looks: dict[str, str]
    confirm_mode: str
    round: RoundView | None
    attention: AttentionView | None
    last_human: MessageEvent | None
    """The buyer's last message, as its ``message`` event."""
    speaking: Caption | None
    """The caption being spoken."""
    captions: dict[str, Caption | None]
    confirms: list[PromptView]
    log: list[LogLine]
    camera: CameraView | None
    deals: list[DealView]
    totals: View | None
    phase_names: dict[str, str]
    mass_nouns: list[str]
    """Goods people do not put in the plural ("2 flour", :data:`formats.written.MASS_NOUNS`): the
    pages' count helper writes counts as :func:`formats.written.count` does."""
    buyer: BuyerView | None = None
    """The buyer page's view of the round's books, once they were first read."""


class DisplaySnapshot(DisplayState, PageEvent):
    """The whole picture: first thing on a new connection, and to every page when a new round
    begins (the previous buyer's conversation gone, :meth:`avatar.display.DisplayHub.set_round`)."""

    type: Literal["snapshot"] = "snapshot"
    pages = frozenset({"display", "buyer"})


class BookedEvent(PageEvent):
    """The EO booked a deal (it forwarded the seller's Accept): the buyer page says so."""

    type: Literal["booked"] = "booked"
    pages = frozenset({"buyer"})
    seller: str
    goods: dict[str, int]
    price: Number
    prompt_id: str | None
    at: int


class SpeakingBegin(PageEvent):
    """An avatar's first sample is about to be heard: its caption, and (``speaker = "browser"``)
    where the page fetches the audio."""

    type: Literal["speaking"] = "speaking"
    pages = frozenset({"display"})
    optional = frozenset({"audio"})
    state: Literal["begin"] = "begin"
    avatar: str
    text: Written
    message_id: str
    at: int
    latency_ms: int
    audio: str | None = None

    def caption(self) -> Caption:
        """The caption the hub keeps (the snapshot's ``speaking`` and ``captions``)."""
        return self.kept_as(Caption, leaving=("state",))


class SpeakingEnd(PageEvent):
    """An avatar's last sample was heard (``cut``: the buyer barged in)."""

    type: Literal["speaking"] = "speaking"
    pages = frozenset({"display"})
    state: Literal["end"] = "end"
    avatar: str
    message_id: str
    at: int
    cut: bool


class VisemesEvent(PageEvent):
    """The mouth shapes of the next stretch of speech: ``(audio ms, viseme)`` pairs."""

    type: Literal["visemes"] = "visemes"
    pages = frozenset({"display"})
    avatar: str
    message_id: str
    visemes: list[tuple[int, str]]


class WordEvent(PageEvent):
    """The word being spoken now (the caption follows it)."""

    type: Literal["word"] = "word"
    pages = frozenset({"display"})
    avatar: str
    message_id: str
    word: str


class GestureEvent(PageEvent):
    """An avatar makes a gesture now (the message's, or an SSML mark's as speech reaches it)."""

    type: Literal["gesture"] = "gesture"
    pages = frozenset({"display"})
    avatar: str
    name: str
    message_id: str
    at: int


class NotSpokenEvent(PageEvent):
    """A message the speech queue dropped (stale, full queue), with the reason."""

    type: Literal["not_spoken"] = "not_spoken"
    avatar: str
    message_id: str
    reason: str


class UtilityEvent(PageEvent):
    """A participant's utility arrived (the buyer page reads the values from its ``buyer`` view)."""

    type: Literal["utility"] = "utility"
    name: str
    roundId: RoundId
    goods: list[str]


class RejectionEvent(PageEvent):
    """The EO blocked a message (the history line comes as ``log``)."""

    type: Literal["rejection"] = "rejection"
    speaker: str
    text: Written
    rationale: str


class LogEvent(PageEvent):
    """One line of the display's history (a blocked one with the EO's reason)."""

    type: Literal["log"] = "log"
    pages = frozenset({"display"})
    speaker: str
    text: Written
    permitted: bool
    rationale: str | None
    at: int

    def line(self) -> LogLine:
        """The line the hub keeps of it."""
        return self.kept_as(LogLine)


class ConfirmDoneEvent(PageEvent):
    """A seller's Accept was answered, and by whom (a page, the voice, the timeout, a shutdown)."""

    type: Literal["confirm_done"] = "confirm_done"
    pages = frozenset({"buyer"})
    id: str
    accepted: bool
    by: str


class CameraView(PageModel):
    """The camera worker's status: gaze is available only while it is online."""

    state: str
    detail: str


class CameraStateEvent(CameraView, PageEvent):
    """The camera worker's status changed."""

    type: Literal["camera"] = "camera"
    pages = frozenset({"display"})

    def view(self) -> CameraView:
        return self.kept_as(CameraView)


class OfferView(PageModel):
    """A seller's offer on the table, as the buyer page lists it."""

    seller: str
    goods: dict[str, int]
    price: Number
    text: str
    at: int


class BoughtView(PageModel):
    """A deal the EO booked, as the buyer page lists it."""

    seller: str
    goods: dict[str, int]
    price: Number
    at: int
    source: str


class WaitingView(PageModel):
    """A deal the buyer said yes to that waits for the EO to book it."""

    id: str
    seller: str
    goods: dict[str, int]
    price: Number | None


CutFate = Literal["booked", "not_booked", "unknown"]


class CutView(WaitingView):
    """What became of a deal that waited for the buyer's answer when the room stopped, and why
    (:func:`avatar.buyer.book.cut_fates`)."""

    fate: CutFate
    why: str


class SavedView(PageModel):
    """The allocation the buyer saved to the EO this round."""

    products: View
    value: Number | None
    at: int


class SupplementView(PageModel):
    """What a supplement adds to one unit of a product, by the quantity put in (the page's
    allocation editor offers these ranges)."""

    unit: str
    min_quantity: Number
    max_quantity: Number
    min_value: Number
    max_value: Number


class ProductView(PageModel):
    """A product's value per unit, and its supplements."""

    unit_value: Number
    supplements: dict[str, SupplementView]


class UtilityView(PageModel):
    """The buyer's utility as the page shows it: per product its values, in words, in its currency."""

    values: dict[str, ProductView]
    lines: list[str]
    currency: str


class PlanView(PageModel):
    """The best allocation of what was bought, its value, and what one more of each product needs."""

    products: View
    """In the utility generator's shape (:meth:`humaine_platform.buyer_utility.Allocation.products_body`)."""
    value: Number
    needed_for_one_more: dict[str, dict[str, Number]]


class BuyerView(PageModel):
    """The buyer page's view of the round's books (:func:`avatar.buyer.book.buyer_event`), as the
    display hub keeps it for a page opened or reconnecting."""

    round_id: RoundId
    phase: str | None
    budget: Number | None
    spent: Number
    left: Number | None
    offers: list[OfferView]
    offered: bool
    """A seller made an offer this round (an empty list then means none is open now, not none yet)."""
    deals: list[BoughtView]
    waiting_eo: list[WaitingView]
    cut: list[CutView]
    """What became of each deal that waited for the buyer's answer when the room restarted
    (:func:`avatar.buyer.book.cut_fates`)."""
    have: dict[str, int]
    saved: SavedView | None
    human_totals: View | None
    """The buyer's entry of the EO's totals, as the EO sent it."""
    round_totals: View | None
    result: str | None
    """The EO's score of the round in words (:func:`avatar.buyer.book.round_result`)."""
    utility: UtilityView | None
    utility_problem: str | None
    plan: PlanView | None
    recipe: dict[str, dict[str, int]]


class BuyerEvent(BuyerView, PageEvent):
    """The buyer page's view of the round's books changed."""

    type: Literal["buyer"] = "buyer"
    pages = frozenset({"buyer"})

    def view(self) -> BuyerView:
        """What the hub keeps of it."""
        return self.kept_as(BuyerView)


class DealView(PageModel):
    """A deal the EO booked, as the display lists it."""

    seller: str
    goods: dict[str, int]
    price: Number
    text: str
    source: str
    at: int


class DealsEvent(PageEvent):
    """The round's booked deals and the EO's totals (the display's summary after the negotiation)."""

    type: Literal["deals"] = "deals"
    pages = frozenset({"display"})
    round_id: RoundId
    deals: list[DealView]
    totals: View | None


class PromptView(PageModel):
    """One seller's Accept waiting for the buyer's answer, as the pages show it."""

    id: str
    speaker: str
    text: str
    """The seller's words, their amounts already written as people write money."""
    bid: View
    goods: dict[str, int]
    price: Number | None
    budget_after: Number | None
    """The budget left once this and every prompt before it are accepted."""
    asks: str
    timeout_s: Number
    deadline: int | None
    """Only the first (the one asked) has one."""
    timeout_answer: str
    position: int
    queued: int


class ConfirmsEvent(PageEvent):
    """The sellers' Accepts waiting for an answer; the first is the one asked."""

    type: Literal["confirms"] = "confirms"
    pages = frozenset({"display", "buyer"})
    queue: list[PromptView]


DisplayEvent = (DisplaySnapshot | MessageEvent | BookedEvent | SpeakingBegin | SpeakingEnd | VisemesEvent | WordEvent
                | GestureEvent | NotSpokenEvent | RoundEvent | UtilityEvent | RejectionEvent | LogEvent | ConfirmDoneEvent
                | CameraStateEvent | AttentionEvent | BuyerEvent | DealsEvent | ConfirmsEvent)
"""Everything on the display hub's feed."""


class PageDecision(BaseModel):
    """What a page sends on the display's socket: its answer to a confirmation (the buyer page's,
    or the display's in ``operator`` mode)."""

    type: Literal["confirm"]
    id: str
    accept: bool
    by: Literal["buyer", "operator"] = "operator"


# -- the operator console's feed -------------------------------------------------------------------
AlertKind = Literal["worker_offline", "worker_error", "worker_silent", "blocked", "undelivered", "maybe_delivered",
                    "books_differ", "round_lost", "agent_exited", "round_refused"]
AlertLevel = Literal["error", "warning", "notice"]
"""``notice``: a documented fallback the room goes on without (no webcam on a laptop), said, not a fault."""
REPLY_WINDOW_MS: Final = 60_000
"""An agent message received this long after the buyer's relay is no longer its reply."""
REPLIES_KEPT: Final = 4
TIMELINE: Final = (
    (Stage.SPEECH_END, "speech end", False), (Stage.FINAL, "final", False), (Stage.RELAY_SENT, "relay", False),
    (Stage.EO_ANSWER, "EO answer", False), (Stage.RECEIVED, "agent reply", True), (Stage.FIRST_AUDIO, "avatar speaking", True),
)
"""The stages the console draws, in order: (name, label, whether a reply's): the buyer's (speech
end to the EO's answer), then each reply's (received by the Avatar Controller, first audio)."""


class WorkerView(PageModel):
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


class PoseView(PageModel):
    """One head pose as the console plots it."""

    yaw: float
    pitch: float
    roll: float
    confidence: float
    face_id: int | None
    frame_ts: int

    @classmethod
    def of(cls, pose: HeadPose) -> PoseView:
        return cls.model_validate(pose.model_dump(include=set(cls.model_fields)))


class ReplyView(PageModel):
    """An agent's message spoken after the buyer's utterance, with its stages."""

    avatar: str
    message_id: str
    text: str
    stages: Stages
    cut: bool = False


class UtteranceView(PageModel):
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


class Alert(PageModel):
    """Something the operator should look at, a fact of the day (:mod:`avatar.operator.alerts`)."""

    id: str = Field(default_factory=new_id)
    at: int = Field(default_factory=now_ms)
    kind: AlertKind
    level: AlertLevel
    text: str
    subject: str = ""
    """What it is about, when something can make it untrue (a worker's name)."""
    resolved: int | None = None
    """When what it says stopped being true (ms); None while it holds."""
    resolution: str = ""


class ConsoleSnapshot(PageEvent):
    """The console's whole picture, first thing on a new connection (``now``: the server's clock)."""

    type: Literal["snapshot"] = "snapshot"
    pages = frozenset({"console"})
    timeline: list[View]
    phase_names: dict[str, str]
    camera: View
    links: dict[str, View]
    workers: dict[str, View]
    round: View | None
    attention: View | None
    poses: list[View]
    speaking: dict[str, bool]
    utterances: list[View]
    alerts: list[View]
    day: DaySummary | None
    calibration: View | None
    competition: View | None
    now: int


class StatusEvent(WorkerView, PageEvent):
    """A worker's status changed, or it went silent."""

    type: Literal["status"] = "status"
    pages = frozenset({"console"})


class CalibrationEvent(PageEvent):
    """The camera calibration's progress (``phase``: whom the buyer should look at now)."""

    type: Literal["calibration"] = "calibration"
    pages = frozenset({"console"})
    state: str
    phase: str
    phase_deadline: int | None
    detail: str
    targets: dict[str, dict[str, float]]
    tolerance_deg: float | None
    source: str
    now: int


class CameraGeometryEvent(PageEvent):
    """The avatars' directions the camera worker uses (the head-pose plot's targets)."""

    type: Literal["camera"] = "camera"
    pages = frozenset({"console"})
    targets: dict[str, dict[str, float]]
    tolerance_deg: float | None
    hysteresis_deg: float | None
    worker: str


class HeadposeEvent(PoseView, PageEvent):
    """The buyer's head pose (the plot's trail), at the camera's rate."""

    type: Literal["headpose"] = "headpose"
    pages = frozenset({"console"})


class UtteranceEvent(UtteranceView, PageEvent):
    """A buyer utterance, new or with a reply added."""

    type: Literal["utterance"] = "utterance"
    pages = frozenset({"console"})


class AvatarSpeakingEvent(PageEvent):
    """An avatar started (``begin``) or stopped (``end``) speaking."""

    type: Literal["speaking"] = "speaking"
    pages = frozenset({"console"})
    avatar: str
    state: str


class DayRow(PageModel):
    """One round of the day as the console's table and the day's CSV have it
    (:meth:`avatar.operator.day.DayBook.summary`)."""

    date: str
    round: RoundId
    buyer: str
    started: str
    """The local time it started (``HH:MM:SS``)."""
    state: str
    """The round's phase; ``lost`` when the EO lost the round."""
    deals: int
    paid: Number
    allocation_saved: bool
    buyer_utility: Number | None
    seller_revenue: Number
    """The same booked deals as ``paid``: the day's two sides add up."""
    seller_utility: Number | None
    undelivered: int
    note: str


class BuyerDay(PageModel):
    """A buyer's rounds of the day, summed."""

    rounds: int
    deals: int
    paid: Number
    utility: Number


class SellerDay(PageModel):
    """A seller's rounds of the day, summed."""

    rounds: int
    revenue: Number
    utility: Number


class DaySummary(PageModel):
    """The day's rounds, per buyer and per seller (:meth:`avatar.operator.day.DayBook.summary`)."""

    date: str
    rounds: list[DayRow]
    buyers: dict[str, BuyerDay]
    sellers: dict[str, SellerDay]
    next_buyer: str


class DayEvent(DaySummary, PageEvent):
    """The day's rounds changed."""

    type: Literal["day"] = "day"
    pages = frozenset({"console"})

    @classmethod
    def of(cls, summary: DaySummary) -> DayEvent:
        """The event that sends ``summary``."""
        return cls.model_validate(summary.model_dump())


class CompetitionEvent(PageEvent):
    """The competition's picture changed: which EO the room drives, the next round (its buyer and
    agents) and how many are left, the durations, the standings, the agent programs running
    (:meth:`avatar.competition.control.RoundControl.view`)."""

    type: Literal["competition"] = "competition"
    pages = frozenset({"console"})
    driver: View
    tournament: bool
    next: View | None
    left: int
    durations: dict[str, float]
    standings: View
    agents: list[View]


class LinkEvent(PageEvent):
    """The broker's or the EO's reachability changed: the link's fields that are known so far."""

    type: Literal["link"] = "link"
    pages = frozenset({"console"})
    optional = frozenset({"connected", "url", "reachable", "detail", "standin", "durations"})
    name: str
    connected: bool | None = None
    """The broker's: whether the Avatar Controller is connected to it."""
    url: str | None = None
    reachable: bool | None = None
    detail: str | None = None
    standin: bool | None = None
    """Whether the EO is the suite's stand-in (the console then drives the rounds)."""
    durations: dict[str, float] | None = None
    """The stand-in's next round's durations, as its health answer says them."""


class AlertEvent(Alert, PageEvent):
    """A new alert for the console's list, or one resolved (the same ``id``, ``resolved`` set)."""

    type: Literal["alert"] = "alert"
    pages = frozenset({"console"})


ConsoleEvent = (ConsoleSnapshot | StatusEvent | RoundEvent | CalibrationEvent | CameraGeometryEvent | AttentionEvent
                | HeadposeEvent | UtteranceEvent | AvatarSpeakingEvent | DayEvent | CompetitionEvent | LinkEvent | AlertEvent)
"""Everything on the console's feed."""

FEEDS: Final[dict[Page, tuple[type[PageEvent], ...]]] = {
    "display": get_args(DisplayEvent),
    "buyer": get_args(DisplayEvent),
    "console": get_args(ConsoleEvent),
}
"""The events each page's socket carries (the buyer's page listens on the display's)."""
