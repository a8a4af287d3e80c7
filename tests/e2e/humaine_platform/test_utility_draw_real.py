"""The port of ``GET /generateUtility/<role>`` (humaine_platform.utility_draw) against the platform's
real utility generator: the same distribution files, the same keys and strings, every number inside
its range and quantised alike, and each varying number distributed alike (a two-sample
Kolmogorov–Smirnov test on 300 draws from each)."""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from humaine_platform import utility_draw as ud
from tests.support.real_utility_generator import RealUtilityGenerator, utility_generator_tree

DRAWS = 300
"""Draws from each side per role (300 GETs on loopback take about a second)."""
SEED = 408
VARYING_NUMBERS = 17
"""The numbers a draw varies (10 for the buyer, 7 for the seller): each is one KS test."""
FAMILY_ALPHA = 0.001
"""The chance that a run in which the port is in truth equal fails at all: each of the
:data:`VARYING_NUMBERS` tests is held at ``FAMILY_ALPHA / VARYING_NUMBERS`` (Bonferroni), so a
fresh clone fails on chance about once in a thousand runs (fewer: the numbers are whole cents,
which makes the test conservative), while a port that draws from a wrong range is off by D ≈ 1."""

KS_C_ALPHA = math.sqrt(-math.log(FAMILY_ALPHA / VARYING_NUMBERS / 2) / 2)
"""c(α) = sqrt(-ln(α / 2) / 2), about 2.28 here. The two-sample KS test rejects "the same
distribution" when D > c(α)·sqrt((n + m) / (n·m)); with n = m = 300 that is about 0.186."""
GENERATOR_DISTRIBUTIONS = "distribution_parameters"
"""Where the generator's tree keeps the files the port ships copies of."""

KeyPath = tuple[str, ...]


def leaves(tree: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """Every leaf under ``tree`` with the keys that lead to it, in key order."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from leaves(value, (*path, key))
    else:
        yield path, tree


def ranges_of(role: str) -> dict[KeyPath, tuple[float, float]]:
    """The role's ``[low, high]`` ranges, each at the path its number has in a drawn utility."""
    drawn_path = {ud.DISTRIBUTION_KEY: ud.UTILITY_KEY}
    return {tuple(drawn_path.get(key, key) for key in path): (leaf[0], leaf[1])
            for path, leaf in leaves(ud.distribution_parameters(role)) if isinstance(leaf, list)}


def varying_numbers() -> int:
    """How many numbers of the two roles' distributions vary (the tests the correction divides by)."""
    return sum(low != high for role in ud.ROLES for low, high in ranges_of(role).values())


def ks_statistic(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sample Kolmogorov–Smirnov D: the largest gap between the two empirical distribution
    functions, taken at every value either sample has (both step there, ties included)."""
    sa, sb = sorted(a), sorted(b)
    return max(abs(bisect.bisect_right(sa, x) / len(sa) - bisect.bisect_right(sb, x) / len(sb)) for x in {*sa, *sb})


def ks_critical(n: int, m: int) -> float:
    return KS_C_ALPHA * math.sqrt((n + m) / (n * m))


@pytest.fixture(scope="module")
def generator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealUtilityGenerator]:
    """One real utility generator for both roles, on a free port."""
    process = RealUtilityGenerator(tmp_path_factory.mktemp("ug")).start()
    yield process
    process.stop()


@pytest.mark.parametrize("role", ud.ROLES)
def test_the_shipped_distributions_are_the_generators_files(role: str) -> None:
    shipped = Path(ud.__file__).parent / ud.DISTRIBUTIONS_FOLDER / f"{role}.json"
    assert shipped.read_bytes() == (utility_generator_tree() / GENERATOR_DISTRIBUTIONS / f"{role}.json").read_bytes()


@pytest.mark.parametrize("role", ud.ROLES)
def test_draws_match_the_real_generator(generator: RealUtilityGenerator, role: str) -> None:
    real = [dict(leaves(generator.generate_utility(role))) for _ in range(DRAWS)]
    rng = random.Random(SEED)
    port = [dict(leaves(ud.draw_utility(role, rng))) for _ in range(DRAWS)]

    # the same structure: the same key paths in the same order, the same strings
    shape = list(port[0])
    strings = {path: leaf for path, leaf in port[0].items() if isinstance(leaf, str)}
    for draw in (*real, *port):
        assert list(draw) == shape
        assert {path: leaf for path, leaf in draw.items() if isinstance(leaf, str)} == strings

    ranges = ranges_of(role)
    assert set(ranges) == set(shape) - set(strings)
    assert varying_numbers() == VARYING_NUMBERS
    largest: tuple[float, KeyPath] = (0.0, ())
    for path, (low, high) in ranges.items():
        real_values, port_values = [d[path] for d in real], [d[path] for d in port]
        for value in (*real_values, *port_values):
            assert low <= value <= high, (path, value)
            if ud.WHOLE_MARK in path[-1]:
                assert isinstance(value, int), (path, value)
            else:
                assert round(value, ud.CENT_DECIMALS) == value, (path, value)
        if low == high:
            assert set(real_values) == set(port_values) == {low}, path
            continue
        d = ks_statistic(real_values, port_values)
        assert d < ks_critical(DRAWS, DRAWS), f"{role} {'.'.join(path)}: KS D = {d:.3f}"
        largest = max(largest, (d, path))
    d, path = largest
    print(f"{role}: largest KS D = {d:.3f} at {'.'.join(path)} (critical value {ks_critical(DRAWS, DRAWS):.3f}, "
          f"alpha {FAMILY_ALPHA} over all {VARYING_NUMBERS}, n = m = {DRAWS})")


@pytest.mark.parametrize(("alias", "role"), list(ud.ROLE_ALIASES.items()))
def test_aliases_name_the_same_roles_as_at_the_generator(generator: RealUtilityGenerator, alias: str, role: str) -> None:
    real = [path for path, _ in leaves(generator.generate_utility(alias))]
    assert real == [path for path, _ in leaves(ud.draw_utility(alias))] == [path for path, _ in leaves(ud.draw_utility(role))]


def test_an_unknown_role_is_refused_by_both(generator: RealUtilityGenerator) -> None:
    with pytest.raises(httpx.HTTPStatusError):
        generator.generate_utility("chef")
    with pytest.raises(ud.UnknownRole):
        ud.draw_utility("chef")
