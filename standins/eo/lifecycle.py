"""A round's life: ``/startRound`` runs the warm-up, the negotiation and the post-round phase
on timers, tells every service as each starts, and sends the totals at the end; the
operator's ``/endRound`` ends the current phase now."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from humaine_platform import endpoints as ep
from humaine_platform.models import ms_to_iso
from standins.eo.calls import ServiceCalls
from standins.eo.errors import StandinError
from standins.eo.memory import RoundMemory
from standins.eo.rounds import Round
from standins.eo.totals import TotalsKeeper
from workers.runtime.messages import now_ms

log = logging.getLogger(__name__)


async def _phase(rnd: Round, seconds: float) -> None:
    """Let the current phase run ``seconds``, or until the operator ends it (:meth:`RoundPhases.end_phase`)."""
    with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
        await asyncio.wait_for(rnd.skip.wait(), max(0.0, seconds))
    rnd.skip.clear()


class RoundPhases:
    """Starts the rounds of ``memory`` and times their phases, as the EO does."""

    def __init__(self, memory: RoundMemory, calls: ServiceCalls, totals: TotalsKeeper) -> None:
        self._memory = memory
        self._calls = calls
        self._totals = totals

    def start(self, body: Any) -> Round:
        """``/startRound {"roundId"}``: run the warm-up, round and post timers in the background."""
        if not isinstance(body, dict) or "roundId" not in body:
            raise StandinError(422, 'the /startRound body must be {"roundId": ...}')
        rnd = self._memory.get(body["roundId"])
        if rnd.phase != "initialized":
            raise StandinError(409, f"round {rnd.round_id!r} was already started (phase {rnd.phase})", roundId=rnd.round_id)
        rnd.phase = "warmup"
        rnd.task = asyncio.get_running_loop().create_task(self._run(rnd), name=f"round-{rnd.key}")
        return rnd

    def end_phase(self, body: Any) -> Round:
        """``/endRound {"roundId"}``: end the current phase now. Ending the negotiation leads to
        the post-round phase (the buyer still saves an allocation), ending that to the totals."""
        if not isinstance(body, dict) or "roundId" not in body:
            rnd = self._memory.latest_running()
            if rnd is None:
                raise StandinError(409, "no round is running")
        else:
            rnd = self._memory.get(body["roundId"])
        if not rnd.running:
            raise StandinError(409, f"round {rnd.round_id!r} is not running (phase {rnd.phase})", roundId=rnd.round_id)
        log.info("round %s: the operator ends the %s phase", rnd.round_id, rnd.phase)
        rnd.skip.set()
        return rnd

    async def _run(self, rnd: Round) -> None:
        """The EO's round life cycle, timed from the ``/startRound`` call; each phase lasts its
        length from the moment everyone has been told it started."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        durations = rnd.durations
        everyone = [*rnd.agents.values(), rnd.human]
        try:
            await self._announce(rnd)
            await _phase(rnd, started + float(durations.warmUp) - loop.time())
            rnd.phase = "round"
            log.info("round %s: negotiation starts (%s s)", rnd.round_id, durations.round)
            start_body = {"roundId": rnd.round_id, "roundDuration": durations.round, "timestamp": ms_to_iso(now_ms())}
            await self._calls.tell(rnd, ep.START_ROUND, everyone, start_body)
            await _phase(rnd, float(durations.round))
            rnd.phase = "post"
            log.info("round %s: negotiation over; post-round phase (%s s)", rnd.round_id, durations.post)
            await self._calls.tell(rnd, ep.END_ROUND, everyone, {"roundId": rnd.round_id, "timestamp": ms_to_iso(now_ms())})
            await _phase(rnd, float(durations.post))
            rnd.phase = "ended"
            totals = {"roundId": rnd.round_id, "roundTotals": self._totals.at_end(rnd)}
            await self._calls.tell(rnd, ep.RECEIVE_ROUND_TOTALS, [rnd.human], totals)
            log.info("round %s ended: %s", rnd.round_id, totals["roundTotals"])
        except asyncio.CancelledError:
            log.info("round %s stopped in phase %s", rnd.round_id, rnd.phase)
            raise
        except Exception:  # a bug here must end the round, not the service
            log.exception("round %s failed in phase %s", rnd.round_id, rnd.phase)
        finally:
            rnd.phase = "ended"

    async def _announce(self, rnd: Round) -> None:
        """The warm-up's calls: the round's metadata to the human side, then everyone's utility."""
        metadata = {"roundId": rnd.round_id, "durations": rnd.durations.body(), "humanBudget": rnd.budget}
        await self._calls.tell(rnd, ep.SEND_ROUND_METADATA, [rnd.human], metadata)
        currency = rnd.ledger.currency
        await self._calls.tell(rnd, ep.SET_UTILITY, [rnd.human], rnd.human.set_utility_body(rnd.round_id, currency))
        agents = list(rnd.agents.values())
        await self._calls.tell_each(rnd, ep.SET_UTILITY, agents, [a.set_utility_body(rnd.round_id, currency) for a in agents])
