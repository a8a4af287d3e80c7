"""The room's Next round and End round, on whatever EO it is wired to, and the competition's turn.

The Avatar Controller replaces the platform's competition-ui, whose Start and End buttons are
what starts and ends rounds at the venue (``server.js``: ``newRound``, ``endRound``); the EO
starts nothing by itself. Next round here:

1. takes the next round of the roster's fair schedule (:mod:`avatar.competition.tournament`), or -
   without ``[tournament]`` - the avatars' configured sellers and the buyer the operator named;
2. draws its utilities (:class:`~avatar.competition.utilities.UtilitySource`); a scheduled round's
   are drawn once per key and kept, so both meetings of a twin set and every buyer's set get the
   same functions;
3. allocates a round id no round of the day has used (``r1``, ``r2``, ... also across restarts:
   the ledger says which are used);
4. starts the agents that run per round and checks that the others answer (1, 2 and 4 are
   :class:`~avatar.competition.lineup.RoundLineup`'s);
5. calls the EO as the platform does (:class:`~avatar.competition.eo_rounds.EORounds`).

Anything that fails before the EO took the round refuses in one line naming the cause, and uses
nothing of the schedule. End round ends the stand-in's current phase; on the platform's EO the
round is over for the room at once, its totals coming at its own end
(:mod:`humaine_platform.end_round`). What happens to a round afterwards is
:class:`~avatar.competition.watch.RoundWatch`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from avatar.books.ledger import RoomLedger
from avatar.books.records import LedgerRound, day_of
from avatar.competition.agents import AgentPrograms
from avatar.competition.eo_rounds import KIND_WORDS, STANDALONE_ROUND_ID, EOKind, EORounds, RoundCallRefused
from avatar.competition.lineup import Refused, RoundLineup, initialize_round
from avatar.competition.settings import RoundsSettings, TournamentSettings
from avatar.competition.standings import Standings
from avatar.competition.store import HUMAN_SERVICES_FACT, CompetitionStore, SeatPlan
from avatar.competition.tournament import ScheduleError, Tournament
from avatar.competition.utilities import UtilitySource
from avatar.competition.watch import PHASE_KEYS, RoundWatch
from humaine_platform.models import ServiceEntry
from humaine_platform.reachable import answers_soon
from humaine_platform.service_map import ServiceMapError, resolve_utility_generator_url
from workers.runtime.config import OrchestratorSettings
from workers.runtime.logs import NOTICE
from workers.runtime.messages import MAX_PHASE_S, PHASE_NAMES, now_ms

log = logging.getLogger(__name__)

DURATIONS_FACT: Final = "durations"
"""The ledger's fact of the durations the operator last started a round with."""
AUTO_START_WAIT_S: Final = 60.0
"""How long a room that starts its first round by itself waits for the EO and the sellers."""
AUTO_START_POLL_S: Final = 0.5
BUSY: Final = "a round is being started or ended: wait for it"


@dataclass(frozen=True)
class ControlAnswer:
    """What Next or End round did (or why not), as the console shows it."""

    ok: bool
    reason: str = ""
    fields: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"ok": self.ok, **({"reason": self.reason} if self.reason else {}), **self.fields}


def checked_durations(given: Mapping[str, Any] | None, defaults: Mapping[str, float]) -> dict[str, float]:
    """The durations of the next round: the operator's (seconds, each from 0 to a day, the
    negotiation above 0) over ``defaults``; :class:`Refused` naming what is wrong."""
    chosen = dict(defaults)
    for key, value in (given or {}).items():
        if key not in PHASE_KEYS:
            raise Refused(f"unknown duration {key!r}: the durations are {', '.join(PHASE_KEYS)} (seconds)")
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_PHASE_S:
            raise Refused(f"duration {key} = {value!r}: seconds from 0 to {MAX_PHASE_S:g}")
        chosen[key] = float(value)
    if chosen["round"] <= 0:
        raise Refused("the negotiation must last more than 0 s")
    return chosen


