"""Pydantic models of every JSON body the HUMAINE platform exchanges over HTTP.

Written against ``humaine-platform.md`` and checked against bodies captured from the real EO
(``eo-observed-traffic.json``). Two rules hold for every model:

* **extra keys are kept** (``extra="allow"``): the platform calls the human message a *rich*
  transcript and lets behavioural data ride along; a newer EO or agent must not break us, and
  a body we forward must come out with everything it came in with;
* **missing required keys are rejected** with pydantic's error naming the key, which the HTTP
  layer turns into a 422 / a readable log line instead of a half-built message.

Field names are the platform's own camelCase (``roundId``, ``environmentUUID``), so
``model_dump()`` is the wire body without aliases. ``roundId`` is an int in the platform doc
and a string (``"r1"``) in the real EO's traffic: both are accepted and kept as they came.
Human messages carry ``timestamp`` (ms since the epoch, int); agent messages ``timeStamp``
(ISO 8601 string) - the platform really does use both spellings.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final, Generic, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from humaine_platform.endpoints import ACK_STATUS, CONFIRM_ACCEPT_STATUS
from humaine_platform.reachable import host_port
from workers.runtime.messages import SaneRoundId
from workers.runtime.validation_text import error_line

RoundId = SaneRoundId
"""``1`` in the platform doc, ``"r1"`` in the current EO: kept as received - when it is a round id
at all: one with control characters (a NUL, a newline) or of absurd length is refused here, at the
edge, and never reaches the ledger, a file name or a page (:func:`~workers.runtime.messages.sane_round_id`)."""
Number = int | float
"""Quantities and amounts: ints stay ints so a re-serialised body equals the original."""

HUMAN: Final = "Human"
"""``speaker`` of the human's messages and ``addressee`` of the agents' replies."""
BUYER: Final = "buyer"
SELLER: Final = "seller"

BID_TYPES: Final = ("SellOffer", "BuyOffer", "Accept", "AcceptOffer", "Reject", "Information")
"""Bid types seen in practice. Others are accepted (an agent must not be cut off because it
invented a type), see :attr:`Bid.known_type`."""
ACCEPT_BID_TYPES: Final = ("Accept", "AcceptOffer")
OFFER_BID_TYPES: Final = ("SellOffer", "BuyOffer")
"""Bids that put an offer on the table (an Accept takes one up instead)."""


class PlatformModel(BaseModel):
    """Base of every platform body: unknown keys kept, field names as on the wire."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    _sent: dict[str, Any] = PrivateAttr(default_factory=dict)
    """What the EO sent for the top-level keys :func:`read_lenient` had to fill in (a key it
    left out is not here), so a copy of its words can give them back (:meth:`as_sent`)."""
    _filled: tuple[str, ...] = PrivateAttr(default=())

    def as_sent(self) -> dict[str, Any]:
        """The body as the EO sent it, not as filled in to be read (e.g. its ``role: null``)."""
        body = self.model_dump(mode="json", exclude_none=True)
        for key in self._filled:
            if "." in key:
                continue
            if key in self._sent:
                body[key] = self._sent[key]
            else:
                body.pop(key, None)
        return body

    def body(self) -> dict[str, Any]:
        """The JSON body to send: every field, extras included, ``None`` optionals left out
        (the platform omits absent keys rather than sending ``null``)."""
        return self.model_dump(mode="json", exclude_none=True)


