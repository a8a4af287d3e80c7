"""The current EO's judgement of a proposed message, ported from its source.

``enforce-rules.js`` (``allowMessage``, rules 0-4) and the checks ``/relayMessage`` adds
(bids, ``checkMessage``) of the platform EO at commit 20a32e2, rule by rule, so the stand-in
in its ``real_eo`` mode decides what the EO a venue runs decides, with the same rationales.
:mod:`humaine_platform.rules` keeps the rules as the platform documents them.

Where the EO itself throws (and exits), :class:`EOWouldExit` is raised with the reason; the
stand-in answers that with a 4xx instead.

The queue holds the *permitted* messages with the wall time (ms) each was queued; ``now`` is
the wall time of arrival, or the message's own ``now`` key (the EO honours it: tests use it to
place a message in time without waiting).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

from humaine_platform.models import BUYER, HUMAN, SELLER, json_object

RECENT_HUMAN: Final = "Recent human utterance."
INSUFFICIENT_BUDGET: Final = "Insufficient budget"
PREMATURE_UNADDRESSED: Final = "Premature response from unaddressed agent"
ADDRESSEE_DELAYED: Final = "Addressee message delayed"
UNADDRESSED_JUST_REPLIED: Final = "The unaddressed agent just replied the sentence."
AGENTS_AT_ONCE: Final = "Agents speaking at same time"
TOO_MANY_AGENT_MESSAGES: Final = "Quantity of agents messages exceeded"
AGENT_TWICE: Final = "Agent speaking twice"
TOO_LONG: Final = "Excessive message length"
NO_ITEMS: Final = "no items included in bid offer"
NO_PRICE: Final = "did not include price in bid offer"
USER_REJECTED: Final = "User rejected bid offer"

R0_GAP_MS: Final = 0.5
"""Rule 0's threshold, in ms (the documented 5 s is not what runs)."""
UNADDRESSED_WAIT_MS: Final = 2000
"""Rule 2: the unaddressed agent is blocked this long after a named human message."""
SIMULTANEOUS_MS: Final = 30
"""Rule 2: two agent messages this close are "at the same time" (unless ``canTalkAtOnce``)."""
MAX_WORDS: Final = 100
BID_CHECKED_TYPES: Final = ("Accept", "AcceptOffer", "SellOffer")
"""Agent bids whose quantity and price ``/relayMessage`` checks."""
BOOKED_TYPE: Final = "Accept"
"""Only this bid type goes through ``/confirmAccept`` and the totals (not ``AcceptOffer``)."""
HUMAN_SIDE_NAMES: Final = ("chat-ui", "competition-ui")


class EOWouldExit(Exception):
    """The platform EO throws here and its process exits."""


@dataclass(frozen=True)
class Queued:
    """A permitted message as the EO queues it: the body and the wall time (ms) it was queued."""

    msg: dict[str, Any]
    at_ms: float

    def view(self) -> dict[str, Any]:
        """As ``GET /viewQueue`` shows it."""
        return {"msg": self.msg, "timeStamp": _iso(self.at_ms)}


def _iso(ms: float) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms) % 1000:03d}Z"


def _is_bot(message: dict[str, Any]) -> bool:
    return message.get("speaker") != HUMAN


def _now(message: dict[str, Any], arrived_ms: float) -> float:
    """``new Date(message.now)`` when the message carries ``now`` (ms or an ISO string)."""
    given = message.get("now")
    if not given:
        return arrived_ms
    if isinstance(given, int | float) and not isinstance(given, bool):
        return float(given)
    if isinstance(given, str):
        try:
            text = given[:-1] + "+00:00" if given.endswith("Z") else given
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return float("nan")
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return parsed.timestamp() * 1000
    return float("nan")


def _rule0(message: dict[str, Any], queue: list[Queued], now: float) -> str | None:
    if message.get("speaker") != HUMAN or not queue:
        return None
    humans = [q for q in queue if q.msg.get("speaker") == HUMAN]
    agents = [q for q in queue if q.msg.get("speaker") in ("Watson", "Celia")]
    if not humans:
        return None
    gap = now - humans[-1].at_ms
    gap_agent = now - agents[-1].at_ms if agents else gap
    return RECENT_HUMAN if gap < R0_GAP_MS and gap_agent >= gap else None


def _rule1(message: dict[str, Any], budget: float) -> str | None:
    bid = json_object(message.get("bid"))
    if bid.get("type") != BOOKED_TYPE:
        return None
    amount = json_object(bid.get("price")).get("value", 0.0)
    return INSUFFICIENT_BUDGET if isinstance(amount, int | float) and amount > budget else None


def _rule2(message: dict[str, Any], queue: list[Queued], response_limit_ms: float, can_talk_at_once: bool,
           now: float) -> str | None:
    if not _is_bot(message):
        return None
    humans = [q for q in queue if q.msg.get("speaker") == HUMAN]
    if not humans:
        # lastHumanUtterance is {} and the EO reads {}.msg.addressee: TypeError
        raise EOWouldExit(f"{message.get('speaker')} spoke before the round's first Human message")
    last_human = humans[-1]
    addressee = last_human.msg.get("addressee")
    speaker = message.get("speaker")
    if addressee:
        gap = now - last_human.at_ms
        if addressee != speaker:
            return None if gap > UNADDRESSED_WAIT_MS else PREMATURE_UNADDRESSED
        if gap > response_limit_ms:
            return ADDRESSEE_DELAYED
        last = queue[-1]
        if _is_bot(last.msg) and last.msg.get("speaker") != speaker:
            return UNADDRESSED_JUST_REPLIED
        return None
    last = queue[-1]
    if _is_bot(last.msg) and not can_talk_at_once and now - last.at_ms < SIMULTANEOUS_MS:
        return AGENTS_AT_ONCE
    return None


