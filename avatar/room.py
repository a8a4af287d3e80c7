"""What the Avatar Controller's parts share: one room's books, screens and bus.

The controller (:mod:`avatar.controller`) makes one :class:`Room` and hands it to each part
that keeps the books or tells the screens (:class:`~avatar.eo_intake.MessageIntake`,
:class:`~avatar.display_history.DisplayHistory`, :class:`~avatar.confirmations.Confirmations`,
:class:`~avatar.round_life.RoundLife`), so they read the same ledger, round and display through
one door and none holds another's attributes. The speech output gets only the bus and the
display: it keeps no books.
"""

from __future__ import annotations

from dataclasses import dataclass

from avatar.books.ledger import RoomLedger
from avatar.display import DisplayHub
from avatar.room_bus import Publisher
from avatar.round_books import RoundBooks
from avatar.round_state import RoundEvents


@dataclass(frozen=True)
class Room:
    """One room's shared pieces."""

    ledger: RoomLedger
    """The room's books (:mod:`avatar.room_ledger`)."""
    round_events: RoundEvents
    """The EO's round events as the ledger keeps them: which round an id is."""
    books: RoundBooks
    """Every screen's account of the round: told after each change to the books."""
    bus: Publisher
    """The part of the bus the room publishes on."""
    source: str
    """The worker id the room's messages carry."""
    hub: DisplayHub
    """The pages' state and their WebSocket feed."""
