"""The stand-in's memory of the rounds it was given, by id.

Like the platform's EO, the stand-in keeps only its own memory: round ids are the caller's (the
room allocates them, as the platform's competition manager does), and nothing here reads the
room's books.
"""

from __future__ import annotations

import asyncio
import re
from typing import Final

from humaine_platform import endpoints as ep
from standins.eo.errors import StandinError
from standins.eo.round_setup import ROUND_ID_PREFIX
from standins.eo.rounds import Phase, Round, round_key

NUMBERED_ROUND: Final = re.compile(rf"{re.escape(ROUND_ID_PREFIX)}([1-9][0-9]*)")
"""A round id of the day's numbering (``r1``, ``r2``, ...)."""


class RoundMemory:
    """Rounds by the text of their id (:func:`~standins.eo.rounds.round_key`)."""

    def __init__(self) -> None:
        self._rounds: dict[str, Round] = {}

    def __contains__(self, round_id: object) -> bool:
        return round_key(round_id) in self._rounds

    def find(self, round_id: object) -> Round | None:
        return self._rounds.get(round_key(round_id))

    def get(self, round_id: object) -> Round:
        """The round, or a 404 naming the rounds it knows."""
        found = self.find(round_id)
        if found is None:
            known = ", ".join(sorted(self._rounds)) or "none"
            raise StandinError(
                404,
                f"unknown roundId {round_id!r} (known rounds: {known}); POST {ep.INITIALIZE_ROUND} first",
                roundId=round_id,
            )
        return found

    def known_to_the_eo(self, round_id: object) -> Round:
        """The round, or a refusal for an unknown or ended one. The platform EO answers 500 there
        (and goes on); the stand-in answers 404, a client error as it is, which the round check
        reads the same way (any HTTP error: unknown) - no input gets a 5xx from our services."""
        rnd = self.find(round_id)
        if rnd is None or rnd.phase == "ended":
            raise StandinError(404, f"unknown roundId {round_id!r}", roundId=round_id)
        return rnd

    def replace(self, rnd: Round) -> None:
        """Remember ``rnd``; a round of the same id that was given before stops its timers."""
        existing = self._rounds.get(rnd.key)
        if existing is not None and existing.task is not None:
            existing.task.cancel()
        self._rounds[rnd.key] = rnd

    def latest_running(self) -> Round | None:
        running = [r for r in self._rounds.values() if r.running]
        return running[-1] if running else None

    def timers(self) -> list[asyncio.Task[None]]:
        """The rounds' timers still running."""
        return [r.task for r in self._rounds.values() if r.task is not None and not r.task.done()]

    def phases(self) -> dict[str, Phase]:
        return {key: r.phase for key, r in self._rounds.items()}

    def free_round_id(self) -> str:
        """The round id ``--auto-round`` takes: one past the highest ``rN`` this process knows
        (``r1`` when it knows none). The room allocates its own ids (its books know the day's);
        the stand-in, like the platform's EO, keeps only its own memory."""
        numbers = [int(found.group(1)) for used in self._rounds if (found := NUMBERED_ROUND.fullmatch(used))]
        return f"{ROUND_ID_PREFIX}{max(numbers, default=0) + 1}"
