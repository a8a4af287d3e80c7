"""Money and counts as people write them: "$0.80", "1 egg", "2 eggs".

Agents write prices their own way ("9.0 USD", "0.8 USD"); what the room itself writes for a
person to read (the terminal, the pages' captions, history and prompts) says them one way, and
an agent's text shown on a page has its amounts written so too (:func:`amounts`). The agent's
own text is kept as it came in the records (the ledger, the session files).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

CURRENCY_SIGNS = {"USD": "$"}
"""Currencies written with a sign before the amount; any other is written after it ("4.50 EUR")."""

MASS_NOUNS = frozenset({"flour", "sugar", "milk", "chocolate", "vanilla", "butter", "baking powder"})
"""Goods the market counts in units but people do not put in the plural ("2 flour")."""

AMOUNT = re.compile(
    r"(?:\b(?:US|USD)\s?)?\$\s?(?P<a>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<ac>\d{1,2}))?(?!\.?\d)"
    r"|\bUSD\s?(?P<b>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<bc>\d{1,2}))?(?!\.?\d)"
    r"|(?<![\d.,])\b(?P<c>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<cc>\d{1,2}))?\s?USD\b",
    re.IGNORECASE,
)
"""A dollar amount as agents and people write one: "$4.50", "US$ 4", "USD 4.5", "0.8 USD" (at
most two decimals: "0.125 USD" is no price). :func:`dollars_and_cents` reads a match."""


def money(value: float, unit: str = "USD") -> str:
    """``9.0`` → ``$9.00``; cents always shown, as prices are written."""
    sign = CURRENCY_SIGNS.get(unit.upper())
    amount = f"{abs(value):,.2f}"
    minus = "-" if value < 0 else ""
    return f"{minus}{sign}{amount}" if sign else f"{minus}{amount} {unit}"


def dollars_and_cents(match: re.Match[str]) -> tuple[int, int]:
    """The whole dollars and the cents of an :data:`AMOUNT` match ("0.8 USD" → ``(0, 80)``)."""
    whole = match.group("a") or match.group("b") or match.group("c")
    fraction = match.group("ac") or match.group("bc") or match.group("cc") or ""
    return int(whole.replace(",", "")), int(fraction.ljust(2, "0")) if fraction else 0


PEOPLES_AMOUNT = re.compile(r"\$(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d\d)?")
"""An amount already written as people write one: "$3", "$0.80", "$1,250.00"."""


def _written_amount(match: re.Match[str]) -> str:
    if PEOPLES_AMOUNT.fullmatch(match.group(0)):
        return match.group(0)
    dollars, cents = dollars_and_cents(match)
    return f"{CURRENCY_SIGNS['USD']}{dollars:,}.{cents:02d}"


def amounts(text: str) -> str:
    """``text`` with every dollar amount written as people write money: "0.8 USD" → "$0.80",
    "USD 3" → "$3.00", "$4.5" → "$4.50"; one written so already ("$3", "$0.80") and the rest of
    the text as they came (what a page shows of an agent's or the buyer's words)."""
    return AMOUNT.sub(_written_amount, text)


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


def count(quantity: float, noun: str, more: bool = False) -> str:
    """``2, "egg"`` → ``2 eggs``; ``1, "egg"`` → ``1 egg`` (a whole number written without ".0");
    ``more``: what is still missing, ``2 more eggs``."""
    number = int(quantity) if float(quantity).is_integer() else quantity
    return f"{number} {'more ' if more else ''}{noun if number == 1 else plural(noun)}"


def missing(quantities: Mapping[str, float]) -> str:
    """``{"egg": 2, "flour": 1}`` → ``2 more eggs, 1 more flour`` (what an allocation still needs)."""
    return ", ".join(count(n, good, more=True) for good, n in quantities.items())


def goods(quantities: Mapping[str, float]) -> str:
    """``{"egg": 2, "flour": 1}`` → ``2 eggs, 1 flour``."""
    return ", ".join(count(n, good) for good, n in quantities.items())
