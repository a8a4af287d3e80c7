"""The buyer's utility (humaine_platform.buyer_utility) against brute force and the platform's real
utility generator: the same values, the same ingredient checks, the same recipe, and the best
allocation truly the best."""

from __future__ import annotations

import itertools
import json
import random
import re
import subprocess
import time
from collections.abc import Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from humaine_platform import buyer_utility as bu
from tests.support.real_utility_generator import RealUtilityGenerator, utility_generator_tree

RECIPE_GOODS = ("egg", "flour", "milk", "sugar")
SUPPLEMENT_GOODS = ("chocolate", "vanilla", "blueberry")


def trapezoid(unit: str, quantities: tuple[float, float], values: tuple[float, float]) -> dict[str, Any]:
    return {"type": "trapezoid", "unit": unit,
            "parameters": {"minQuantity": quantities[0], "maxQuantity": quantities[1], "minValue": values[0], "maxValue": values[1]}}


EXAMPLE_UTILITY = {  # the example in utility-generator.js
    "cake": {"type": "unitvaluePlusSupplement", "unit": "each", "parameters": {"unitvalue": 25, "supplement": {
        "chocolate": trapezoid("ounce", (3, 6), (3, 6)), "vanilla": trapezoid("teaspoon", (2, 4), (2, 4))}}},
    "pancake": {"type": "unitvaluePlusSupplement", "unit": "each", "parameters": {"unitvalue": 10, "supplement": {
        "chocolate": trapezoid("ounce", (3, 6), (3, 6)), "blueberry": trapezoid("packet", (1, 3), (1, 3))}}},
}


@pytest.fixture(scope="module")
def generator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealUtilityGenerator]:
    """The real utility generator for this module, on a free port."""
    process = RealUtilityGenerator(tmp_path_factory.mktemp("utility-generator")).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def tree() -> Path:
    return utility_generator_tree()


@pytest.fixture(scope="module")
def buyer_distribution(tree: Path) -> dict[str, Any]:
    return json.loads((tree / "distribution_parameters" / "buyer.json").read_text())


# -- drawing utilities and allocations -------------------------------------------------------------------
def draw(rng: random.Random, field: str | None, obj: Any) -> Any:
    """``instantiateDistribution`` of the generator with a seeded draw: a ``[low, high]`` range gives
    a number (whole for ``*Quantity*`` fields, cents otherwise), ``distribution`` becomes ``utility``."""
    if isinstance(obj, list) and len(obj) == 2:
        value = obj[0] + rng.random() * (obj[1] - obj[0])
        return bu.quantize(value, 0 if field and "Quantity" in field else 2)
    out = {}
    for key, value in obj.items():
        if isinstance(value, str):
            out[key] = value
        else:
            out["utility" if key == "distribution" else key] = draw(rng, key, value)
    return out


def wild_utility(rng: random.Random) -> dict[str, Any]:
    """A utility beyond the distribution's ranges: empty, reversed and zero-based quantity ranges,
    falling and negative values, supplements in either order, fractional cents."""
    def wild(unit: str) -> dict[str, Any]:
        low = rng.choice([0, 1, 2, 3, 3, 4])
        high = low + rng.choice([-1, 0, 1, 2, 3, 3])
        values = (round(rng.uniform(-1, 6), rng.choice([2, 3])), round(rng.uniform(-1, 9), rng.choice([2, 3])))
        return trapezoid(unit, (low, high), values)

    def product(supplements: list[tuple[str, str]]) -> dict[str, Any]:
        rng.shuffle(supplements)
        unit_value = round(rng.uniform(-2, 30), rng.choice([2, 3]))
        return {"type": "unitvaluePlusSupplement", "unit": "each",
                "parameters": {"unitvalue": unit_value, "supplement": {name: wild(unit) for name, unit in supplements}}}

    return {"cake": product([("chocolate", "ounce"), ("vanilla", "teaspoon")]),
            "pancake": product([("chocolate", "ounce"), ("blueberry", "packet")])}