class RoundControl:
    """Next round, End round and the competition of one room."""

    def __init__(self, ledger: RoomLedger, avatars: Sequence[str], *, rounds: RoundsSettings, tournament: TournamentSettings,
                 eo: OrchestratorSettings, data_dir: Path, human: ServiceEntry,
                 alert: Callable[[str, str], None] = lambda _kind, _text: None,
                 refresh: Callable[[], None] = lambda: None) -> None:
        """``human``: where the EO reaches this Avatar Controller; ``alert``: the console's alerts;
        ``refresh``: the round state and every view, after the room changed a round itself."""
        self.ledger = ledger
        self.avatars = list(avatars)
        self.rounds = rounds
        self.tournament = tournament
        self.human = human
        self.alert = alert
        self.refresh = refresh
        self.store = CompetitionStore(ledger)
        try:
            generator_url = resolve_utility_generator_url(eo)
        except ServiceMapError:
            generator_url = None  # the EO's own settings say it; the room draws with the suite's port
        self.eo = EORounds(eo, rounds.start_timeout_s, generator_url)
        self.utilities = UtilitySource(generator_url, tournament.seed)
        self.agents = AgentPrograms(self.store, tournament, data_dir)
        self.competition = Tournament(self.store, tournament, avatars)
        try:
            self.competition.plan()  # the console shows the next round before the first Next round
        except ScheduleError as exc:
            log.error("%s", exc)  # said again, in its words, by every Next round
        self.lineup = RoundLineup(ledger, self.store, avatars, rounds=rounds, tournament=tournament, competition=self.competition,
                                  utilities=self.utilities, agents=self.agents)
        self.watch = RoundWatch(self.store, self.agents, self.competition.roster, alert, self.changed, self.after_a_loss)
        self.kind: EOKind | None = None
        """What the last look at the EO found it to be."""
        self._busy = asyncio.Lock()
        self._listeners: list[Callable[[dict[str, Any]], None]] = []
        """Told the console's picture of the competition whenever it changed."""
        self._view: dict[str, Any] | None = None
        self._changing = threading.Lock()

    @property
    def eo_url(self) -> str | None:
        return self.eo.url

    @property
    def problem(self) -> str:
        return self.eo.problem

    def serve_at(self, human: ServiceEntry) -> None:
        """Where the EO reaches this Avatar Controller, once its port is known (``port = 0``)."""
        self.human = human

    # -- what the EO is ------------------------------------------------------------------------------
    async def look(self) -> EOKind | None:
        """Whether the EO answers and what it is (the console's driver line follows it)."""
        kind = await self.eo.look()
        if kind != self.kind:
            self.kind = kind
            self.changed()
        return kind

    def driver(self) -> dict[str, Any]:
        """Which EO the room drives, in words (the console's round controls line)."""
        if self.eo.url is None:
            text = self.eo.problem or "no EO is configured"
        else:
            text = KIND_WORDS.get(self.kind or "", "the EO, not reached")
        return {"kind": self.kind, "url": self.eo.url or "", "text": text, "utilities": self.utilities.source}

    # -- Next round ----------------------------------------------------------------------------------
    async def next_round(self, durations: Mapping[str, Any] | None = None, buyer: str | None = None) -> ControlAnswer:
        """Start the next round (its buyer: the schedule's, else ``buyer``, else the one named on
        the console); refused in words, with nothing of the schedule used, when it cannot."""
        if self._busy.locked():
            return ControlAnswer(False, BUSY)
        async with self._busy:
            try:
                return await self._next_round(durations, buyer)
            except Refused as exc:
                log.warning("Next round refused: %s", exc)
                return ControlAnswer(False, str(exc))
            finally:
                self.changed()

    async def _next_round(self, given: Mapping[str, Any] | None, buyer: str | None) -> ControlAnswer:
        if self.eo.url is None:
            raise Refused(self.eo.problem or "no EO is configured ([eo] url)")
        chosen = checked_durations(given, self.durations())
        current = self.ledger.current()
        if current is not None and current.open:
            raise Refused(f"round {current.round_id} is still in its {PHASE_NAMES.get(current.phase, current.phase)}: "
                          "End round first")
        kind = await self.look()
        if kind is None:
            raise Refused(f"the EO at {self.eo.url} does not answer: start it, or fix [eo] url")
        self.watch.settle()
        plan = self.lineup.plan(buyer)
        utilities = await self.lineup.utilities_of(plan)
        round_id = STANDALONE_ROUND_ID if kind == "standalone" else self.store.free_round_id(day_of(now_ms()))
        seats = [SeatPlan(avatar, agent, "", plan.utility_keys.get(avatar, "")) for avatar, agent in plan.seats]
        launch = self.store.add_launch(round_id, now_ms(), plan.buyer, plan.slot.id if plan.slot else None, seats, utilities,
                                       chosen, kind)
        try:
            seats = await self.lineup.seats_of(launch, plan)
            body = initialize_round(round_id, seats, utilities, chosen)
        except Exception as exc:  # nothing reached the EO: nothing of this start may stay behind
            await self.lineup.forget(launch)
            if isinstance(exc, Refused):
                raise
            raise Refused(f"round {round_id} could not be set up: {type(exc).__name__}: {exc}") from exc
        self.store.seats_of(launch.id, seats)
        self.ledger.remember(DURATIONS_FACT, chosen)
        try:
            await self.eo.start(kind, body)
        except RoundCallRefused as exc:
            self.store.set_launch(launch.id, "failed", str(exc))
            await asyncio.to_thread(self.agents.stop_round, launch.id, "the EO did not start the round")
            raise Refused(str(exc)) from None
        self.store.set_launch(launch.id, "started")
        if plan.slot is not None:
            self.store.set_slot(plan.slot.id, "playing")
        who = ", ".join(f"{s.agent} as {s.avatar}" if s.agent != s.avatar else s.avatar for s in seats)
        log.info("round %s started on %s: buyer %s, %s; utilities from %s", round_id, KIND_WORDS[kind], plan.buyer or "-", who,
                 self.utilities.source)
        return ControlAnswer(True, fields={"roundId": round_id, "buyer": plan.buyer, "durations": chosen,
                                           "seats": [{"avatar": s.avatar, "agent": s.agent} for s in seats]})

    def durations(self) -> dict[str, float]:
        """The durations of the next round when the operator gives none: the last ones used, else ``[rounds]``'s."""
        last = self.ledger.recall(DURATIONS_FACT)
        defaults = self.rounds.durations()
        if isinstance(last, dict):
            with contextlib.suppress(Refused):
                return checked_durations({k: v for k, v in last.items() if k in PHASE_KEYS}, defaults)
        return defaults

    # -- End round -----------------------------------------------------------------------------------
    async def end_round(self) -> ControlAnswer:
        """End the round now: on the stand-in its current phase; on the platform's EO the round
        (its totals come at its own end, and the EO stays up)."""
        if self._busy.locked():
            return ControlAnswer(False, BUSY)
        async with self._busy:
            try:
                return await self._end_round()
            except Refused as exc:
                log.warning("End round refused: %s", exc)
                return ControlAnswer(False, str(exc))
            finally:
                self.changed()

    async def _end_round(self) -> ControlAnswer:
        if self.eo.url is None:
            raise Refused(self.eo.problem or "no EO is configured ([eo] url)")
        current = self.ledger.current()
        if current is None or not current.open:
            raise Refused("no round is running")
        kind = await self.look()
        if kind is None:
            raise Refused(f"the EO at {self.eo.url} does not answer")
        phase = PHASE_NAMES.get(current.phase, current.phase)
        try:
            ended = await self.eo.end(current.round_id)
        except RoundCallRefused as exc:
            raise Refused(str(exc)) from None
        if kind == "standin":
            log.info("round %s: the operator ended the %s", current.round_id, phase)
            return ControlAnswer(True, fields={"roundId": current.round_id, "phase": ended.phase})
        try:
            await self.eo.keep_alive(current.round_id, self.avatars, self.human, self.ledger.recall(HUMAN_SERVICES_FACT) or [])
        except RoundCallRefused as exc:
            self.alert("round_lost", f"round {current.round_id} ended, but the EO was not told to stay up ({exc}): it may exit "
                                     "at the round's own end")
        due = current.totals_due_ms()
        note = (f"ended by the operator in its {phase}; the EO sends its totals at "
                f"{datetime.datetime.fromtimestamp(due / 1000).strftime('%H:%M:%S')}, the round's own end")
        launch = self.store.launch_of(current)
        if launch is not None:
            self.store.set_launch(launch.id, "ended_early", note, ends_ms=due)
        self.ledger.set_phase(current.key, "ended", now_ms(), None, note=note)
        log.info("round %s: %s", current.round_id, note)
        self.refresh()
        return ControlAnswer(True, fields={"roundId": current.round_id, "phase": "ended", "totals_at": due})

    # -- the first round by itself, and the end ------------------------------------------------------------
    async def auto_start(self) -> None:
        """``[rounds] auto_start``: once the EO and the sellers answer, a round starts by itself -
        unless the ledger has a round open: one that still runs at the EO is taken up; one the EO no
        longer has is decided lost by the books' check (after a clean stop as after a crash: the
        EO's word, not the room's guess), and the round watch then starts the next
        (:meth:`after_a_loss`): one path per start, never two racing for it."""
        current = self.ledger.current()
        if current is not None and current.open:
            still = await self.eo.knows(current.round_id)
            log.info("round %s %s", current.round_id, "still runs at the EO: no round starts by itself" if still else
                     "is open in the ledger: the next round starts by itself once the EO's books say it is lost")
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + AUTO_START_WAIT_S
        while loop.time() < deadline and not (await self.look() is not None and await self._sellers_answer()):
            await asyncio.sleep(AUTO_START_POLL_S)
        await self._start_by_itself("the first round")

    async def _start_by_itself(self, which: str) -> None:
        answer = await self.next_round()
        if not answer.ok:
            self.alert("round_refused", f"{which} did not start by itself: {answer.reason}")

    async def after_a_loss(self, lost: LedgerRound) -> None:
        """The EO lost the room's round (it restarted, say): with ``[rounds] auto_start`` the next
        round starts by itself, as the first one did; else the operator's Next round starts it."""
        if self.rounds.auto_start:
            log.info("round %s was lost: the next round starts by itself ([rounds] auto_start)", lost.round_id)
            await self._start_by_itself(f"the round after {lost.round_id}")

    async def _sellers_answer(self) -> bool:
        if self.competition.roster is not None:
            return True  # a roster's agents are started or checked by Next round itself
        return all([await answers_soon(url) for url in self.rounds.seller_urls(self.avatars).values()])

    async def close(self) -> None:
        """The controller stops. The agent programs of a round that is over stop now; those of a
        round still open go on (the EO's round does: the next start of the controller takes them
        over and stops them after its totals)."""
        finished, left, open_rounds = [], [], set()
        for run in self.store.running_agents():
            launch = self.store.launch(run.launch_id)
            rnd = self.store.round_of(launch) if launch is not None else None
            if rnd is not None and rnd.open:
                left.append(run)
                open_rounds.add(str(rnd.round_id))
            else:
                finished.append(run)
        if finished:
            await asyncio.to_thread(self.agents.stop, finished, "its round is over and the Avatar Controller stopped")
        if left:
            log.log(NOTICE, "%d agent program(s) of round %s left running: the EO's round goes on, and the next start of the "
                    "Avatar Controller stops them after its totals", len(left), ", ".join(sorted(open_rounds)))
        await self.eo.aclose()
        await self.utilities.aclose()

    # -- the console's picture ----------------------------------------------------------------------------
    def standings(self) -> Standings:
        return self.competition.standings()

    def view(self) -> dict[str, Any]:
        """What the console shows of the competition."""
        next_round = None
        left = 0
        if self.competition.roster is not None:
            planned = self.competition.upcoming()
            left = len(planned)
            if planned:
                slot = planned[0]
                next_round = {"buyer": slot.slot.buyer, "cycle": slot.cycle, "replay": slot.put_back_from is not None,
                              "seats": [{"avatar": a, "agent": s.agent} for a, s in zip(self.avatars, slot.slot.seats, strict=False)]}
        elif self.eo.url is not None:
            next_round = {"buyer": self.ledger.next_buyer(), "cycle": None, "replay": False,
                          "seats": [{"avatar": a, "agent": a, "url": u} for a, u in self.rounds.seller_urls(self.avatars).items()]}
        agents = [{"agent": r.agent, "avatar": r.avatar, "port": r.port, "log": r.log} for r in self.store.running_agents()]
        return {"driver": self.driver(), "tournament": self.competition.roster is not None, "next": next_round, "left": left,
                "durations": self.durations(), "standings": self.standings().body(), "agents": agents}

    def on_change(self, listener: Callable[[dict[str, Any]], None]) -> None:
        """Call ``listener`` with the console's picture of the competition each time it changes."""
        self._listeners.append(listener)

    def changed(self) -> None:
        """Tell the listeners the console's picture, when it changed. Called from the event loop
        and from the views' thread: one at a time, so an older picture never follows a newer."""
        with self._changing:
            try:
                view = self.view()
            except Exception as exc:  # a view that cannot be read must never cost the EO an answer
                log.warning("the competition's view cannot be read: %s: %s", type(exc).__name__, exc)
                return
            if view == self._view:
                return
            self._view = view
            for listener in self._listeners:
                with contextlib.suppress(Exception):
                    listener(view)
