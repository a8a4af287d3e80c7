"""Building an ``/initializeRound`` body for a room on one machine.

:func:`default_round` gives every round the same utilities - the sellers' unit costs and the
buyer's cake/pancake values of a round captured from the real platform (``eo-observed-traffic.json``),
Watson's costs shifted so the two sellers do not quote the same prices - for tests and benchmarks
that need a round they can reason about. :func:`auto_round`, the stand-in's own round, draws them
from the platform generator's distributions, as the room's rounds do.

Typical use (the suite's supervisor)::

    body = default_round({"Celia": 14007, "Watson": 14008}, human_port=7040,
                         durations=(5, 600, 30))
    start_round_sync("http://127.0.0.1:14010", body)
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any, Final

from humaine_platform.endpoints import BUYER_ROLE, DEFAULT_HUMAN_PORT, SELLER_ROLE
from humaine_platform.models import Budget, Durations, InitializeRound, NegotiatorInfo, RoundId
from humaine_platform.utility_draw import draw_utility
from standins.eo.settings import DEFAULT_AGENT_PORTS, DEFAULT_HUMAN_BUDGET, StandinSettings

GOODS: Final = ("egg", "flour", "sugar", "milk", "chocolate", "vanilla", "blueberry")
"""The seven goods of the HUMAINE market."""
UNITS: Final[dict[str, str]] = {
    "egg": "each",
    "flour": "cup",
    "sugar": "cup",
    "milk": "cup",
    "chocolate": "ounce",
    "vanilla": "teaspoon",
    "blueberry": "packet",
}
CURRENCY: Final = "USD"
ROUND_ID_PREFIX: Final = "r"
"""A day's rounds are ``r1``, ``r2``, ... (the current EO's own spelling)."""
FIRST_ROUND_ID: Final = f"{ROUND_ID_PREFIX}1"
"""The id of a day's first round, and of a round whose settings name none and whose caller
chose none (the engine chooses the next free ``rN``)."""

UNIT_COSTS: Final[dict[str, dict[str, float]]] = {
    "Celia": {
        "egg": 0.38, "flour": 0.56, "sugar": 0.81, "milk": 0.25,
        "chocolate": 0.23, "vanilla": 0.25, "blueberry": 0.5,
    },
    "Watson": {
        "egg": 0.42, "flour": 0.51, "sugar": 0.77, "milk": 0.31,
        "chocolate": 0.27, "vanilla": 0.21, "blueberry": 0.46,
    },
}
"""Per seller and good, USD per unit. A seller not listed gets Celia's costs."""

HUMAN_UTILITY: Final[dict[str, Any]] = {
    "cake": {
        "type": "unitvaluePlusSupplement",
        "unit": "each",
        "parameters": {
            "unitvalue": 19.26,
            "supplement": {
                "chocolate": {
                    "type": "trapezoid", "unit": "ounce",
                    "parameters": {"minQuantity": 3, "maxQuantity": 6, "minValue": 3.18, "maxValue": 7.56},
                },
                "vanilla": {
                    "type": "trapezoid", "unit": "teaspoon",
                    "parameters": {"minQuantity": 2, "maxQuantity": 4, "minValue": 2.35, "maxValue": 6.02},
                },
            },
        },
    },
    "pancake": {
        "type": "unitvaluePlusSupplement",
        "unit": "each",
        "parameters": {
            "unitvalue": 26.75,
            "supplement": {
                "chocolate": {
                    "type": "trapezoid", "unit": "ounce",
                    "parameters": {"minQuantity": 3, "maxQuantity": 6, "minValue": 3.42, "maxValue": 6.73},
                },
                "blueberry": {
                    "type": "trapezoid", "unit": "packet",
                    "parameters": {"minQuantity": 1, "maxQuantity": 3, "minValue": 3.93, "maxValue": 5.37},
                },
            },
        },
    },
}


def seller_utility(costs: Mapping[str, float], currency: str = CURRENCY) -> dict[str, Any]:
    """A seller's ``utilityFunction``: ``unitcost`` per good, as the platform sends it."""
    return {
        "currencyUnit": currency,
        "utility": {
            good: {"type": "unitcost", "unit": UNITS.get(good, "each"), "parameters": {"unitcost": cost}}
            for good, cost in costs.items()
        },
    }


