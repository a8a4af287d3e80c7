"""One demo seller: the platform's agent API and the turn-taking it keeps to.

Turn-taking (the platform EO's rules as it applies them, kept on our side so the demo never
gets blocked):

* the seller the buyer addressed answers once, :attr:`Timing.reply_delay_s` after the message
  (the EO blocks it after its ``responseTimeLimit``, 4 s);
* the other one stays quiet until the addressee has spoken, then may undercut it once, but
  never within :attr:`Timing.unaddressed_wait_s` of the buyer's message (the EO blocks the
  unnamed seller for 2 s, even once the addressee has answered);
* when nobody was addressed, each may speak once after the addressee window (2 s), staggered;
* a new buyer message cancels whatever was still waiting; never two replies to one utterance.

Every endpoint answers at once; replies are sent to the EO's ``/relayMessage`` from a
background task (the EO holds its forwarding call until we answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from humaine_platform.client import EOClient, HttpPoster, Outcome, RetryPolicy, Timeouts
from humaine_platform.models import ACCEPT_BID_TYPES, HUMAN, OFFER_BID_TYPES, SELLER, ms_to_iso
from standins.demo_agents.parsing import ParsedOffer, closes_a_deal, parse_offer
from standins.demo_agents.settings import DemoAgentsSettings
from standins.demo_agents.strategy import Reply, Seller
from standins.eo.round_setup import CURRENCY, unit_costs

log = logging.getLogger(__name__)

RELAY_RETRIES = RetryPolicy(max_attempts=3, backoff_s=0.05, backoff_max_s=0.2)


@dataclass(frozen=True)
class Timing:
    reply_delay_s: float = 0.3
    follow_delay_s: float = 2.2
    follow_after_rival_s: float = 0.6
    unaddressed_wait_s: float = 2.2


@dataclass
class Turn:
    """The latest buyer utterance as this seller sees it."""

    number: int
    addressee: str
    request: ParsedOffer
    environment_uuid: str
    round_id: Any
    spoken: bool = False
    rival_price: float | None = None
    rival_spoke: bool = False
    rival_closed: bool = False
    """The other seller accepted: this request is a deal already."""
    received: float = field(default_factory=time.monotonic)
    """When the buyer's message reached us (the EO's R2 window runs from about then)."""


@dataclass
class Sent:
    body: dict[str, Any]
    outcome: Outcome


@dataclass
class SellerAgent:
    seller: Seller
    eo_url: str
    peers: list[str]
    """The other sellers' names."""
    timing: Timing = field(default_factory=Timing)
    follow_offset_s: float = 0.0
    """Extra wait of this seller when nobody was addressed (staggering)."""
    request_timeout_s: float = DemoAgentsSettings.model_fields["request_timeout_s"].default
    currency: str = CURRENCY
    round_id: Any = None
    turn: Turn | None = None
    sent: list[Sent] = field(default_factory=list)
    rejections: list[dict[str, Any]] = field(default_factory=list)
    latest_offer_by: str | None = None
    """Who made the room's latest offer (an acceptance addressed to nobody takes it up)."""
    _turns: int = 0
    _pending: asyncio.Task[None] | None = None
    _client: EOClient | None = None

    @property
    def name(self) -> str:
        return self.seller.name

    def _eo(self) -> EOClient:
        if self._client is None:
            timeouts = Timeouts(read_s=self.request_timeout_s, total_s=self.request_timeout_s + 0.5)
            self._client = EOClient(self.eo_url, HttpPoster(timeouts=timeouts, retry=RELAY_RETRIES))
        return self._client

    async def aclose(self) -> None:
        self._cancel_pending()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _cancel_pending(self) -> None:
        if self._pending is not None and not self._pending.done():
            self._pending.cancel()
        self._pending = None

    def _schedule(self, delay_s: float, turn: Turn, follow: bool) -> None:
        self._cancel_pending()
        self._pending = asyncio.get_running_loop().create_task(self._reply_later(delay_s, turn, follow), name=f"{self.name}-reply")

    # -- the agent API ---------------------------------------------------------------------------
    def set_utility(self, body: dict[str, Any]) -> None:
        costs = unit_costs(body)
        self.seller.costs = costs
        self.currency = str(body.get("currencyUnit") or CURRENCY)
        self.round_id = body.get("roundId", self.round_id)
        log.info("%s: unit costs %s", self.name, costs)

    def start_round(self, body: dict[str, Any]) -> None:
        self.round_id = body.get("roundId")
        self._cancel_pending()
        self.turn = None
        self.latest_offer_by = None
        self.seller.reset()

    def end_round(self, _body: dict[str, Any]) -> None:
        self._cancel_pending()
        self.turn = None

    def receive_rejection(self, body: dict[str, Any]) -> None:
        self.rejections.append(body)
        log.info("%s: the EO blocked our message (%s)", self.name, body.get("rationale"))

    def receive_message(self, body: dict[str, Any]) -> None:
        speaker = str(body.get("speaker", ""))
        if speaker == HUMAN:
            self._on_buyer(body)
        elif speaker in self.peers:
            self._on_rival(speaker, body)

    def _on_buyer(self, body: dict[str, Any]) -> None:
        self._cancel_pending()
        self._turns += 1
        addressee = str(body.get("addressee", ""))
        turn = Turn(
            self._turns, addressee, parse_offer(str(body.get("text", ""))),
            str(body.get("environmentUUID", "")), body.get("roundId", self.round_id),
        )
        self.turn = turn
        if addressee == self.name:
            self._schedule(self.timing.reply_delay_s, turn, follow=False)
        elif addressee not in self.peers:
            # nobody (or "Human"): nobody has priority once the addressee window is over
            self._schedule(self.timing.follow_delay_s + self.follow_offset_s, turn, follow=True)

    def _on_rival(self, speaker: str, body: dict[str, Any]) -> None:
        # the EO passes agents each other's words without the bid: what was said tells a deal
        bid = body.get("bid")
        kind = bid.get("type") if isinstance(bid, dict) else None
        text = str(body.get("text", ""))
        closed = kind in ACCEPT_BID_TYPES or closes_a_deal(text)
        if closed:
            self.latest_offer_by = None  # the offers on the table were taken up
        elif kind in OFFER_BID_TYPES or parse_offer(text).price is not None:
            self.latest_offer_by = speaker
        turn = self.turn
        if turn is None or turn.spoken:
            return
        turn.rival_spoke = True
        turn.rival_closed = closed
        turn.rival_price = parse_offer(text).price
        if turn.addressee == speaker:
            window_left = self.timing.unaddressed_wait_s - (time.monotonic() - turn.received)
            self._schedule(max(self.timing.follow_after_rival_s, window_left), turn, follow=True)

    # -- replies -----------------------------------------------------------------------------
    async def _reply_later(self, delay_s: float, turn: Turn, follow: bool) -> None:
        await asyncio.sleep(delay_s)
        if self.turn is not turn or turn.spoken:
            return
        if follow:
            reply = self.seller.follow(turn.request, turn.rival_price, ours_latest=self.latest_offer_by == self.name,
                                       rival_closed=turn.rival_closed)
        else:
            reply = self.seller.respond(turn.request)
        if reply is None:
            return
        turn.spoken = True  # before any await: never twice per utterance
        if reply.bid_type in ACCEPT_BID_TYPES:
            self.latest_offer_by = None
        elif reply.bid_type in OFFER_BID_TYPES:
            self.latest_offer_by = self.name
        await self._send(turn, reply)

    def message_body(self, turn: Turn, reply: Reply) -> dict[str, Any]:
        body: dict[str, Any] = {
            "roundId": turn.round_id,
            "text": reply.text,
            "speaker": self.name,
            "role": SELLER,
            "addressee": HUMAN,
            "environmentUUID": turn.environment_uuid,
            "timeStamp": ms_to_iso(time.time_ns() // 1_000_000),
            "bid": reply.bid(self.currency),
        }
        if reply.gesture:
            body["gesture"] = reply.gesture
        return body

    async def _send(self, turn: Turn, reply: Reply) -> None:
        body = self.message_body(turn, reply)
        outcome = await self._eo().relay_message(body)
        self.sent.append(Sent(body, outcome))
        log.info("%s -> %s (%s): %s", self.name, outcome.kind, reply.bid_type, reply.text)


async def close_all(agents: list[SellerAgent]) -> None:
    for agent in agents:
        with contextlib.suppress(Exception):
            await agent.aclose()
