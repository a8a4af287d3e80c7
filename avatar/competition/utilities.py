"""Where a round's utility functions come from.

As competition-ui's Start does, the room asks the platform's utility generator for one buyer and
two seller utility functions per round (``GET /generateUtility/<role>``) when one is configured
(``[eo] utility_generator_url``, or the ``utility-generator`` entry of ``[eo] app_settings``). A
room without one - a laptop with the stand-ins - draws them from the same distributions with the
suite's port of the generator (:mod:`humaine_platform.utility_draw`, held equal to it by
``tests/e2e/humaine_platform/test_utility_draw_real.py``): every round has its own.
"""

from __future__ import annotations

import random
from typing import Any, Final

from humaine_platform.utility_draw import draw_utility
from humaine_platform.utility_generator import UtilityGeneratorClient

SUITE_SOURCE: Final = "the suite's port of the utility generator"


class UtilitySource:
    """Draws utility functions: from the generator at ``generator_url``, else with the port."""

    def __init__(self, generator_url: str | None, seed: int | None = None) -> None:
        """``seed`` (``[tournament] seed``): the port's draws are reproducible, each scheduled key's
        from the seed and the key alone, so a restarted room does not draw its next keys' utilities
        as its first keys' again."""
        self.generator = UtilityGeneratorClient(generator_url) if generator_url else None
        self.seed = seed
        self.rng = random.Random(seed) if seed is not None else random.Random()

    @property
    def source(self) -> str:
        """Where the utilities come from, for the console and the ledger."""
        return f"the utility generator at {self.generator.base_url}" if self.generator is not None else SUITE_SOURCE

    async def draw(self, role: str, key: str = "") -> dict[str, Any]:
        """A utility function of ``role`` (``buyer`` or ``seller``) for the schedule's ``key`` (or
        none): ``{"currencyUnit", "utility"}``. Raises
        :class:`~humaine_platform.answers.PlatformCallError` when the generator fails."""
        if self.generator is None:
            keyed = self.seed is not None and key
            return draw_utility(role, random.Random(f"{self.seed}:{key}") if keyed else self.rng)
        return (await self.generator.generate(role)).body()

    async def aclose(self) -> None:
        if self.generator is not None:
            await self.generator.aclose()
