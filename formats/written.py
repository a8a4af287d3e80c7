"""Money and counts as people write them: "$0.80", "1 egg", "2 eggs".

Agents write prices their own way ("9.0 USD"); what the room itself writes for a person to read
(the terminal, the pages' prompts) says them one way. The agent's own text is kept as it came.
"""

from __future__ import annotations

from collections.abc import Mapping

CURRENCY_SIGNS = {"USD": "$"}
"""Currencies written with a sign before the amount; any other is written after it ("4.50 EUR")."""

MASS_NOUNS = frozenset({"flour", "sugar", "milk", "chocolate", "vanilla", "butter", "baking powder"})
"""Goods the market counts in units but people do not put in the plural ("2 flour")."""


def money(value: float, unit: str = "USD") -> str:
    """``9.0`` → ``$9.00``; cents always shown, as prices are written."""
    sign = CURRENCY_SIGNS.get(unit.upper())
    amount = f"{abs(value):,.2f}"
    minus = "-" if value < 0 else ""
    return f"{minus}{sign}{amount}" if sign else f"{minus}{amount} {unit}"


def plural(noun: str) -> str:
    """The plural of a good or unit of the market ("egg" → "eggs", "blueberry" → "blueberries")."""
    lowered = noun.lower()
    if lowered in MASS_NOUNS:
        return noun
    if lowered.endswith(("s", "x", "ch", "sh")):
        return noun + "es" if not lowered.endswith("s") else noun
    if lowered.endswith("y") and lowered[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def count(quantity: float, noun: str) -> str:
    """``2, "egg"`` → ``2 eggs``; ``1, "egg"`` → ``1 egg`` (a whole number written without ".0")."""
    number = int(quantity) if float(quantity).is_integer() else quantity
    return f"{number} {noun if number == 1 else plural(noun)}"


def goods(quantities: Mapping[str, float]) -> str:
    """``{"egg": 2, "flour": 1}`` → ``2 eggs, 1 flour``."""
    return ", ".join(count(n, good) for good, n in quantities.items())