def random_products(rng: random.Random, utility: Mapping[str, Any], names: list[str] | None = None) -> dict[str, Any]:
    """A products body as a page could send it, and beyond: blocks fewer or more than the quantity,
    several supplements per block in any order, amounts of 0, above the range, or fractional."""
    products = {}
    for name in names or [n for n in utility if rng.random() < 0.85]:
        quantity = rng.choice([0, 0, 1, 1, 2, 3, 4])
        supplements = list(utility[name]["parameters"]["supplement"].items()) if name in utility else []
        blocks = []
        for _ in range(max(0, quantity + rng.choice([-1, 0, 0, 0, 0, 1, 2]))):
            chosen = rng.sample(supplements, min(len(supplements), rng.choice([0, 1, 1, 1, 2])))
            block = {}
            for sname, spec in chosen:
                amount: float = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 9])
                if rng.random() < 0.1:
                    amount += 0.5
                block[sname] = {"unit": spec.get("unit", "unit"), "quantity": amount}
            blocks.append(block)
        products[name] = {"unit": "each", "quantity": quantity, "supplement": blocks}
    return products


def random_ingredients(rng: random.Random) -> dict[str, int]:
    goods = [g for g in RECIPE_GOODS + SUPPLEMENT_GOODS if rng.random() < 0.8]
    rng.shuffle(goods)
    return {good: rng.choice([0, 1, 2, 3, 4, 5, 6, 8, 10, 14]) for good in goods}


