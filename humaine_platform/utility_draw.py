"""Utility functions drawn as the platform's utility generator draws them, without the generator.

A room needs a utility for the buyer and for each seller every round. At the venue the platform's
generator (humaine-anac/utility-generator at 408d2aa) draws them; on a laptop without it, the room
still gets varied utilities from the very same distributions. :func:`draw_utility` ports
``GET /generateUtility/<role>`` (``instantiateDistribution`` of ``utility-generator.js``) over copies
of the generator's ``distribution_parameters/buyer.json`` and ``seller.json``
(``humaine_platform/distributions/``, where their origin and licence are written down):

- a leaf ``[low, high]`` becomes ``quantize(low + random() * (high - low), d)``, with ``d`` 0 when the
  leaf's key contains ``Quantity`` and 2 otherwise;
- strings are copied, the key ``distribution`` becomes ``utility``, key order is kept;
- the roles are ``buyer`` (alias ``human``) and ``seller`` (alias ``agent``), in any case.

``tests/e2e/humaine_platform/test_utility_draw_real.py`` measures it equal to the real
generator: the same keys and strings, the same ranges and quantisation, and each varying number
distributed alike (two-sample Kolmogorov–Smirnov).

The standard library only (and this package's endpoints and quantisation).
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import random
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any, Final

from humaine_platform.buyer_utility import quantize
from humaine_platform.endpoints import BUYER_ROLE, SELLER_ROLE

__all__ = ["ROLES", "ROLE_ALIASES", "UnknownRole", "canonical_role", "distribution_parameters", "draw_utility", "quantize"]

log = logging.getLogger(__name__)

HUMAN_ALIAS: Final = "human"
AGENT_ALIAS: Final = "agent"
ROLES: Final = (BUYER_ROLE, SELLER_ROLE)
"""The roles the generator draws for; each names its distribution file (``<role>.json``)."""
ROLE_ALIASES: Final = {HUMAN_ALIAS: BUYER_ROLE, AGENT_ALIAS: SELLER_ROLE}
"""The generator's other names for the roles (what its README documents)."""

_PACKAGE: Final = __name__.rpartition(".")[0]
DISTRIBUTIONS_FOLDER: Final = "distributions"
"""Beside this module, in the package: the generator's distribution files, copied verbatim."""
DISTRIBUTION_KEY: Final = "distribution"
UTILITY_KEY: Final = "utility"
"""What the generator's answer calls the drawn ``distribution``."""
WHOLE_MARK: Final = "Quantity"
"""A leaf whose key contains this is drawn whole (``minQuantity``, ``maxQuantity``); others to cents."""
WHOLE_DECIMALS: Final = 0
CENT_DECIMALS: Final = 2
RANGE_LENGTH: Final = 2
"""A leaf is ``[low, high]``; the generator draws only from two-element arrays."""


class UnknownRole(ValueError):
    """A role the generator does not draw for (it answers 500 to those)."""

    def __init__(self, role: str) -> None:
        aliases = ", ".join(f"{alias!r} for {canonical!r}" for alias, canonical in ROLE_ALIASES.items())
        super().__init__(f"unknown role {role!r}: the utility generator draws for {' or '.join(map(repr, ROLES))} ({aliases})")
        self.role = role


def canonical_role(role: str) -> str:
    """``buyer`` or ``seller`` for a role or its alias, in any case, as the generator lowercases it first."""
    lowered = role.lower()
    lowered = ROLE_ALIASES.get(lowered, lowered)
    if lowered not in ROLES:
        raise UnknownRole(role)
    return lowered


@functools.cache
def _parameters(role: str) -> dict[str, Any]:
    """The role's distribution file, read and parsed once per process (it never changes while
    running). Shared by every draw, so only read, never changed."""
    source = resources.files(_PACKAGE) / DISTRIBUTIONS_FOLDER / f"{role}.json"
    parameters: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
    log.debug("read the %s utility distribution from %s", role, source)
    return parameters


def distribution_parameters(role: str) -> dict[str, Any]:
    """The role's distribution as the generator has it (``{"currencyUnit", "distribution"}``), a copy
    the caller may change: the ranges a drawn utility's numbers come from."""
    return copy.deepcopy(_parameters(canonical_role(role)))


def _as_json_number(value: float) -> int | float:
    """What the generator's JSON parses back to: JavaScript writes a whole number without a fraction
    (``23``, not ``23.0``), which Python's ``json`` reads as an ``int``. Returning the same keeps the
    port's answer equal to the generator's in type too, and serialised identically."""
    return int(value) if value.is_integer() else value


def _instantiate(key: str | None, node: Any, uniform: Callable[[], float]) -> Any:
    """``instantiateDistribution``: draws every ``[low, high]`` leaf under ``node``; ``key`` is the
    key ``node`` sits under (``None`` at the top), which decides a leaf's decimals."""
    if isinstance(node, list) and len(node) == RANGE_LENGTH:
        low, high = node
        decimals = WHOLE_DECIMALS if key is not None and WHOLE_MARK in key else CENT_DECIMALS
        return _as_json_number(quantize(low + uniform() * (high - low), decimals))
    if isinstance(node, Mapping) and node:
        drawn: dict[str, Any] = {}
        for field, value in node.items():
            if isinstance(value, str):
                drawn[field] = value
            else:
                drawn[UTILITY_KEY if field == DISTRIBUTION_KEY else field] = _instantiate(field, value, uniform)
        return drawn
    # The generator would drop such a key from its answer or fail; the shipped files have none.
    raise ValueError(f"{key!r} in a utility distribution is {node!r}: neither a [low, high] range, a string nor an object")


def draw_utility(role: str, rng: random.Random | None = None) -> dict[str, Any]:
    """What ``GET /generateUtility/<role>`` answers: ``{"currencyUnit": "USD", "utility": {...}}``,
    the same keys in the same order, each number drawn uniformly from its range and quantised as the
    generator does. ``rng`` makes the draw reproducible; without it, the ``random`` module's own.

    Raises :class:`UnknownRole` for a role other than ``buyer``/``human`` or ``seller``/``agent``."""
    uniform = rng.random if rng is not None else random.random
    drawn = _instantiate(None, _parameters(canonical_role(role)), uniform)
    if not isinstance(drawn, dict):
        raise ValueError(f"the {role} distribution is not an object")
    return drawn
