"""The buyer's utility: what the goods bought are worth as cakes and pancakes, and the best way to bake them.

A port of the platform utility generator's buyer rules (humaine-anac/utility-generator at 408d2aa,
``utility-generator.js``), so the room's buyer page can show values, check an allocation and propose
the best one without a network round trip, and so a laptop with the stand-in EO rates allocations the
way the venue's generator will. ``tests/e2e/humaine_platform/test_buyer_utility.py`` holds it equal to the real generator:

- :func:`utility_value` is ``calculateUtilityBuyer``: ``unitvalue`` per unit, plus per unit (per
  supplement block) at most ONE supplement, the first in key order whose trapezoid value is above
  zero; a supplement's quantity is capped at ``maxQuantity``, worth nothing below ``minQuantity``,
  linear in between; the sum is quantized to cents as ``@humaine/utils/math`` ``quantize`` does.
- :func:`check_allocation` is ``checkIngredients``: the recipe's goods times the quantities, plus
  every supplement of every block (counted or not), against what was bought.
- :func:`best_allocation` is what the generator's own (commented-out, unfinished)
  ``optimizeIngredients`` meant to be: the exact optimum over cakes, pancakes and supplements.

The standard library only.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any, NamedTuple

log = logging.getLogger(__name__)

RECIPE: dict[str, dict[str, int]] = {
    "cake": {"egg": 2, "flour": 2, "milk": 1, "sugar": 1},
    "pancake": {"egg": 1, "flour": 2, "milk": 2},
}
"""What one unit of each product takes (the utility generator's ``recipe.json``, in its key order,
which is the order ``checkIngredients`` counts in)."""
PRODUCT_UNIT = "each"
"""The unit competition-ui gives every product in an allocation."""
MAX_EXTRAS = 1
"""Supplements counted per unit (``maxExtras`` in ``calculateUtilityBuyer``): more are baked in
(and needed, says ``checkIngredients``) but add nothing."""
CURRENCY_SYMBOLS = {"USD": "$"}


# -- JavaScript's arithmetic, where the generator's results depend on it ------------------------------------
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


def js_keys(mapping: Mapping[str, Any]) -> list[str]:
    """``Object.keys`` order: keys that are array indices (canonical integers below 2**32 - 1) come
    first, ascending, then the others in insertion order. The generator counts the first positive
    supplement of a block, so which one is first decides the value."""
    indices = [k for k in mapping if _ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1]
    return sorted(indices, key=int) + [k for k in mapping if k not in indices]


def _js_round(value: float) -> float:
    """``Math.round``: the nearest integer, halves toward +infinity (``Math.round(-2.5) == -2``)."""
    if not math.isfinite(value):
        return value
    floor = math.floor(value)
    return float(floor + 1 if value - floor >= 0.5 else floor)


def _js_to_fixed(value: float, digits: int) -> str:
    """``Number.prototype.toFixed``: the exact binary value rounded to ``digits`` decimals, a tie
    going away from zero (Python's ``format`` would round a tie to even)."""
    if not math.isfinite(value) or abs(value) >= 1e21:
        return repr(value)
    return str(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def quantize(quantity: float, decimals: int) -> float:
    """``@humaine/utils/math`` ``quantize`` (0.2.0), operation for operation:
    ``Math.round(parseFloat((quantity * 10**decimals).toFixed(11))) / 10**decimals``. Rounding
    the scaled value to 11 decimals first makes 1.005 (really 1.00499999...) come out 1.01."""
    multiplicator = 10.0**decimals
    scaled = float(_js_to_fixed(quantity * multiplicator, 11))
    return _js_round(scaled) / multiplicator


# -- the buyer's utility ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Trapezoid:
    """What a supplement adds to one unit of a product, by the quantity put in."""

    unit: str
    min_quantity: float
    max_quantity: float
    min_value: float
    max_value: float

    def value(self, quantity: float) -> float:
        """The generator's ``eUtil`` for ``quantity``, float operation for float operation. An empty
        range (``minQuantity == maxQuantity``) is 0/0 there: NaN, which never counts; so is NaN here."""
        capped = min(quantity, self.max_quantity)
        if not capped >= self.min_quantity:
            return 0.0
        span = self.max_quantity - self.min_quantity
        rise = (capped - self.min_quantity) * (self.max_value - self.min_value)
        if span == 0:  # then capped == min_quantity: 0 / 0
            return math.nan
        return self.min_value + rise / span

    def counts(self, quantity: float) -> bool:
        """Whether the generator adds this supplement (and spends the unit's one extra on it)."""
        return self.value(quantity) > 0.0


@dataclass(frozen=True)
class ProductUtility:
    """A product's value to the buyer: ``unit_value`` per unit, plus at most one supplement per unit."""

    unit_value: float
    supplements: Mapping[str, Trapezoid] = field(default_factory=dict)
    """In the utility's key order (JavaScript's), the order the generator tries them in."""
    unit: str = PRODUCT_UNIT


@dataclass(frozen=True)
class BuyerUtility:
    """A buyer's utility function as ``/setUtility`` carries it (``GET /generateUtility/buyer``'s draw)."""

    products: Mapping[str, ProductUtility]
    currency_unit: str = "USD"


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where} is {value!r}, not a number")
    if not math.isfinite(value):
        raise ValueError(f"{where} is {value!r}, not a finite number")
    return value


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} is {type(value).__name__}, not an object")
    return value


