"""The booking rules: what a seller's bid puts in the round's books, which confirmation a booked
Accept answers, and which open rounds a new round closes.

The EO is the truth about a round; these rules say how what it tells the human side becomes the
books. They decide on the platform's typed messages (:class:`~humaine_platform.models.Bid`,
:class:`~humaine_platform.models.AgentMessage`) and on the books' records; the ledger
(:mod:`avatar.books.ledger`) writes what they decide, each decision in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from avatar.books.records import LedgerPhase
from humaine_platform.eo_rules import BOOKED_TYPE
from humaine_platform.models import HUMAN, OFFER_BID_TYPES, AgentMessage, Bid

TOTALS_NEVER_CAME: Final = "the EO's totals never reached the room"


def is_standing_offer(bid: Bid) -> bool:
    """The bid puts an offer on the table (goods and a price): that seller's current offer."""
    return bid.type in OFFER_BID_TYPES and bool(bid.goods) and bid.amount is not None


def is_booked_deal(message: AgentMessage) -> bool:
    """A seller's Accept to the buyer, forwarded by the EO, is a deal it booked: it forwards an
    Accept only after every human side said yes, and books it for speaker and addressee."""
    return message.bid is not None and message.bid.type == BOOKED_TYPE and str(message.addressee) == HUMAN


@dataclass(frozen=True)
class SentYes:
    """A confirmation the buyer said yes to, which the EO has not booked yet."""

    prompt_id: str
    goods_text: str
    price: float | None


def answered_prompt(sent: Sequence[SentYes], goods: str, price: float) -> str | None:
    """The confirmation a booked deal of ``goods`` (in the books' spelling,
    :func:`~avatar.books.records.goods_text`) for ``price`` answers: the oldest yes sent to that
    seller for the same goods and price, else the oldest yes to that seller (``sent`` oldest first)."""
    same = next((s for s in sent if s.goods_text == goods and s.price == price), None)
    found = same or (sent[0] if sent else None)
    return found.prompt_id if found is not None else None


@dataclass(frozen=True)
class Closing:
    """How a round still open ends when the EO opens another."""

    key: int
    phase: LedgerPhase
    note: str


def closed_by_new_round(open_rounds: Sequence[tuple[int, LedgerPhase]], new_round_id: int | str) -> list[Closing]:
    """The rounds still open (``open_rounds``: key and phase, each in
    :data:`~avatar.books.records.OPEN_PHASES`) are over when the EO opens round ``new_round_id``: one whose
    negotiation had ended is closed without the totals that never came; one still negotiating is
    lost (the EO started another: it keeps one round at a time for a room)."""
    return [Closing(key, "ended", TOTALS_NEVER_CAME) if phase == "post"
            else Closing(key, "lost", f"the EO started round {new_round_id} before this one ended")
            for key, phase in open_rounds]
