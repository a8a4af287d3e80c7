"""What the round's rows read as: a round as the EO told it, its offers, confirmations, deals
and allocation, and the whole book every view of the round is derived from."""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from humaine_platform.models import ParticipantTotals, finite_number
from workers.runtime.messages import now_ms

LedgerPhase = Literal["warmup", "round", "post", "ended", "lost"]
OPEN_PHASES: Final = ("warmup", "round", "post")
"""A round in one of these has not ended yet: the EO may still book, end or score it."""
OVER_PHASES: Final = ("ended", "lost")
"""A round in one of these is over: a yes the EO has not booked by now never will be, and a late
``/startRound`` or ``/endRound`` of it changes nothing."""
TOTALS_GRACE_MS: Final = 30_000
"""The EO sends a round's totals at the end of its post-round; none this long after that, and
they are not coming (the EO forgot the round, or the room missed them)."""
_PHASES_LEFT: Final = {"warmup": ("round", "post"), "round": ("post",)}
"""The phases still to come after each open phase, by their keys in the round's durations."""
PromptOutcome = Literal["waiting", "sent", "declined", "booked", "cut", "unbooked"]
"""``waiting``: asked or queued; ``sent``: the buyer's yes went to the EO, which books next;
``declined``: the answer was no; ``booked``: the EO forwarded the deal; ``cut``: the controller
stopped before it answered (the platform EO exits on that); ``unbooked``: the round ended with a
yes the EO never booked."""
DealSource = Literal["eo", "eo-totals"]
"""``eo``: the seller's Accept the EO forwarded after booking it; ``eo-totals``: a difference the
EO's own totals showed (``/viewTotals``) that never reached us as a message."""

def dumps(value: Any) -> str:
    """As the EO sent it (its keys' order is what the pages show)."""
    return json.dumps(value, separators=(",", ":"))


def goods_text(goods: Mapping[str, int]) -> str:
    """Goods in one spelling whatever their order, so two bids of the same goods compare equal."""
    return json.dumps(dict(goods), sort_keys=True, separators=(",", ":"))


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def day_of(ms: int) -> str:
    """The local date of a moment (ms since the epoch): the competition day it belongs to."""
    return datetime.datetime.fromtimestamp(ms / 1000).date().isoformat()


def round_label(round_id: object) -> str:
    """Rounds are found by the text of their id: ``1`` (a JSON number) and ``"1"`` are one round."""
    return str(round_id)


def participant_totals(totals: Mapping[str, Any] | None, name: str) -> ParticipantTotals | None:
    """``name``'s entry of a round's totals as the ledger keeps them (each entry the EO's
    :class:`~humaine_platform.models.ParticipantTotals`, as :mod:`avatar.round_state` wrote it);
    None: no totals yet, or none for ``name``."""
    entry = (totals or {}).get(name)
    return ParticipantTotals.model_validate(entry) if entry is not None else None


def utility_of(entry: ParticipantTotals | None) -> float | None:
    """A participant's utility in the EO's totals, when it is a finite number."""
    return finite_number((entry.utility or {}).get("value")) if entry is not None else None


@dataclass(frozen=True)
class LedgerRound:
    """One round as the EO told it, from its metadata to its totals."""

    key: int
    """The ledger's own id of the round (a round id may come back on another day)."""
    round_id: int | str
    day: str
    started_ms: int
    buyer: str
    phase: LedgerPhase
    phase_started_ms: int | None
    phase_deadline_ms: int | None
    durations: dict[str, float]
    budget: float | None
    currency: str
    utility: dict[str, Any] | None
    totals: dict[str, Any] | None
    undelivered: int
    note: str

    @property
    def open(self) -> bool:
        return self.phase in OPEN_PHASES

    def totals_due_ms(self) -> int:
        """When the EO sends this round's totals: the end of its post-round, as first timed (an
        early End round on the platform's EO does not move it)."""
        left = _PHASES_LEFT.get(self.phase, ())
        return int((self.phase_deadline_ms or now_ms()) + sum(float(self.durations.get(k, 0.0)) for k in left) * 1000)


@dataclass(frozen=True)
class Offer:
    seller: str
    goods: dict[str, int]
    price: float
    text: str
    at_ms: int


@dataclass(frozen=True)
class Prompt:
    """A seller's Accept the EO asked the human side to confirm (``/confirmAccept``)."""

    id: str
    round_key: int
    seq: int
    seller: str
    text: str
    bid: dict[str, Any]
    goods: dict[str, int]
    price: float | None
    received_ms: int
    asked_ms: int | None
    """When the buyer was asked (prompts are asked one at a time; None: still queued)."""
    deadline_ms: int | None
    accepted: bool | None
    answered_by: str
    answered_ms: int | None
    outcome: PromptOutcome


@dataclass(frozen=True)
class Deal:
    """A deal the EO booked."""

    id: int
    round_key: int
    seller: str
    goods: dict[str, int]
    price: float
    text: str
    prompt_id: str | None
    booked_ms: int
    source: DealSource


@dataclass(frozen=True)
class SavedAllocation:
    products: dict[str, Any]
    value: float | None
    saved_ms: int


@dataclass(frozen=True)
class RoundBook:
    """A round with everything booked in it: what every view of the round is derived from."""

    round: LedgerRound
    offers: list[Offer] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)
    deals: list[Deal] = field(default_factory=list)
    allocation: SavedAllocation | None = None

    @property
    def spent(self) -> float:
        return round(sum(d.price for d in self.deals), 2)

    def bought(self) -> dict[str, int]:
        """Every good of the booked deals, summed."""
        have: dict[str, int] = {}
        for deal in self.deals:
            for good, amount in deal.goods.items():
                have[good] = have.get(good, 0) + amount
        return have

    @property
    def left(self) -> float | None:
        return None if self.round.budget is None else round(self.round.budget - self.spent, 2)

    def waiting(self) -> list[Prompt]:
        """The prompts still waiting for the buyer's answer, in the order they are asked."""
        return [p for p in self.prompts if p.outcome == "waiting"]


ROUND_COLUMNS: Final = ("key, round_id, day, started_ms, buyer, phase, phase_started_ms, phase_deadline_ms, durations, "
                         "budget, currency, utility, totals, undelivered, note")
PROMPT_COLUMNS: Final = ("id, round_key, seq, seller, text, bid, goods, price, received_ms, asked_ms, deadline_ms, accepted, "
                          "answered_by, answered_ms, outcome")
DEAL_COLUMNS: Final = "id, round_key, seller, goods, price, text, prompt_id, booked_ms, source"


def round_of_row(row: tuple[Any, ...]) -> LedgerRound:
    (key, round_id, day, started, buyer, phase, phase_started, deadline, durations, budget, currency, utility, totals,
     undelivered, note) = row
    return LedgerRound(key, loads(round_id), day, started, buyer, phase, phase_started, deadline, loads(durations) or {},
                       budget, currency, loads(utility), loads(totals), undelivered, note)


def prompt_of_row(row: tuple[Any, ...]) -> Prompt:
    (pid, round_key, seq, seller, text, bid, goods, price, received, asked, deadline, accepted, by, answered, outcome) = row
    return Prompt(pid, round_key, seq, seller, text, loads(bid), loads(goods), price, received, asked, deadline,
                  None if accepted is None else bool(accepted), by, answered, outcome)


def deal_of_row(row: tuple[Any, ...]) -> Deal:
    did, round_key, seller, goods, price, text, prompt_id, booked, source = row
    return Deal(did, round_key, seller, loads(goods), price, text, prompt_id, booked, source)
