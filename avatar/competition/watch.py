"""What happens to the rounds the room started after they started: their agent programs stopped once
their totals are in (or they are lost), an agent that exits on its own said on the console, and a
scheduled round that ended without its totals put back at the end of the schedule, once.

Polled (each second) rather than told: the totals of a round the operator ended on the platform's
EO come minutes later, while another round may run; an agent program dies when it dies; and a room
restarted in between must find both from the ledger alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from avatar.books.records import OPEN_PHASES, TOTALS_GRACE_MS, LedgerRound
from avatar.competition.agents import AgentPrograms
from avatar.competition.store import CompetitionStore, Launch
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)

WATCH_S: Final = 1.0
PHASE_KEYS: Final = ("warmUp", "round", "post")


def over(store: CompetitionStore, launch: Launch) -> tuple[bool, str] | None:
    """Whether a started round is over, as ``(it has its totals, why not)``; None while it is not."""
    rnd = store.round_of(launch)
    if rnd is not None and rnd.totals is not None:
        return True, ""
    if rnd is not None and rnd.phase == "lost":
        return False, rnd.note or "the EO lost it"
    due = launch.ends_ms
    if due is None and rnd is not None and rnd.phase == "ended":
        return False, rnd.note or "its totals never reached the room"
    if due is None:
        due = launch.at_ms + round(sum(float(launch.durations.get(k, 0.0)) for k in PHASE_KEYS) * 1000)
    if now_ms() > due + TOTALS_GRACE_MS and (rnd is None or rnd.phase not in OPEN_PHASES):
        return False, rnd.note if rnd is not None and rnd.note else "its totals never reached the room"
    return None


class RoundWatch:
    """Looks after the started rounds of one room."""

    def __init__(self, store: CompetitionStore, agents: AgentPrograms, roster: str | None,
                 alert: Callable[[str, str], None], changed: Callable[[], None],
                 lost: Callable[[LedgerRound], Awaitable[None]] | None = None) -> None:
        """``lost``: told of the room's current round once it is lost while this process runs."""
        self.store = store
        self.agents = agents
        self.roster = roster
        self.alert = alert
        self.changed = changed
        self.lost = lost
        current = store.ledger.current()
        self._lost_seen = current.key if current is not None and current.phase == "lost" else None
        """The last lost round told of (one lost before this process started is not news)."""

    async def run(self) -> None:
        while True:
            try:
                await self.look_after()
            except Exception as exc:  # a look that fails is the next one's to repeat
                log.debug("looking after the rounds failed: %s", exc, exc_info=True)
            await asyncio.sleep(WATCH_S)

    async def look_after(self) -> None:
        """One look: exited programs said, ended scheduled rounds settled, the programs of rounds
        that are over stopped, a round just lost told."""
        current = self.store.ledger.current()
        if current is not None and current.phase == "lost" and current.key != self._lost_seen:
            self._lost_seen = current.key
            if self.lost is not None:
                await self.lost(current)
        for run, how in self.agents.exited():
            launch = self.store.launch(run.launch_id)
            rnd = self.store.round_of(launch) if launch is not None else None
            if rnd is not None and rnd.open:
                self.alert("agent_exited", f"agent {run.agent} ({run.avatar}) exited during round {rnd.round_id}: {how} "
                                           f"(log: {run.log})")
            self.changed()
        self.settle()
        for launch_id in sorted({run.launch_id for run in self.store.running_agents()}):
            launch = self.store.launch(launch_id)
            if launch is None or launch.state == "starting" or over(self.store, launch) is None:
                continue
            await asyncio.to_thread(self.agents.stop_round, launch.id, f"round {launch.round_id} is over")
            self.changed()

    def settle(self) -> None:
        """Each scheduled round that ended: played (it has its totals) or lost (put back once)."""
        if self.roster is None:
            return
        for slot, launch in self.store.launches_of_slots(self.roster, ("playing",)):
            if launch.state not in ("started", "ended_early"):
                continue
            found = over(self.store, launch)
            if found is None:
                continue
            scored, why = found
            if scored:
                self.store.set_slot(slot.id, "played")
                continue
            again = self.store.put_back(slot, self.roster)
            text = f"round {launch.round_id} ({slot.slot.buyer}) is lost: {why}"
            text += "; it is played again at the end of the schedule" if again else "; it was a replay already: not again"
            with contextlib.suppress(Exception):
                self.alert("round_lost", text)
            self.changed()