def _rule3(message: dict[str, Any], queue: list[Queued]) -> str | None:
    if not _is_bot(message) or not queue:
        return None
    trailing = 0
    for queued in reversed(queue):
        if not _is_bot(queued.msg):
            break
        trailing += 1
    if trailing == 2:
        return TOO_MANY_AGENT_MESSAGES
    if queue[-1].msg.get("speaker") == message.get("speaker"):
        return AGENT_TWICE
    return None


def _rule4(message: dict[str, Any]) -> str | None:
    text = message.get("text", "")
    if not isinstance(text, str):
        raise EOWouldExit(f"text is {type(text).__name__}, not a string (the EO calls text.split)")
    return TOO_LONG if len(text.split(" ")) > MAX_WORDS else None


def allow_message(
    message: dict[str, Any],
    budget: float,
    queue: list[Queued],
    response_limit_ms: float,
    can_talk_at_once: bool,
    arrived_ms: float,
) -> tuple[bool, str | None]:
    """``allowMessage``: every rule is evaluated; the rationales of those that block are joined."""
    now = _now(message, arrived_ms)
    verdicts = [
        _rule0(message, queue, now),
        _rule1(message, budget),
        _rule2(message, queue, response_limit_ms, can_talk_at_once, now),
        _rule3(message, queue),
        _rule4(message),
    ]
    blocked = [v for v in verdicts if v is not None]
    return not blocked, (", ".join(blocked) if blocked else None)


def bid_problem(message: dict[str, Any]) -> str | None:
    """``/relayMessage``'s own checks of an agent's offer or acceptance (they replace the
    rules' rationale). A bid without ``price`` or ``quantity`` makes the EO throw."""
    speaker = message.get("speaker")
    if not isinstance(speaker, str):
        raise EOWouldExit("a message without a speaker")
    bid = message.get("bid")
    if speaker.lower() == HUMAN.lower() or not isinstance(bid, dict) or bid.get("type") not in BID_CHECKED_TYPES:
        return None
    problem = None
    quantity = bid.get("quantity")
    if not isinstance(quantity, dict):
        raise EOWouldExit("a bid without quantity")
    if not quantity:
        problem = NO_ITEMS
    else:
        for item, amount in quantity.items():
            if amount is None:
                problem = f"did not include valid quantity for item '{item}'"
                break
    price = bid.get("price")
    if not isinstance(price, dict):
        raise EOWouldExit("a bid without price")
    if not price or price.get("value") is None:
        problem = NO_PRICE
    return problem


def check_message(message: dict[str, Any]) -> bool:
    """``checkMessage``: text and speaker present, role buyer or seller."""
    text, speaker = message.get("text"), message.get("speaker")
    return bool(text) and bool(speaker) and message.get("role") in (BUYER, SELLER)


def sender_of(message: dict[str, Any], names: list[str]) -> str:
    """Who gets the ``/receiveRejection``: the negotiator named like the speaker, or the
    human-side service for the Human. The EO throws when there is none."""
    speaker = message.get("speaker")
    for name in names:
        if name == speaker or (name in HUMAN_SIDE_NAMES and speaker == HUMAN):
            return name
    raise EOWouldExit(f"speaker {speaker!r} is not a negotiator of the round")


@dataclass
class Totals:
    """``updateTotals``: price and quantities per participant (speaker and addressee of each
    booked Accept), and the human's remaining budget."""

    budget: float
    by_name: dict[str, dict[str, Any]]

    def book(self, message: dict[str, Any]) -> None:
        bid = message.get("bid") or {}
        price = (bid.get("price") or {}).get("value", 0.0) or 0.0
        for name in (message.get("speaker"), message.get("addressee")):
            key = str(name)
            entry = self.by_name.setdefault(key, {"price": 0.0, "quantity": {}})
            if key == HUMAN:
                self.budget -= price
            entry["price"] += price
            for good, amount in (bid.get("quantity") or {}).items():
                entry["quantity"][good] = entry["quantity"].get(good, 0) + (amount or 0)

    def summary(self, sellers: list[str], utilities: dict[str, Any]) -> dict[str, Any]:
        """``summarizeResults``: who took part in a deal, with ``revenue`` (sellers) or
        ``cost`` (the buyer) and a ``utility`` (the utility generator's; here ``utilities``)."""
        summary: dict[str, Any] = {}
        for name in [HUMAN, *sellers]:
            entry = self.by_name.get(name)
            if entry is None:
                continue
            money = "cost" if name == HUMAN else "revenue"
            summary[name] = {"quantity": dict(entry["quantity"]), money: entry["price"], "utility": utilities.get(name)}
        return summary
