"""The buyer's allocation, checked, rated and saved the way the platform's competition-ui does it.

Check and rate: the platform's utility generator (``/checkAllocation``, ``/calculateUtility/buyer``)
when one is known, else the suite's own port of its rules (:mod:`humaine_platform.buyer_utility`,
held equal to the real one by ``tests/e2e/humaine_platform/test_buyer_utility.py``), so a laptop with the stand-in EO
rates allocations too. Save: the EO's ``/receiveHumanAllocation`` with competition-ui's body,
``{"roundId", "payload": products}``; the EO keeps the last one it got and scores the human on it
at the end of the post-round phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from humaine_platform import buyer_utility as bu
from humaine_platform import endpoints as ep
from humaine_platform.answers import AllocationAnswer, PlatformCallError, read_answer
from humaine_platform.client import EOClient, HttpPoster, RetryPolicy, Timeouts, answer_of
from humaine_platform.models import finite_number
from humaine_platform.utility_generator import UtilityGeneratorClient

TIMEOUT_S = 5.0
"""The page's button waits this long at most for the EO."""
SAVE_RETRIES = RetryPolicy(max_attempts=3)
"""A Save that cannot reach the EO is tried again twice, within a fraction of a second (more
would hold the page's button past :data:`TIMEOUT_S`); then the buyer is told and saves again."""


class AllocationServiceError(Exception):
    """The utility generator or the EO did not answer usefully; the message says which and why."""


@dataclass
class AllocationCheck:
    """Whether the ingredients suffice for an allocation, and what it is worth."""

    sufficient: bool
    rationale: dict[str, dict[str, float]]
    """Per good: ``need`` and ``have`` (the utility generator's own rationale)."""
    value: float | None
    rated_by: str
    """``utility-generator`` or ``suite`` (the port of its rules)."""
    shortfall: dict[str, float] = field(default_factory=dict)


def _shortfall(rationale: dict[str, dict[str, float]]) -> dict[str, float]:
    return {good: round(r["need"] - r["have"], 2) for good, r in rationale.items() if r.get("need", 0) > r.get("have", 0)}


def _read_rationale(raw: Any) -> dict[str, dict[str, float]]:
    rationale: dict[str, dict[str, float]] = {}
    if isinstance(raw, dict):
        for good, entry in raw.items():
            if isinstance(entry, dict):
                rationale[str(good)] = {"need": float(entry.get("need") or 0), "have": float(entry.get("have") or 0)}
    return rationale


async def check_allocation(utility_generator: str | None, ingredients: dict[str, int], products: dict[str, Any],
                           utility_raw: dict[str, Any] | None) -> AllocationCheck:
    """Check ``products`` against ``ingredients`` and rate it under the buyer's utility."""
    if utility_generator is None:
        allocation = bu.Allocation.from_products(products)
        sufficient, rationale = bu.check_allocation(ingredients, allocation)
        value = bu.utility_value(bu.parse_utility(utility_raw), allocation) if utility_raw is not None else None
        return AllocationCheck(sufficient, rationale, value, "suite", _shortfall(rationale))
    try:
        async with UtilityGeneratorClient(utility_generator) as generator:
            checked = await generator.check_allocation(ingredients, products)
            rated = await generator.calculate_utility(utility_raw, products) if utility_raw is not None else None
    except PlatformCallError as exc:
        raise AllocationServiceError(str(exc)) from None
    rationale = _read_rationale(checked.rationale)
    value = rated.value if rated is not None else None
    return AllocationCheck(checked.sufficient, rationale, finite_number(value), ep.UTILITY_GENERATOR_SERVICE, _shortfall(rationale))


async def save_allocation(eo_url: str, round_id: int | str, products: dict[str, Any]) -> AllocationAnswer:
    """Send the allocation to the EO; its answer (``status``: ``Acknowledged`` or ``Failed``)."""
    eo = EOClient(eo_url, HttpPoster(timeouts=Timeouts(read_s=TIMEOUT_S, total_s=TIMEOUT_S + 1.0), retry=SAVE_RETRIES))
    where = f"the EO at {eo.base_url}{ep.RECEIVE_HUMAN_ALLOCATION}"
    try:
        answer = answer_of(await eo.save_allocation(round_id, products), where)
    except PlatformCallError as exc:
        raise AllocationServiceError(f"{exc}: the allocation was not taken") from None
    finally:
        await eo.aclose()
    if not isinstance(answer, dict):
        return AllocationAnswer(status=str(answer))
    try:
        return read_answer(AllocationAnswer, answer, where)
    except PlatformCallError as exc:
        raise AllocationServiceError(str(exc)) from None
