"""The client of the platform's utility generator (``GET /generateUtility/<role>``, ``POST
/checkAllocation``, ``POST /calculateUtility/<role>``), on the same poster as the EO's client.

The room asks it for each round's utility functions (as competition-ui's Start does) and for the
buyer's allocation checks (as its allocation dialog does). Every answer is typed
(:mod:`humaine_platform.answers`); a generator that is down or answers nonsense is one
:class:`~humaine_platform.answers.PlatformCallError` line naming it.
"""

from __future__ import annotations

from typing import Any, Final

from humaine_platform import endpoints as ep
from humaine_platform.answers import AllocationCheck, UtilityFunction, UtilityValue, read_answer
from humaine_platform.client import HttpPoster, RetryPolicy, Timeouts, answer_of

GENERATOR_TIMEOUTS: Final = Timeouts(connect_s=1.0, read_s=5.0, total_s=6.0)
"""A draw or a check takes milliseconds; the operator's button and the buyer's page wait this
long at most."""
GENERATOR_RETRIES: Final = RetryPolicy(max_attempts=2, backoff_s=0.05, backoff_max_s=0.05)
"""A generator that refuses connections is tried twice, then said to be down."""
CURRENCY: Final = "USD"


class UtilityGeneratorClient:
    """The utility generator at ``base_url``."""

    def __init__(self, base_url: str, poster: HttpPoster | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.poster = poster or HttpPoster(timeouts=GENERATOR_TIMEOUTS, retry=GENERATOR_RETRIES)

    async def aclose(self) -> None:
        await self.poster.aclose()

    async def __aenter__(self) -> UtilityGeneratorClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    def _where(self, path: str) -> str:
        return f"the utility generator at {self.base_url}{path}"

    async def generate(self, role: str) -> UtilityFunction:
        """A utility function drawn from ``role``'s distribution (``buyer`` or ``seller``)."""
        path = f"{ep.GENERATE_UTILITY}/{role}"
        answer = answer_of(await self.poster.post(self.base_url, path, None, method="GET"), self._where(path))
        return read_answer(UtilityFunction, answer, self._where(path))

    async def check_allocation(self, ingredients: dict[str, Any], products: dict[str, Any]) -> AllocationCheck:
        """Whether ``ingredients`` suffice for the allocation ``products`` (competition-ui's body)."""
        body = {"ingredients": dict(ingredients), "allocation": {"products": products}}
        answer = answer_of(await self.poster.post(self.base_url, ep.CHECK_ALLOCATION, body), self._where(ep.CHECK_ALLOCATION))
        return read_answer(AllocationCheck, answer, self._where(ep.CHECK_ALLOCATION))

    async def calculate_utility(self, utility: dict[str, Any], products: dict[str, Any], role: str = ep.BUYER_ROLE) -> UtilityValue:
        """The value of the allocation ``products`` under ``utility`` (the buyer's, by default)."""
        path = f"{ep.CALCULATE_UTILITY}/{role}"
        body = {"currencyUnit": CURRENCY, "utility": utility, "bundle": {"products": products}}
        answer = answer_of(await self.poster.post(self.base_url, path, body), self._where(path))
        return read_answer(UtilityValue, answer, self._where(path))
