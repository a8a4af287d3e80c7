"""The buyer's allocation, checked, rated and saved the way the platform's competition-ui does it.

Check and rate: the platform's utility generator (``/checkAllocation``, ``/calculateUtility/buyer``)
when one is known, else the suite's own port of its rules (:mod:`orchestrator_client.buyer_utility`,
held equal to the real one by ``tests/e2e/orchestrator_client/test_buyer_utility.py``), so a laptop with the stand-in EO
rates allocations too. Save: the EO's ``/receiveHumanAllocation`` with competition-ui's body,
``{"roundId", "payload": products}``; the EO keeps the last one it got and scores the human on it
at the end of the post-round phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from orchestrator_client import buyer_utility as bu
from orchestrator_client import endpoints as ep
from orchestrator_client.tls import client_tls

TIMEOUT_S = 5.0
"""The page's button waits this long at most for the utility generator or the EO."""
CURRENCY = "USD"


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
    base = utility_generator.rstrip("/")
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S, verify=client_tls()) as http:
            body = {"ingredients": dict(ingredients), "allocation": {"products": products}}
            checked = await http.post(base + ep.CHECK_ALLOCATION, json=body)
            checked.raise_for_status()
            answer = checked.json()
            value = None
            if utility_raw is not None:
                rated = await http.post(f"{base}{ep.CALCULATE_UTILITY}/{ep.BUYER_ROLE}",
                                        json={"currencyUnit": CURRENCY, "utility": utility_raw, "bundle": {"products": products}})
                rated.raise_for_status()
                value = rated.json().get("value")
    except (httpx.HTTPError, ValueError) as exc:
        raise AllocationServiceError(f"the utility generator at {base} did not answer: {exc or type(exc).__name__}") from None
    rationale = _read_rationale(answer.get("rationale") if isinstance(answer, dict) else None)
    sufficient = bool(answer.get("sufficient")) if isinstance(answer, dict) else False
    number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    return AllocationCheck(sufficient, rationale, number, ep.UTILITY_GENERATOR_SERVICE, _shortfall(rationale))


async def save_allocation(eo_url: str, round_id: int | str, products: dict[str, Any]) -> dict[str, Any]:
    """Send the allocation to the EO; its answer (``status``: ``Acknowledged`` or ``Failed``)."""
    base = eo_url.rstrip("/")
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S, verify=client_tls()) as http:
            answer = await http.post(base + ep.RECEIVE_HUMAN_ALLOCATION, json={"roundId": round_id, "payload": products})
            answer.raise_for_status()
            body = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise AllocationServiceError(f"the EO at {base} did not take the allocation: {exc or type(exc).__name__}") from None
    return body if isinstance(body, dict) else {"status": str(body)}