def json_object(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a part that is missing or of the
    wrong shape reads as empty, and the checks on it then say what is missing)."""
    return value if isinstance(value, dict) else {}


# -- bids ----------------------------------------------------------------------------------------
def finite_number(value: object) -> float | None:
    """A JSON number as a float (``True`` is not one, nor NaN or an infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    result = float(value)
    return result if math.isfinite(result) else None


def whole_goods(quantity: object) -> dict[str, int]:
    """A bid's ``quantity`` as whole quantities (what the utility generator counts); anything
    else in it, or a quantity that is not a JSON object, is left out."""
    if not isinstance(quantity, dict):
        return {}
    goods = {}
    for name, amount in quantity.items():
        value = finite_number(amount)
        if value is not None and value > 0:
            goods[str(name)] = int(value)
    return goods


class Price(PlatformModel):
    unit: str
    value: Number


class Bid(PlatformModel):
    """The structured offer an agent attaches to its text. The current EO crashes on a bid
    without ``price``; that is the EO's problem, so ``price`` stays optional here and
    :attr:`has_price` lets a sender check first."""

    type: str
    quantity: dict[str, Number] = Field(default_factory=dict)
    price: Price | None = None

    @property
    def known_type(self) -> bool:
        return self.type in BID_TYPES

    @property
    def is_accept(self) -> bool:
        return self.type in ACCEPT_BID_TYPES

    @property
    def has_price(self) -> bool:
        return self.price is not None

    @property
    def goods(self) -> dict[str, int]:
        """The goods as whole quantities (:func:`whole_goods`)."""
        return whole_goods(self.quantity)

    @property
    def amount(self) -> float | None:
        """The price's value, when it has a finite one."""
        return finite_number(self.price.value) if self.price is not None else None


# -- utterances ----------------------------------------------------------------------------------
class _Message(PlatformModel):
    """Fields common to human and agent messages."""

    speaker: str
    addressee: str
    """An avatar's name, ``"Human"``, or ``""`` for nobody in particular."""
    text: str
    role: str
    environmentUUID: str
    roundId: RoundId

    @property
    def is_human(self) -> bool:
        return self.speaker == HUMAN


class HumanUtterance(_Message):
    """What the Rich Transcript worker sends to ``/relayMessage`` (and what the EO forwards
    to ``/receiveMessage`` for the human's own turns)."""

    speaker: Literal["Human"] = HUMAN
    role: Literal["buyer"] = BUYER
    timestamp: int
    """ms since the epoch."""

    @field_validator("timestamp")
    @classmethod
    def _plausible_ms(cls, value: int) -> int:
        if value < 0:
            raise ValueError("timestamp must be ms since the epoch (>= 0)")
        return value


def _zulu(value: str) -> str:
    """``...Z`` as ``...+00:00``: Python 3.10's ``fromisoformat`` does not read ``Z``."""
    return value[:-1] + "+00:00" if value.endswith("Z") else value


def _check_iso(value: str) -> str:
    try:
        datetime.fromisoformat(_zulu(value))
    except ValueError:
        raise ValueError(f"not an ISO 8601 time: {value!r}") from None
    return value


def iso_to_ms(value: str) -> int:
    """ms since the epoch of an ISO 8601 ``timeStamp`` (``Z`` or offset; naive = UTC)."""
    parsed = datetime.fromisoformat(_zulu(value))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


def ms_to_iso(ms: int) -> str:
    """The platform's ``timeStamp`` spelling of a ms time (``2020-02-20T08:08:05.825Z``)."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class AgentMessage(_Message):
    """A seller agent's message (sent to ``/relayMessage``; forwarded by the EO)."""

    role: str = SELLER
    timeStamp: str
    """ISO 8601 (``2020-02-20T08:08:05.825Z``)."""
    bid: Bid | None = None

    @field_validator("timeStamp")
    @classmethod
    def _iso(cls, value: str) -> str:
        return _check_iso(value)

    @property
    def time_ms(self) -> int:
        return iso_to_ms(self.timeStamp)


Message = HumanUtterance | AgentMessage


def parse_message(body: dict[str, Any]) -> Message:
    """A ``/receiveMessage`` or ``/relayMessage`` body as the right model: the human's by
    ``speaker == "Human"`` (the EO's own test), an agent's otherwise.

    Raises :class:`pydantic.ValidationError` naming the missing or bad keys."""
    if not isinstance(body, dict):
        raise TypeError(f"a message body must be a JSON object, got {type(body).__name__}")
    if body.get("speaker") == HUMAN:
        return HumanUtterance.model_validate(body)
    return AgentMessage.model_validate(body)


class _Judged(PlatformModel):
    """A proposed message as echoed back by the EO (log entry or rejection): either kind of
    message, so the kind-specific keys are optional here; :meth:`message` re-reads it as the
    proper model."""

    speaker: str
    addressee: str
    text: str
    role: str
    environmentUUID: str
    roundId: RoundId
    timestamp: int | None = None
    timeStamp: str | None = None
    bid: Bid | None = None

    def message(self) -> Message:
        """The message itself, without the EO's verdict keys."""
        data = self.model_dump(mode="json", exclude_none=True)
        for key in ("permitted", "rationale"):
            data.pop(key, None)
        return parse_message(data)


class LogEntry(_Judged):
    """``/receiveLog``: every proposed message with the EO's verdict."""

    permitted: bool
    rationale: str | None
    """``null`` when permitted; the blocking rule's text otherwise."""

    def body(self) -> dict[str, Any]:
        data = super().body()
        data["rationale"] = self.rationale  # explicitly null on the wire
        return data


class Rejection(_Judged):
    """``/receiveRejection``: the sender's message was blocked."""

    rationale: str


class ConfirmAccept(AgentMessage):
    """``/confirmAccept``: an agent's Accept; the EO records the sale only once the human
    side answers :func:`confirm_accept_answer`."""

    bid: Bid


# -- round life cycle ---------------------------------------------------------------------------
class SetUtility(PlatformModel):
    """``/setUtility``: the utility function of one participant (``name``) for a round."""

    utility: dict[str, Any]
    name: str
    currencyUnit: str | None = None
    roundId: RoundId | None = None


class StartRound(PlatformModel):
    """``/startRound``. From the EO: ``{"roundId", "roundDuration", "timestamp"}`` (timestamp
    is an ISO string in the current EO). To the EO, only ``{"roundId"}`` - hence the optionals."""

    roundId: RoundId
    roundDuration: Number | None = None
    """Seconds."""
    timestamp: str | int | None = None


class EndRound(PlatformModel):
    roundId: RoundId
    timestamp: str | int | None = None


class Durations(PlatformModel):
    """Phase lengths of a round, seconds."""

    warmUp: Number
    round: Number
    post: Number


class Budget(PlatformModel):
    value: Number
    currentUnit: str | None = None
    """The current EO's spelling (sic) of the currency unit."""


class RoundMetadata(PlatformModel):
    """``/sendRoundMetadata`` to the human-side service, before the warm-up."""

    roundId: RoundId
    durations: Durations
    humanBudget: Budget


class ParticipantTotals(PlatformModel):
    quantity: dict[str, Number] = Field(default_factory=dict)
    cost: Number | None = None
    revenue: Number | None = None
    utility: dict[str, Any] | None = None


class RoundTotals(PlatformModel):
    """``/receiveRoundTotals`` after the post-round phase; keyed by participant name."""

    roundId: RoundId
    roundTotals: dict[str, ParticipantTotals]


class NegotiatorInfo(PlatformModel):
    """One participant of ``/initializeRound``."""

    name: str
    host: str | None = None
    port: int | None = None
    protocol: str | None = None
    type: str | None = None
    utilityFunction: dict[str, Any] | None = None


class InitializeRound(PlatformModel):
    """The EO's ``/initializeRound`` body: the full round. Exactly which keys the EO reads
    beyond these is not documented, so everything else is kept as extra."""

    roundId: RoundId
    agents: list[NegotiatorInfo]
    human: NegotiatorInfo | dict[str, Any] | None = None
    durations: Durations


# -- answers ----------------------------------------------------------------------------------
class Acknowledgement(PlatformModel):
    """The small JSON answer of every endpoint (``{"status": "Acknowledged"}``); agents add
    keys such as ``interpretation`` or ``utility``, which are kept."""

    status: str
    roundId: RoundId | None = None

    @property
    def acknowledged(self) -> bool:
        return self.status.lower() == ACK_STATUS.lower()


def acknowledgement(**extra: Any) -> dict[str, Any]:
    """The usual answer body."""
    return {"status": ACK_STATUS, **extra}


def confirm_accept_answer() -> dict[str, Any]:
    """The only ``/confirmAccept`` answer the current EO takes as a yes."""
    return {"status": CONFIRM_ACCEPT_STATUS}


# -- appSettings.json -----------------------------------------------------------------------------
class ServiceEntry(PlatformModel):
    protocol: str = "http"
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"{self.protocol}://{self.host}:{self.port}"

    @classmethod
    def of_url(cls, url: str) -> ServiceEntry:
        """The entry of the service at ``url`` (the inverse of :attr:`url`)."""
        host, port = host_port(url)
        return cls(protocol=urlsplit(url).scheme or "http", host=host, port=port)


class AppSettings(PlatformModel):
    """A HUMAINE ``appSettings.json``: service addresses by name (``serviceMap``), and in the
    EO's own file the ``negotiatorsInfo`` list of participants."""

    serviceMap: dict[str, ServiceEntry]
    negotiatorsInfo: list[NegotiatorInfo] | None = None
    standalone: bool | None = None
    """The EO's own file: whether ``/startRound`` takes the whole round (and calls it ``"true"``)."""

    def human_services(self) -> list[str]:
        """The names of the ``type: human`` participants: the EO calls each of them with every
        human-side call, and looks each up in its ``serviceMap``."""
        return [info.name for info in self.negotiatorsInfo or () if info.type == "human"]


# -- helpers ----------------------------------------------------------------------------------
MODELS_BY_PATH: Final[dict[str, type[PlatformModel]]] = {}
"""Filled below: the request model of each path (for servers that validate by path)."""


def _register() -> None:
    from humaine_platform import endpoints as ep

    MODELS_BY_PATH.update(
        {
            ep.SET_UTILITY: SetUtility,
            ep.START_ROUND: StartRound,
            ep.END_ROUND: EndRound,
            ep.SEND_ROUND_METADATA: RoundMetadata,
            ep.RECEIVE_LOG: LogEntry,
            ep.RECEIVE_REJECTION: Rejection,
            ep.RECEIVE_ROUND_TOTALS: RoundTotals,
            ep.CONFIRM_ACCEPT: ConfirmAccept,
            ep.INITIALIZE_ROUND: InitializeRound,
        }
    )


_register()


def describe_error(exc: ValidationError) -> str:
    """One readable line from a validation error: ``roundId: Field required; ...``."""
    return error_line(exc.errors(), "(body)")


# -- reading what the EO sends, liberally -----------------------------------------------------
_Model = TypeVar("_Model", bound=PlatformModel)


@dataclass(frozen=True)
class Lenient(Generic[_Model]):
    """What :func:`read_lenient` made of a body: the model (``None`` when even the fill-ins
    could not make one), the keys it filled in or dropped, and the error left, if any."""

    value: _Model | None
    filled: tuple[str, ...] = ()
    error: str = ""


def _now_iso() -> str:
    return ms_to_iso(time.time_ns() // 1_000_000)


_FILL_INS: Final[dict[str, Callable[[dict[str, Any]], Any]]] = {
    "environmentUUID": lambda _body: "",
    "addressee": lambda _body: "",
    "text": lambda _body: "",
    "role": lambda body: BUYER if body.get("speaker") == HUMAN else SELLER,
    "timeStamp": lambda _body: _now_iso(),
    "timestamp": lambda _body: time.time_ns() // 1_000_000,
    "rationale": lambda _body: "",
    "utility": lambda _body: {},
    "name": lambda _body: "",
    "roundTotals": lambda _body: {},
}
"""What a missing or unreadable key becomes when the EO sends a body without it: the current EO
needs neither ``timeStamp`` nor ``environmentUUID`` of an agent, relays ``role: null`` (and
rejects it with a null rationale), and sends ``roundTotals: null`` when its utility generator
is away. Keys not listed here (``roundId``, ``speaker``) cannot be made up."""


def read_lenient(model: type[_Model], body: Any) -> Lenient[_Model]:
    """``model`` from a body the EO sent, filling in what the platform may leave out.

    Be liberal toward the EO: it exits when its human-side service answers with an error, so
    what it may send is read, not refused. Keys the model rejects are filled from
    :data:`_FILL_INS`; an unreadable ``bid`` is dropped, an unreadable bid quantity set to 0."""
    if not isinstance(body, dict):
        return Lenient(None, (), f"a JSON object is expected, got {type(body).__name__}")
    data = dict(body)
    filled: list[str] = []
    for _pass in range(3):
        try:
            value = model.model_validate(data)
            value._filled = tuple(dict.fromkeys(filled))
            value._sent = {key: body[key] for key in value._filled if key in body}
            return Lenient(value, value._filled)
        except ValidationError as exc:
            changed = False
            for err in exc.errors():
                loc = err["loc"]
                key = str(loc[0]) if loc else ""
                if key in _FILL_INS and key not in filled and key in model.model_fields:
                    data[key] = _FILL_INS[key](data)
                    filled.append(key)
                    changed = True
                elif key == "bid" and len(loc) >= 3 and loc[1] == "quantity" and isinstance(data.get("bid"), dict):
                    bid = dict(data["bid"])
                    bid["quantity"] = {**bid.get("quantity", {}), str(loc[2]): 0}
                    data["bid"] = bid
                    filled.append(f"bid.quantity.{loc[2]}")
                    changed = True
                elif key == "bid" and "bid" not in filled and "bid" in model.model_fields and not model.model_fields["bid"].is_required():
                    data.pop("bid", None)
                    filled.append("bid")
                    changed = True
            if not changed:
                return Lenient(None, tuple(filled), describe_error(exc))
    try:
        value = model.model_validate(data)
        value._filled = tuple(dict.fromkeys(filled))
        value._sent = {key: body[key] for key in value._filled if key in body}
        return Lenient(value, value._filled)
    except ValidationError as exc:
        return Lenient(None, tuple(filled), describe_error(exc))


__all__ = [
    "ACCEPT_BID_TYPES",
    "BID_TYPES",
    "BUYER",
    "HUMAN",
    "MODELS_BY_PATH",
    "SELLER",
    "Acknowledgement",
    "AgentMessage",
    "AppSettings",
    "Bid",
    "Budget",
    "ConfirmAccept",
    "Durations",
    "EndRound",
    "HumanUtterance",
    "InitializeRound",
    "Lenient",
    "LogEntry",
    "Message",
    "NegotiatorInfo",
    "ParticipantTotals",
    "PlatformModel",
    "Price",
    "Rejection",
    "RoundId",
    "RoundMetadata",
    "RoundTotals",
    "ServiceEntry",
    "SetUtility",
    "StartRound",
    "acknowledgement",
    "confirm_accept_answer",
    "describe_error",
    "iso_to_ms",
    "ms_to_iso",
    "parse_message",
    "read_lenient",
]