def _text(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value else default


def _parse_trapezoid(raw: Any, where: str) -> Trapezoid:
    entry = _mapping(raw, where)
    if entry.get("type", "trapezoid") != "trapezoid":
        log.debug("%s has type %r; read as a trapezoid, as the utility generator does", where, entry.get("type"))
    params = _mapping(entry.get("parameters"), f"{where}.parameters")
    return Trapezoid(
        unit=_text(entry.get("unit"), "unit"),
        min_quantity=_number(params.get("minQuantity"), f"{where}.parameters.minQuantity"),
        max_quantity=_number(params.get("maxQuantity"), f"{where}.parameters.maxQuantity"),
        min_value=_number(params.get("minValue"), f"{where}.parameters.minValue"),
        max_value=_number(params.get("maxValue"), f"{where}.parameters.maxValue"),
    )


def _parse_product(raw: Any, where: str) -> ProductUtility:
    entry = _mapping(raw, where)
    params = _mapping(entry.get("parameters"), f"{where}.parameters")
    if "unitvalue" not in params:
        hint = " (a seller's utility?)" if "unitcost" in params else ""
        raise ValueError(f"{where}.parameters has no unitvalue{hint}")
    unit_value = _number(params["unitvalue"], f"{where}.parameters.unitvalue")
    raw_supplements = params.get("supplement")
    supplements: dict[str, Trapezoid] = {}
    if raw_supplements is not None:
        raw_supplements = _mapping(raw_supplements, f"{where}.parameters.supplement")
        for name in js_keys(raw_supplements):
            supplements[name] = _parse_trapezoid(raw_supplements[name], f"{where}.parameters.supplement.{name}")
    return ProductUtility(unit_value, supplements, _text(entry.get("unit"), PRODUCT_UNIT))


def parse_utility(raw: Mapping[str, Any], currency_unit: str | None = None) -> BuyerUtility:
    """The buyer's utility from ``/setUtility``'s ``utility`` (``{"cake": {"parameters": {"unitvalue",
    "supplement"}}, ...}``). The whole ``/setUtility`` body or a ``/generateUtility`` draw
    (``{"currencyUnit", "utility": {...}}``) is read too. Anything the generator could not rate
    raises ValueError with the path of the odd field, for the caller to log and show."""
    body = _mapping(raw, "the utility")
    currency = currency_unit
    inner = body.get("utility")
    if isinstance(inner, Mapping) and not any(isinstance(v, Mapping) and "parameters" in v for v in body.values()):
        currency = currency or (body.get("currencyUnit") if isinstance(body.get("currencyUnit"), str) else None)
        body = inner
    products: dict[str, ProductUtility] = {}
    for name in js_keys(body):
        if name == "currencyUnit" and isinstance(body[name], str):
            currency = currency or body[name]
            continue
        products[name] = _parse_product(body[name], name)
    if not products:
        raise ValueError("the utility names no product")
    return BuyerUtility(products, currency or "USD")


def product_values(utility: BuyerUtility) -> dict[str, float]:
    """Each product's value per unit, before supplements."""
    return {name: product.unit_value for name, product in utility.products.items()}


def _money(amount: float, currency: str) -> str:
    symbol = CURRENCY_SYMBOLS.get(currency)
    return f"{symbol}{amount:,.2f}" if symbol else f"{amount:,.2f} {currency}"


def _amount(quantity: float) -> str:
    return str(int(quantity)) if float(quantity).is_integer() else f"{quantity:g}"


def _plural(unit: str, quantity: float) -> str:
    return unit if quantity == 1 or unit.endswith("s") or unit == PRODUCT_UNIT else unit + "s"


def describe(utility: BuyerUtility) -> list[str]:
    """The utility in a buyer's words, a line each: the products' values, then what each supplement
    adds to one of them, e.g. ``cake: $25.00 each`` and ``chocolate: 3–6 ounces add $3.00–$6.00 to a
    cake``. A supplement the generator never counts says so rather than promising a value."""
    lines: list[str] = []
    extras = False
    for name, product in utility.products.items():
        lines.append(f"{name}: {_money(product.unit_value, utility.currency_unit)} {product.unit}")
        for sname, trap in product.supplements.items():
            extras = True
            low, high = trap.min_quantity, trap.max_quantity
            if not high > low:
                lines.append(f"{sname}: adds nothing to a {name}")
                continue
            quantity = f"{_amount(low)}–{_amount(high)} {_plural(trap.unit, high)}"
            low_value, high_value = (_money(v, utility.currency_unit) for v in (trap.min_value, trap.max_value))
            worth = low_value if trap.min_value == trap.max_value else f"{low_value}–{high_value}"
            lines.append(f"{sname}: {quantity} add {worth} to a {name}")
    if extras:
        lines.append("only one extra counts per item")
    return lines


# -- allocations -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Extra:
    """One supplement put into one unit of a product."""

    unit: str
    quantity: float


@dataclass(frozen=True)
class ProductAllocation:
    """How many of a product to bake, and what goes into each: one block per unit (a block may
    hold several supplements; only the first that counts adds value)."""

    quantity: float
    """Whole in every allocation the page or :func:`best_allocation` makes; one read from a body
    keeps whatever number it had, as the generator multiplies whatever it gets."""
    supplement: tuple[Mapping[str, Extra], ...] = ()
    unit: str = PRODUCT_UNIT


@dataclass(frozen=True)
class Allocation:
    """What the buyer bakes from what was bought, per product."""

    products: Mapping[str, ProductAllocation] = field(default_factory=dict)

    @classmethod
    def from_products(cls, products: Mapping[str, Any]) -> Allocation:
        """The allocation in competition-ui's ``products`` object (what the page or the EO sends);
        ValueError names an odd field."""
        body = _mapping(products, "the products")
        parsed: dict[str, ProductAllocation] = {}
        for name in js_keys(body):
            entry = _mapping(body[name], name)
            quantity = _number(entry.get("quantity"), f"{name}.quantity")
            blocks: list[Mapping[str, Extra]] = []
            raw_blocks = entry.get("supplement")
            if raw_blocks is not None:
                if not isinstance(raw_blocks, Sequence) or isinstance(raw_blocks, (str, bytes)):
                    raise ValueError(f"{name}.supplement is {type(raw_blocks).__name__}, not a list")
                for i, raw_block in enumerate(raw_blocks):
                    block = _mapping(raw_block, f"{name}.supplement[{i}]")
                    extras: dict[str, Extra] = {}
                    for sname in js_keys(block):
                        where = f"{name}.supplement[{i}].{sname}"
                        extra = _mapping(block[sname], where)
                        extras[sname] = Extra(_text(extra.get("unit"), "unit"), _number(extra.get("quantity"), f"{where}.quantity"))
                    blocks.append(extras)
            whole = int(quantity) if float(quantity).is_integer() else quantity
            parsed[name] = ProductAllocation(whole, tuple(blocks), _text(entry.get("unit"), PRODUCT_UNIT))
        return cls(parsed)

    def products_body(self) -> dict[str, Any]:
        """The ``products`` object competition-ui sends to ``/checkAllocation``, ``/calculateUtility``
        and (as ``payload``) the EO's ``/receiveHumanAllocation``."""
        return {
            name: {
                "unit": product.unit,
                "quantity": product.quantity,
                "supplement": [{s: {"unit": e.unit, "quantity": e.quantity} for s, e in block.items()} for block in product.supplement],
            }
            for name, product in self.products.items()
        }

    def ingredients_needed(self) -> dict[str, float]:
        """Every good the allocation takes, counted as ``checkIngredients`` counts: the recipe's goods
        times the quantity (zeros included), then every supplement of every block, in that order."""
        need: dict[str, float] = {}
        for name, product in self.products.items():
            if name not in RECIPE:
                raise ValueError(f"no recipe for {name!r} (the utility generator fails on it)")
            for good, per_unit in RECIPE[name].items():
                need[good] = need.get(good, 0) + per_unit * product.quantity
            for block in product.supplement:
                for sname, extra in block.items():
                    need[sname] = need.get(sname, 0) + extra.quantity
        return need


def utility_value(utility: BuyerUtility | Mapping[str, Any], allocation: Allocation | Mapping[str, Any]) -> float:
    """What ``POST /calculateUtility/buyer`` answers as ``value`` for the allocation (the utility or
    the products may also be given raw). A product or supplement the utility does not name fails
    there (HTTP 500); it raises ValueError here."""
    if not isinstance(utility, BuyerUtility):
        utility = parse_utility(utility)
    if not isinstance(allocation, Allocation):
        allocation = Allocation.from_products(allocation)
    total = 0.0
    for name, product in allocation.products.items():
        rates = utility.products.get(name)
        if rates is None:
            raise ValueError(f"the buyer's utility has no {name!r} (the utility generator fails on it)")
        total += rates.unit_value * product.quantity
        for block in product.supplement:
            extras = 0
            for sname, extra in block.items():
                trap = rates.supplements.get(sname)
                if trap is None:
                    raise ValueError(f"the buyer's utility has no supplement {sname!r} for {name!r} (the utility generator fails on it)")
                value = trap.value(extra.quantity)
                if value > 0.0 and extras < MAX_EXTRAS:
                    total += value
                    extras += 1
    return quantize(total, 2)


class IngredientCheck(NamedTuple):
    """``checkIngredients``'s answer; unpacks as ``sufficient, rationale``."""

    sufficient: bool
    rationale: dict[str, dict[str, float]]
    """Per good, every good bought and every good needed: ``{"need", "have"}``."""


def check_allocation(ingredients: Mapping[str, float | None], allocation: Allocation | Mapping[str, Any]) -> IngredientCheck:
    """Whether what was bought makes the allocation, and per good what it needs and has: the
    ``sufficient`` and ``rationale`` of ``POST /checkAllocation``, in its key order."""
    if not isinstance(allocation, Allocation):
        allocation = Allocation.from_products(allocation)
    need = allocation.ingredients_needed()
    goods = js_keys(ingredients) + [good for good in need if good not in ingredients]
    rationale: dict[str, dict[str, float]] = {}
    sufficient = True
    for good in goods:
        have = ingredients.get(good) or 0
        required = need.get(good)
        sufficient = sufficient and (required is None or required <= have)
        rationale[good] = {"need": required or 0, "have": have}
    return IngredientCheck(sufficient, rationale)


def still_needed(ingredients: Mapping[str, float | None], allocation: Allocation) -> dict[str, float]:
    """What the buyer lacks to make ``allocation``: per good short, how many more."""
    have = {good: amount or 0 for good, amount in ingredients.items()}
    return {good: need - have.get(good, 0) for good, need in allocation.ingredients_needed().items() if need > have.get(good, 0)}


def needed_for_one_more(ingredients: Mapping[str, float | None], allocation: Allocation | None = None) -> dict[str, dict[str, float]]:
    """Per product, what one more of it (plain) would still need on top of ``allocation`` (none:
    from what was bought alone): what is still missing, for the page. Products are those of the
    allocation, or of the recipe when it has none."""
    base = allocation or Allocation()
    names = [name for name in base.products if name in RECIPE] or list(RECIPE)
    missing: dict[str, dict[str, float]] = {}
    for name in names:
        products = dict(base.products)
        current = products.get(name, ProductAllocation(0))
        products[name] = ProductAllocation(current.quantity + 1, current.supplement, current.unit)
        missing[name] = still_needed(ingredients, Allocation(products))
    return missing


# -- the best allocation -----------------------------------------------------------------------------------------
# A score is one integer: the value exactly, as a multiple of 1/denominator (the floats the generator
# adds are dyadic fractions, so a common denominator exists and equal values are equal), times a
# weight larger than any count of ingredients, minus the ingredients used. Comparing scores compares
# values first and, between equal values, prefers fewer ingredients; adding scores adds both.

_NONE = -1
"""In a group's ``choice`` table: the unit takes none of the good (0 is an amount: a supplement whose
``minQuantity`` is 0 counts with none of it put in)."""


@dataclass
class _Group:
    """One supplement for one product: ``table[k][r]`` is the best score of at most ``k`` units
    sharing at most ``r`` of the good; ``choice[k][r]`` the ``k``-th unit's amount there."""

    good: str
    trap: Trapezoid
    table: list[list[int]]
    choice: list[list[int]]

    @property
    def available(self) -> int:
        return len(self.table[0]) - 1

    def amounts(self, units: int, budget: int) -> list[int]:
        """The per-unit amounts behind ``table[units][budget]``, largest first."""
        out = []
        for k in range(units, 0, -1):
            amount = self.choice[k][budget]
            if amount != _NONE:
                out.append(amount)
                budget -= amount
        return sorted(out, reverse=True)


def _candidates(trap: Trapezoid, limit: int) -> list[tuple[int, Fraction]]:
    """The whole amounts worth putting into one unit (at most ``limit``), with their values: counted
    by the generator, and each worth more than every smaller one (more for no more value only wastes)."""
    low = max(0, math.ceil(trap.min_quantity))
    high = min(limit, max(low, math.ceil(trap.max_quantity)))
    out: list[tuple[int, Fraction]] = []
    best = Fraction(0)
    for amount in range(low, high + 1):
        value = trap.value(amount)
        if value > 0.0 and Fraction(value) > best:
            best = Fraction(value)
            out.append((amount, best))
    return out


def _group(good: str, trap: Trapezoid, options: Sequence[tuple[int, int]], max_units: int, available: int) -> _Group:
    """The knapsack of one supplement over up to ``max_units`` units of a product; ``options`` are
    the candidate amounts with their scores."""
    table = [[0] * (available + 1)]
    choice = [[_NONE] * (available + 1)]
    for _ in range(max_units):
        prev = table[-1]
        row, picks = list(prev), [_NONE] * (available + 1)
        for r in range(available + 1):
            for amount, score in options:
                if amount <= r and prev[r - amount] + score > row[r]:
                    row[r], picks[r] = prev[r - amount] + score, amount
        table.append(row)
        choice.append(picks)
    return _Group(good, trap, table, choice)


def _product_table(groups: Sequence[_Group], max_units: int, budgets: Sequence[int]) -> list[tuple[int, tuple[int, ...]]]:
    """Per count ``k`` of units of one product (up to ``max_units``) whose supplement groups may
    use ``budgets`` of their goods: the best score, and how many units each group gets at most
    (the rest get none). A max-plus convolution of the groups' tables over the units."""
    reach: list[tuple[int, tuple[int, ...]]] = [(0, ())] * (max_units + 1)
    for group, budget in zip(groups, budgets, strict=True):
        column = [group.table[given][budget] for given in range(max_units + 1)]
        nxt = []
        for k in range(max_units + 1):
            top, split = reach[k][0] + column[0], (*reach[k][1], 0)
            for given in range(1, k + 1):
                score = reach[k - given][0] + column[given]
                if score > top:
                    top, split = score, (*reach[k - given][1], given)
            nxt.append((top, split))
        reach = nxt
    return reach


def _whole(amount: float | None) -> int:
    return max(0, math.floor(amount)) if isinstance(amount, (int, float)) and math.isfinite(amount) else 0


def _counts(limits: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every vector of counts up to ``limits``, the last varying fastest."""
    if not limits:
        yield ()
        return
    for n in range(limits[0] + 1):
        for rest in _counts(limits[1:]):
            yield (n, *rest)


class _Search:
    """The exact search of :func:`best_allocation`, for one purchase and one utility."""

    def __init__(self, have: Mapping[str, int], utility: BuyerUtility) -> None:
        self.have = have
        self.utility = utility
        self.names = [name for name in RECIPE if name in utility.products]
        self.limits = [min(have.get(good, 0) // per_unit for good, per_unit in RECIPE[name].items() if per_unit > 0) for name in self.names]
        options = {
            name: {good: _candidates(trap, have.get(good, 0)) for good, trap in utility.products[name].supplements.items()}
            for name in self.names
        }
        bases = {name: [Fraction(utility.products[name].unit_value * n) for n in range(limit + 1)]
                 for name, limit in zip(self.names, self.limits, strict=True)}
        denominators = [f.denominator for fs in bases.values() for f in fs]
        denominators += [f.denominator for per_good in options.values() for opts in per_good.values() for _, f in opts]
        self.denominator = math.lcm(1, *denominators)
        self.weight = sum(have.values()) + 1
        """More than the ingredients any allocation of ``have`` uses."""
        self.bases = {name: [self.score(f, n * sum(RECIPE[name].values())) for n, f in enumerate(fs)] for name, fs in bases.items()}
        self.groups = {
            name: [_group(good, trap, [(a, self.score(f, a)) for a, f in options[name][good]], max_units, have.get(good, 0))
                   for good, trap in utility.products[name].supplements.items() if options[name][good]]
            for name, max_units in zip(self.names, self.limits, strict=True)
        }
        users: dict[str, int] = {}
        for name in self.names:
            for group in self.groups[name]:
                users[group.good] = users.get(group.good, 0) + 1
        self.shared = [good for good, n in users.items() if n > 1]
        """Goods two products' supplements compete for (chocolate): their split is searched."""
        self._tables: dict[tuple[int, tuple[int, ...]], list[tuple[int, tuple[int, ...]]]] = {}

    def score(self, value: Fraction, used: int) -> int:
        return int(value * self.denominator) * self.weight - used

    def product(self, index: int, budgets: tuple[int, ...]) -> list[tuple[int, tuple[int, ...]]]:
        key = (index, budgets)
        if key not in self._tables:
            self._tables[key] = _product_table(self.groups[self.names[index]], self.limits[index], budgets)
        return self._tables[key]

    def supplements(self, counts: Sequence[int], left: Mapping[str, int]) -> tuple[int, list[tuple[int, ...]]]:
        """The supplements' best score for these counts with ``left`` of every good, and each
        product's budget of each of its supplement goods. Two products at most share (the recipe
        has two): the first gets a share of each shared good, the second the rest."""
        shares = _counts([left.get(good, 0) for good in self.shared]) if len(self.names) > 1 else iter([()])
        best: tuple[int, list[tuple[int, ...]]] | None = None
        for share in shares:
            taken = dict(zip(self.shared, share, strict=True))
            score, budgets = 0, []
            for i, n in enumerate(counts):
                mine = []
                for group in self.groups[self.names[i]]:
                    pool = left.get(group.good, 0)
                    if group.good in taken:
                        pool = taken[group.good] if i == 0 else pool - taken[group.good]
                    mine.append(min(pool, group.available))
                score += self.product(i, tuple(mine))[n][0]
                budgets.append(tuple(mine))
            if best is None or score > best[0]:
                best = (score, budgets)
        assert best is not None
        return best

    def run(self) -> Allocation:
        best: tuple[int, tuple[int, ...], list[tuple[int, ...]]] | None = None
        for counts in _counts(self.limits):
            left = dict(self.have)
            for name, n in zip(self.names, counts, strict=True):
                for good, per_unit in RECIPE[name].items():
                    left[good] = left.get(good, 0) - per_unit * n
            if any(amount < 0 for amount in left.values()):
                continue
            extra, budgets = self.supplements(counts, left)
            score = extra + sum(self.bases[name][n] for name, n in zip(self.names, counts, strict=True))
            if best is None or score > best[0]:
                best = (score, counts, budgets)
        assert best is not None  # none of anything always fits
        _, counts, budgets = best
        products: dict[str, ProductAllocation] = {}
        for i, (name, n) in enumerate(zip(self.names, counts, strict=True)):
            _, split = self.product(i, budgets[i])[n]
            blocks: list[Mapping[str, Extra]] = []
            for group, given, budget in zip(self.groups[name], split, budgets[i], strict=True):
                blocks.extend({group.good: Extra(group.trap.unit, amount)} for amount in group.amounts(given, budget))
            blocks.extend({} for _ in range(n - len(blocks)))
            products[name] = ProductAllocation(n, tuple(blocks), self.utility.products[name].unit)
        return Allocation(products)


def best_allocation(ingredients: Mapping[str, float | None], utility: BuyerUtility | Mapping[str, Any]) -> Allocation:
    """The allocation of what was bought worth the most under ``utility`` (by :func:`utility_value`),
    exactly: every count of cakes and pancakes the recipe allows, each with the best sharing of the
    supplements between them (one counted supplement per unit). Of equally valuable allocations the
    one using the fewest ingredients, then the first found (fewest cakes, then fewest pancakes, then
    supplements in the utility's order). Every product of the utility that has a recipe appears,
    with quantity 0 if none is made, as competition-ui sends it.

    Values are compared exactly (the floats the generator adds, summed as fractions), so equal is
    equal. Sizes are a buyer's purchases (a few dozen units of each good): the search is polynomial
    in them (counts x chocolate splits x units squared), never exponential."""
    if not isinstance(utility, BuyerUtility):
        utility = parse_utility(utility)
    have = {good: _whole(amount) for good, amount in ingredients.items()}
    return _Search(have, utility).run()