# -- brute force -----------------------------------------------------------------------------------------
def brute_force(have: Mapping[str, int], utility: bu.BuyerUtility) -> tuple[Fraction, int, bu.Allocation]:
    """Every allocation of ``have``: every count of each product, every multiset of per-unit choices
    (none, or any whole amount of any one supplement, wasteful ones included). The best by exact
    value (each float the generator adds, summed as a fraction), then by fewest ingredients used."""
    names = [n for n in bu.RECIPE if n in utility.products]
    best: tuple[Fraction, int, bu.Allocation] | None = None
    ranges = [range(min(have.get(g, 0) // k for g, k in bu.RECIPE[n].items()) + 1) for n in names]
    for counts in itertools.product(*ranges):
        used = {g: sum(bu.RECIPE[n].get(g, 0) * c for n, c in zip(names, counts, strict=True)) for g in RECIPE_GOODS}
        if any(used[g] > have.get(g, 0) for g in RECIPE_GOODS):
            continue
        per_product = []
        for name, count in zip(names, counts, strict=True):
            options: list[tuple[str, int] | None] = [None]
            for sname in utility.products[name].supplements:
                options += [(sname, a) for a in range(have.get(sname, 0) + 1)]
            per_product.append(list(itertools.combinations_with_replacement(options, count)))
        for choice in itertools.product(*per_product):
            spent: dict[str, int] = {}
            for units in choice:
                for option in units:
                    if option:
                        spent[option[0]] = spent.get(option[0], 0) + option[1]
            if any(amount > have.get(good, 0) for good, amount in spent.items()):
                continue
            value = Fraction(0)
            for name, count, units in zip(names, counts, choice, strict=True):
                value += Fraction(utility.products[name].unit_value * count)
                for option in units:
                    if option and utility.products[name].supplements[option[0]].counts(option[1]):
                        value += Fraction(utility.products[name].supplements[option[0]].value(option[1]))
            ingredients = sum(used.values()) + sum(spent.values())
            if best is None or (value, -ingredients) > (best[0], -best[1]):
                allocation = bu.Allocation({
                    name: bu.ProductAllocation(count, tuple(
                        {o[0]: bu.Extra(utility.products[name].supplements[o[0]].unit, o[1])} if o else {} for o in units))
                    for name, count, units in zip(names, counts, choice, strict=True)})
                best = (value, ingredients, allocation)
    assert best is not None
    return best


def exact_value(utility: bu.BuyerUtility, allocation: bu.Allocation) -> Fraction:
    value = Fraction(0)
    for name, product in allocation.products.items():
        value += Fraction(utility.products[name].unit_value * product.quantity)
        for block in product.supplement:
            for sname, extra in block.items():
                trap = utility.products[name].supplements[sname]
                if trap.counts(extra.quantity):
                    value += Fraction(trap.value(extra.quantity))
                    break
    return value


def small_purchase(rng: random.Random) -> dict[str, int]:
    """Small enough for brute force (three products at most, a few ounces of each supplement), near
    what a few cakes and pancakes take, so most purchases make some and some make none."""
    cakes, pancakes = rng.choice([(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (0, 2), (2, 1), (1, 2), (0, 3), (3, 0)])
    have = {good: max(0, cakes * bu.RECIPE["cake"].get(good, 0) + pancakes * bu.RECIPE["pancake"].get(good, 0) + rng.choice([-1, 0, 0, 1]))
            for good in RECIPE_GOODS}
    return {**have, "chocolate": rng.randint(0, 9), "vanilla": rng.randint(0, 5), "blueberry": rng.randint(0, 4)}


# -- the search ------------------------------------------------------------------------------------------
def test_best_allocation_equals_brute_force(buyer_distribution: dict[str, Any]) -> None:
    rng = random.Random(20240611)
    cases = 0
    for i in range(400):
        raw = draw(rng, None, buyer_distribution)["utility"] if i < 300 else wild_utility(rng)
        utility = bu.parse_utility(raw)
        have = small_purchase(rng)
        best = bu.best_allocation(have, utility)
        value, ingredients, brute = brute_force(have, utility)
        assert bu.check_allocation(have, best).sufficient, (have, best)
        assert exact_value(utility, best) == value, (raw, have, best.products_body(), brute.products_body())
        assert bu.utility_value(utility, best) == bu.utility_value(utility, brute)
        used = sum(best.ingredients_needed().values())
        assert used == ingredients, ("not the fewest ingredients of the best", have, best.products_body(), brute.products_body())
        assert all(len(p.supplement) == p.quantity for p in best.products.values())
        cases += 1
    assert cases >= 300


def test_ties_prefer_fewer_ingredients_and_the_best_is_stable() -> None:
    flat = {"type": "trapezoid", "unit": "ounce", "parameters": {"minQuantity": 3, "maxQuantity": 6, "minValue": 4, "maxValue": 4}}
    raw = {"cake": {"unit": "each", "parameters": {"unitvalue": 20, "supplement": {"chocolate": flat}}},
           "pancake": {"unit": "each", "parameters": {"unitvalue": 0, "supplement": {}}}}
    utility = bu.parse_utility(raw)
    have = {"egg": 5, "flour": 6, "milk": 4, "sugar": 2, "chocolate": 12}
    best = bu.best_allocation(have, utility)
    # a flat trapezoid: 3 ounces are worth as much as 6; a pancake (there is enough for one) is worth nothing
    assert best.products_body() == {
        "cake": {"unit": "each", "quantity": 2, "supplement": [{"chocolate": {"unit": "ounce", "quantity": 3}}] * 2},
        "pancake": {"unit": "each", "quantity": 0, "supplement": []},
    }
    assert bu.best_allocation(dict(reversed(have.items())), utility) == best


def test_best_allocation_of_a_large_purchase_is_quick(buyer_distribution: dict[str, Any]) -> None:
    utility = bu.parse_utility(draw(random.Random(7), None, buyer_distribution)["utility"])
    have = {"egg": 30, "flour": 40, "milk": 30, "sugar": 15, "chocolate": 40, "vanilla": 16, "blueberry": 12}
    started = time.perf_counter()
    best = bu.best_allocation(have, utility)
    assert time.perf_counter() - started < 2.0
    assert bu.check_allocation(have, best).sufficient
    assert best.products["cake"].quantity + best.products["pancake"].quantity >= 15


def test_nothing_bought_bakes_nothing_and_names_what_one_more_needs() -> None:
    utility = bu.parse_utility(json.loads(json.dumps(EXAMPLE_UTILITY)))
    best = bu.best_allocation({}, utility)
    assert best.products_body() == {"cake": {"unit": "each", "quantity": 0, "supplement": []},
                                    "pancake": {"unit": "each", "quantity": 0, "supplement": []}}
    assert bu.utility_value(utility, best) == 0
    assert bu.needed_for_one_more({}, best) == {"cake": {"egg": 2, "flour": 2, "milk": 1, "sugar": 1},
                                                 "pancake": {"egg": 1, "flour": 2, "milk": 2}}
    have = {"egg": 3, "flour": 3, "milk": 3, "sugar": 4, "chocolate": 6}
    best = bu.best_allocation(have, utility)
    assert best.products["cake"].quantity == 1 and best.products["pancake"].quantity == 0
    assert bu.needed_for_one_more(have, best) == {"cake": {"egg": 1, "flour": 1}, "pancake": {"flour": 1}}
    assert bu.still_needed(have, best) == {}
    assert bu.needed_for_one_more(have) == {"cake": {}, "pancake": {}}


# -- parsing and describing ------------------------------------------------------------------------------
def test_describe_says_it_in_a_buyers_words() -> None:
    utility = bu.parse_utility(EXAMPLE_UTILITY)
    assert bu.describe(utility) == [
        "cake: $25.00 each",
        "chocolate: 3–6 ounces add $3.00–$6.00 to a cake",
        "vanilla: 2–4 teaspoons add $2.00–$4.00 to a cake",
        "pancake: $10.00 each",
        "chocolate: 3–6 ounces add $3.00–$6.00 to a pancake",
        "blueberry: 1–3 packets add $1.00–$3.00 to a pancake",
        "only one extra counts per item",
    ]
    assert bu.product_values(utility) == {"cake": 25, "pancake": 10}


def test_parse_reads_the_whole_set_utility_body_and_refuses_odd_ones_clearly() -> None:
    body = {"currencyUnit": "EUR", "utility": EXAMPLE_UTILITY, "name": "Human", "roundId": 1}
    assert bu.parse_utility(body) == bu.parse_utility(EXAMPLE_UTILITY, "EUR")
    assert bu.parse_utility(body).currency_unit == "EUR"
    assert bu.describe(bu.parse_utility(body))[0] == "cake: 25.00 EUR each"
    odd = [
        ({}, "names no product"),
        ([], "not an object"),
        ({"cake": {"parameters": {}}}, "cake.parameters has no unitvalue"),
        ({"egg": {"type": "unitcost", "parameters": {"unitcost": 1.5}}}, "seller"),
        ({"cake": {"parameters": {"unitvalue": "25"}}}, "cake.parameters.unitvalue is '25'"),
        ({"cake": {"parameters": {"unitvalue": True}}}, "not a number"),
        ({"cake": {"parameters": {"unitvalue": 25, "supplement": {"chocolate": {"parameters": {"minQuantity": 3}}}}}},
         "cake.parameters.supplement.chocolate.parameters.maxQuantity is None"),
        ({"cake": {"parameters": {"unitvalue": 25, "supplement": []}}}, "cake.parameters.supplement is list"),
        ({"cake": "sweet"}, "cake is str"),
    ]
    for raw, message in odd:
        with pytest.raises(ValueError, match=re.escape(message)):
            bu.parse_utility(raw)  # type: ignore[arg-type]
    # a range the generator never counts (0/0 there) is said, not promised
    empty = json.loads(json.dumps(EXAMPLE_UTILITY))
    empty["cake"]["parameters"]["supplement"]["vanilla"]["parameters"]["maxQuantity"] = 2
    assert "vanilla: adds nothing to a cake" in bu.describe(bu.parse_utility(empty))


def test_allocation_body_is_competition_uis() -> None:
    body = {"cake": {"unit": "each", "quantity": 2, "supplement": [{"chocolate": {"unit": "ounce", "quantity": 4}}, {}]},
            "pancake": {"unit": "each", "quantity": 1, "supplement": [{"blueberry": {"unit": "packet", "quantity": 2}}]}}
    allocation = bu.Allocation.from_products(body)
    assert allocation.products_body() == body
    assert allocation.ingredients_needed() == {"egg": 5, "flour": 6, "milk": 4, "sugar": 2, "chocolate": 4, "blueberry": 2}
    for odd, message in [({"cake": {"quantity": "2"}}, "cake.quantity"), ({"cake": {"quantity": 1, "supplement": {}}}, "not a list"),
                         ({"cake": {"quantity": 1, "supplement": [{"chocolate": {"unit": "ounce"}}]}}, "supplement[0].chocolate.quantity")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            bu.Allocation.from_products(odd)


@pytest.mark.parametrize(("number", "expected"), [(1.005, 1.01), (2.675, 2.68), (1.0049999999, 1.0), (-2.675, -2.67), (0.125, 0.13),
                                                 (8.345, 8.35), (1e-12, 0.0), (123456.785, 123456.79), (-0.005, -0.0)])
def test_quantize_is_humaine_utils(number: float, expected: float) -> None:
    assert bu.quantize(number, 2) == expected


def test_quantize_is_humaine_utils_for_many_numbers(tree: Path) -> None:
    rng = random.Random(3)
    numbers = [round(rng.uniform(-50, 500), rng.choice([2, 3, 4])) for _ in range(1500)]
    numbers += [n / 1000 + 0.0005 for n in range(-2000, 2000, 7)] + [rng.uniform(-1e6, 1e6) for _ in range(300)]
    script = "const {quantize} = require('@humaine/utils/math'); const xs = JSON.parse(require('fs').readFileSync(0, 'utf8'));" \
             "process.stdout.write(JSON.stringify(xs.map(x => [quantize(x, 2), quantize(x, 0)])));"
    out = subprocess.run(["node", "-e", script], cwd=tree, input=json.dumps(numbers), capture_output=True, text=True, check=True,
                         timeout=30)
    expected = json.loads(out.stdout)
    assert [[bu.quantize(x, 2), bu.quantize(x, 0)] for x in numbers] == expected


# -- the real utility generator --------------------------------------------------------------------------
def test_recipe_is_the_generators(tree: Path) -> None:
    recipe = json.loads((tree / "recipe.json").read_text())
    assert bu.RECIPE == recipe
    assert [(name, list(goods.items())) for name, goods in bu.RECIPE.items()] == [(n, list(g.items())) for n, g in recipe.items()]


def test_generated_utilities_parse_and_describe(generator: RealUtilityGenerator) -> None:
    for _ in range(5):
        drawn = generator.generate_utility("buyer")
        assert set(drawn) == {"currencyUnit", "utility"}
        utility = bu.parse_utility(drawn["utility"])
        assert bu.parse_utility(drawn) == utility
        assert list(utility.products) == ["cake", "pancake"]
        assert list(utility.products["cake"].supplements) == ["chocolate", "vanilla"]
        assert list(utility.products["pancake"].supplements) == ["chocolate", "blueberry"]
        lines = bu.describe(utility)
        assert re.fullmatch(r"cake: \$\d+\.\d\d each", lines[0]), lines
        assert re.fullmatch(r"chocolate: 3–6 ounces add \$\d\.\d\d–\$\d\.\d\d to a cake", lines[1]), lines
        assert re.fullmatch(r"blueberry: 1–3 packets add \$\d\.\d\d–\$\d\.\d\d to a pancake", lines[5]), lines


def test_utility_value_is_the_generators(generator: RealUtilityGenerator, buyer_distribution: dict[str, Any]) -> None:
    rng = random.Random(99)
    utilities = [generator.generate_utility("buyer")["utility"] for _ in range(3)]
    utilities += [draw(rng, None, buyer_distribution)["utility"] for _ in range(3)] + [wild_utility(rng) for _ in range(4)]
    utilities.append(EXAMPLE_UTILITY)
    compared = 0
    for raw in utilities:
        utility = bu.parse_utility(raw)
        for _ in range(15):
            products = random_products(rng, raw)
            answer = generator.calculate_utility(raw, products)
            assert answer.status_code == 200, answer.text[:200]
            assert bu.utility_value(utility, bu.Allocation.from_products(products)) == answer.json()["value"], products
            assert bu.utility_value(raw, products) == answer.json()["value"]
            compared += 1
    # cents the way @humaine/utils rounds them: unit values whose sums land on half a cent
    for unit_value in (1.005, 2.675, 8.345, 0.125, 1.0049999999, 33.335, -2.675):
        raw = {"cake": {"parameters": {"unitvalue": unit_value}}}
        for quantity in (1, 3):
            products = {"cake": {"unit": "each", "quantity": quantity, "supplement": []}}
            assert bu.utility_value(raw, products) == generator.calculate_utility(raw, products).json()["value"], (unit_value, quantity)
            compared += 1
    assert compared >= 50


def test_the_generators_quirks_are_kept(generator: RealUtilityGenerator) -> None:
    utility = bu.parse_utility(EXAMPLE_UTILITY)

    def both(products: dict[str, Any]) -> tuple[float, float]:
        return bu.utility_value(utility, products), generator.calculate_utility(EXAMPLE_UTILITY, products).json()["value"]

    # one extra per block: the first that counts; a block that counts nothing leaves the slot free
    assert both({"cake": {"unit": "each", "quantity": 1, "supplement": [
        {"vanilla": {"unit": "teaspoon", "quantity": 1}, "chocolate": {"unit": "ounce", "quantity": 6}}]}}) == (31, 31)
    assert both({"cake": {"unit": "each", "quantity": 1, "supplement": [
        {"chocolate": {"unit": "ounce", "quantity": 3}, "vanilla": {"unit": "teaspoon", "quantity": 4}}]}}) == (28, 28)
    # blocks are counted whatever the quantity says
    assert both({"cake": {"unit": "each", "quantity": 1, "supplement": [{"vanilla": {"unit": "teaspoon", "quantity": 4}}] * 3}}) == (37, 37)
    # above the range is capped, below it is nothing
    assert both({"pancake": {"unit": "each", "quantity": 1, "supplement": [{"blueberry": {"unit": "packet", "quantity": 30}}]}}) == (13, 13)
    assert both({"pancake": {"unit": "each", "quantity": 1, "supplement": [{"chocolate": {"unit": "ounce", "quantity": 2}}]}}) == (10, 10)
    # what the generator cannot rate, the port refuses: a product or a supplement the utility lacks (HTTP 500 there)
    for products in ({"muffin": {"unit": "each", "quantity": 1}},
                     {"cake": {"unit": "each", "quantity": 1, "supplement": [{"blueberry": {"unit": "packet", "quantity": 2}}]}}):
        assert generator.calculate_utility(EXAMPLE_UTILITY, products).status_code == 500
        with pytest.raises(ValueError, match="the utility generator fails on it"):
            bu.utility_value(utility, products)
    muffin = {"muffin": {"unit": "each", "quantity": 1, "supplement": []}}
    assert generator.check_allocation({"egg": 1}, muffin).status_code == 500
    with pytest.raises(ValueError, match="no recipe for 'muffin'"):
        bu.check_allocation({"egg": 1}, muffin)


def test_check_allocation_is_the_generators(generator: RealUtilityGenerator, buyer_distribution: dict[str, Any]) -> None:
    rng = random.Random(5)
    raw = draw(rng, None, buyer_distribution)["utility"]
    sufficient = 0
    for i in range(80):
        ingredients = random_ingredients(rng)
        products = random_products(rng, raw) if i % 3 else bu.best_allocation(ingredients, bu.parse_utility(raw)).products_body()
        answer = generator.check_allocation(ingredients, products)
        assert answer.status_code == 200, answer.text[:200]
        body = answer.json()
        mine = bu.check_allocation(ingredients, bu.Allocation.from_products(products))
        assert mine.sufficient == body["sufficient"], (ingredients, products)
        assert mine.rationale == body["rationale"], (ingredients, products)
        assert list(mine.rationale) == list(body["rationale"])
        sufficient += mine.sufficient
    assert 10 <= sufficient <= 70  # both verdicts were compared, many times
    # none bought at all, and a good given as null
    for ingredients in ({}, {"egg": None, "flour": 4}):
        products = {"cake": {"unit": "each", "quantity": 1, "supplement": [{"chocolate": {"unit": "ounce", "quantity": 2}}]}}
        body = generator.check_allocation(ingredients, products).json()
        assert tuple(bu.check_allocation(ingredients, products)) == (body["sufficient"], body["rationale"])


def test_the_best_allocation_is_worth_something_to_the_generator(generator: RealUtilityGenerator) -> None:
    drawn = generator.generate_utility("buyer")["utility"]
    utility = bu.parse_utility(drawn)
    one_cake = {"egg": 2, "flour": 2, "milk": 1, "sugar": 1}
    best = bu.best_allocation(one_cake, utility)
    assert best.products_body() == {"cake": {"unit": "each", "quantity": 1, "supplement": [{}]},
                                    "pancake": {"unit": "each", "quantity": 0, "supplement": []}}
    value = generator.calculate_utility(drawn, best.products_body()).json()["value"]
    assert value > 0 and value == bu.utility_value(utility, best) == drawn["cake"]["parameters"]["unitvalue"]
    assert generator.check_allocation(one_cake, best.products_body()).json()["sufficient"] is True
    # a purchase with supplements to share: chocolate for cakes and pancakes, vanilla, blueberries
    bought = {"egg": 7, "flour": 10, "milk": 7, "sugar": 2, "chocolate": 11, "vanilla": 3, "blueberry": 4}
    best = bu.best_allocation(bought, utility)
    rated = generator.calculate_utility(drawn, best.products_body()).json()
    # several products, whatever was drawn
    assert rated["value"] == bu.utility_value(utility, best) > 2 * min(bu.product_values(utility).values())
    assert generator.check_allocation(bought, best.products_body()).json()["sufficient"] is True
