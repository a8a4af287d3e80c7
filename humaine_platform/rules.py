"""The EO's turn-taking rules R0-R4 as the platform documents them, as pure functions over a
timestamped message queue.

Used to explain delivery outcomes in logs (the transcript worker) and by the stand-in EO in its
``documented`` mode. What the platform's EO really decides is the port of its own code,
:mod:`humaine_platform.eo_rules`. Times are the moments the messages *reach the EO* (ms, any
consistent clock); the queue holds earlier proposals with their verdicts, oldest first. Nothing
here does I/O or reads a clock.

Documented semantics (``humaine-platform.md``) with the interpretation chosen where the text
leaves room:

* R0 - a human message less than :attr:`RuleSettings.r0_min_gap_ms` after the previous
  *permitted* human message is blocked.
* R1 - a message whose bid is an acceptance (``Accept``/``AcceptOffer``) at a price above the
  human's remaining budget (budget minus the prices of earlier permitted acceptances) is
  blocked. Without a budget R1 does not apply.
* R2 - after a human message addressed to an agent, that agent has the first right to reply
  for :attr:`RuleSettings.r2_window_ms` (2 s); another agent's reply before the window ends and
  before the addressee has spoken is blocked. A message addressed to nobody (``""``) or to
  "Human" gives no one priority.
* R3 - each agent speaks at most once after the latest permitted human message (so of two
  near-simultaneous replies the first one evaluated wins); an agent speaking before any human
  message is blocked too (the platform's EO exits on it).
* R4 - agent messages over :attr:`RuleSettings.r4_max_words` words are blocked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from humaine_platform.models import ACCEPT_BID_TYPES, HUMAN

DOCUMENTED_R0_GAP_MS: Final = 5000.0
DOCUMENTED_R2_WINDOW_MS: Final = 2000.0
DEFAULT_R4_MAX_WORDS: Final = 100

# The rationale strings: R3 and R4 as the platform's EO words them, the others ours.
R0_RATIONALE: Final = "Human speaking too soon"
R1_RATIONALE: Final = "Insufficient budget"
R2_RATIONALE: Final = "Agent speaking out of turn"
R3_RATIONALE: Final = "Agent speaking twice"
R3_NO_HUMAN_RATIONALE: Final = "Agent speaking before the human"
R4_RATIONALE: Final = "Excessive message length"

_TAGS = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class RuleSettings:
    """The thresholds of R0-R4: the documented ones unless a round says otherwise."""

    r0_min_gap_ms: float = DOCUMENTED_R0_GAP_MS
    r2_window_ms: float = DOCUMENTED_R2_WINDOW_MS
    r4_max_words: int = DEFAULT_R4_MAX_WORDS
    human_budget: float | None = None
    """The human's budget for R1; ``None`` switches R1 off."""


@dataclass(frozen=True)
class Proposal:
    """A proposed message as the rules see it."""

    speaker: str
    addressee: str
    text: str
    at_ms: float
    """When it reached the EO."""
    bid_type: str | None = None
    price: float | None = None

    @property
    def is_human(self) -> bool:
        return self.speaker == HUMAN

    @classmethod
    def from_body(cls, body: dict[str, object], at_ms: float) -> Proposal:
        """From a platform message body (human or agent)."""
        bid = body.get("bid") if isinstance(body.get("bid"), dict) else None
        price = None
        bid_type = None
        if isinstance(bid, dict):
            bid_type = str(bid.get("type")) if bid.get("type") is not None else None
            raw_price = bid.get("price")
            if isinstance(raw_price, dict) and isinstance(raw_price.get("value"), int | float):
                price = float(raw_price["value"])
        return cls(
            speaker=str(body.get("speaker", "")),
            addressee=str(body.get("addressee", "")),
            text=str(body.get("text", "")),
            at_ms=at_ms,
            bid_type=bid_type,
            price=price,
        )


@dataclass(frozen=True)
class Verdict:
    permitted: bool
    rationale: str | None = None
    rule: str | None = None
    """``"R0"``..``"R4"`` for a blocked message."""


PERMITTED: Final = Verdict(True)


@dataclass(frozen=True)
class Entry:
    """One queue item: a proposal and what the rules decided."""

    proposal: Proposal
    verdict: Verdict


def word_count(text: str) -> int:
    """Words of the spoken text (SSML tags do not count)."""
    return len(_TAGS.sub(" ", text).split())