def unit_costs(utility_function: Mapping[str, Any] | None) -> dict[str, float]:
    """The ``unitcost`` of each good in a seller's utility (``{"utility": {...}}`` or the bare
    mapping); goods without a numeric unit cost are left out."""
    if not utility_function:
        return {}
    goods = utility_function.get("utility", utility_function)
    costs: dict[str, float] = {}
    if not isinstance(goods, Mapping):
        return costs
    for good, spec in goods.items():
        parameters = spec.get("parameters") if isinstance(spec, Mapping) else None
        cost = parameters.get("unitcost") if isinstance(parameters, Mapping) else None
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            costs[str(good)] = float(cost)
    return costs


def _durations(value: Durations | Mapping[str, float] | tuple[float, float, float]) -> Durations:
    if isinstance(value, Durations):
        return value
    if isinstance(value, tuple):
        warm_up, length, post = value
        return Durations(warmUp=warm_up, round=length, post=post)
    return Durations.model_validate(dict(value))


def default_round(
    agents_ports: Mapping[str, int] | None = None,
    human_port: int = DEFAULT_HUMAN_PORT,
    durations: Durations | Mapping[str, float] | tuple[float, float, float] = (5.0, 600.0, 30.0),
    *,
    round_id: RoundId = FIRST_ROUND_ID,
    host: str = "127.0.0.1",
    human_name: str = "competition-ui",
    budget: float = DEFAULT_HUMAN_BUDGET,
    currency: str = CURRENCY,
    name_human_service: bool = True,
) -> InitializeRound:
    """The ``/initializeRound`` body of a round with the given sellers (name -> port on
    ``host``), the human-side service on ``human_port`` and ``durations`` (seconds: a
    :class:`Durations`, a mapping with ``warmUp``/``round``/``post`` or a
    ``(warm_up, round, post)`` tuple). ``name_human_service=False`` gives ``human`` only its
    ``utilityFunction``, as the platform does (its EO reads the human-side service from its
    own ``appSettings.json``)."""
    ports = dict(DEFAULT_AGENT_PORTS if agents_ports is None else agents_ports)
    agents = [
        NegotiatorInfo(
            name=name,
            protocol="http",
            host=host,
            port=port,
            type="agent",
            utilityFunction=seller_utility(UNIT_COSTS.get(name, UNIT_COSTS["Celia"]), currency),
        )
        for name, port in ports.items()
    ]
    human = NegotiatorInfo(
        name=human_name,
        protocol="http",
        host=host,
        port=human_port,
        type="human",
        utilityFunction={"currencyUnit": currency, "utility": copy.deepcopy(HUMAN_UTILITY)},
    )
    return InitializeRound(
        roundId=round_id,
        agents=agents,
        human=human if name_human_service else {"utilityFunction": human.utilityFunction},
        durations=_durations(durations),
        humanBudget=Budget(value=budget, currentUnit=currency).body(),
    )


def auto_round(settings: StandinSettings, round_id: RoundId | None = None, rng: random.Random | None = None) -> InitializeRound:
    """The round ``humaine-env orchestrator --auto-round`` starts, from ``[standin]``: its id is
    ``round_id``, else ``[standin] round_id``, else :data:`FIRST_ROUND_ID`; every participant's
    utility drawn from the platform generator's distributions (:mod:`humaine_platform.utility_draw`)."""
    chosen = round_id if round_id is not None else settings.round_id
    body = default_round(
        settings.agents,
        settings.human_port,
        (settings.warm_up_s, settings.round_s, settings.post_s),
        round_id=FIRST_ROUND_ID if chosen is None else chosen,
        host=settings.services_host,
        human_name=settings.human_name,
        budget=settings.human_budget,
        currency=settings.currency,
    )
    for agent in body.agents:
        agent.utilityFunction = draw_utility(SELLER_ROLE, rng)
    if isinstance(body.human, NegotiatorInfo):
        body.human.utilityFunction = draw_utility(BUYER_ROLE, rng)
    return body