def _permitted(queue: Sequence[Entry]) -> list[Proposal]:
    return [e.proposal for e in queue if e.verdict.permitted]


def _latest_human(queue: Sequence[Entry]) -> tuple[int, Proposal] | None:
    permitted = _permitted(queue)
    for index in range(len(permitted) - 1, -1, -1):
        if permitted[index].is_human:
            return index, permitted[index]
    return None


def r0_human_gap(queue: Sequence[Entry], message: Proposal, settings: RuleSettings) -> Verdict | None:
    if not message.is_human:
        return None
    latest = _latest_human(queue)
    if latest is not None and message.at_ms - latest[1].at_ms < settings.r0_min_gap_ms:
        return Verdict(False, R0_RATIONALE, "R0")
    return None


def r1_budget(queue: Sequence[Entry], message: Proposal, settings: RuleSettings) -> Verdict | None:
    if settings.human_budget is None or message.bid_type not in ACCEPT_BID_TYPES or message.price is None:
        return None
    spent = sum(p.price or 0.0 for p in _permitted(queue) if p.bid_type in ACCEPT_BID_TYPES)
    if settings.human_budget - spent - message.price < 0:
        return Verdict(False, R1_RATIONALE, "R1")
    return None


def r2_addressee_first(queue: Sequence[Entry], message: Proposal, settings: RuleSettings) -> Verdict | None:
    if message.is_human:
        return None
    latest = _latest_human(queue)
    if latest is None:
        return None
    index, human = latest
    addressee = human.addressee
    if not addressee or addressee == HUMAN or addressee == message.speaker:
        return None
    addressee_spoke = any(p.speaker == addressee for p in _permitted(queue)[index + 1:])
    if not addressee_spoke and message.at_ms - human.at_ms < settings.r2_window_ms:
        return Verdict(False, R2_RATIONALE, "R2")
    return None


def r3_once_per_turn(queue: Sequence[Entry], message: Proposal, settings: RuleSettings) -> Verdict | None:
    if message.is_human:
        return None
    latest = _latest_human(queue)
    if latest is None:
        return Verdict(False, R3_NO_HUMAN_RATIONALE, "R3")
    index, _ = latest
    if any(p.speaker == message.speaker for p in _permitted(queue)[index + 1:]):
        return Verdict(False, R3_RATIONALE, "R3")
    return None


def r4_length(queue: Sequence[Entry], message: Proposal, settings: RuleSettings) -> Verdict | None:
    if message.is_human:
        return None
    if word_count(message.text) > settings.r4_max_words:
        return Verdict(False, R4_RATIONALE, "R4")
    return None


Rule = Callable[[Sequence[Entry], Proposal, RuleSettings], "Verdict | None"]
RULES: Final[tuple[tuple[str, Rule], ...]] = (
    ("R4", r4_length),
    ("R0", r0_human_gap),
    ("R1", r1_budget),
    ("R3", r3_once_per_turn),
    ("R2", r2_addressee_first),
)
"""Evaluation order: the first rule that blocks names the verdict. Length first (a message
too long is too long whatever the turn), then the human's gap, the budget, speaking twice,
and the addressee's priority."""


def evaluate(queue: Sequence[Entry], message: Proposal, settings: RuleSettings | None = None) -> Verdict:
    """The verdict on ``message`` given the earlier proposals in ``queue``."""
    chosen = settings or RuleSettings()
    for _name, rule in RULES:
        verdict = rule(queue, message, chosen)
        if verdict is not None:
            return verdict
    return PERMITTED


@dataclass
class TurnQueue:
    """A round's queue: evaluate each proposal in arrival order and remember the verdict
    (the stand-in EO's state; also handy to replay a session log)."""

    settings: RuleSettings = field(default_factory=RuleSettings)
    entries: list[Entry] = field(default_factory=list)

    def propose(self, message: Proposal) -> Verdict:
        verdict = evaluate(self.entries, message, self.settings)
        self.entries.append(Entry(message, verdict))
        return verdict

    def overrule(self, entry: Entry, verdict: Verdict) -> None:
        """Replace the verdict of ``entry`` (this very object, wherever later proposals put it):
        a permitted Accept the human side then declines must not count as said (R3) nor as
        spent (R1), as the platform EO queues an Accept only once it is confirmed."""
        for index, queued in enumerate(self.entries):
            if queued is entry:
                self.entries[index] = Entry(entry.proposal, verdict)
                return
