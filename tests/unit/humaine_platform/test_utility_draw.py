"""Utilities drawn without the generator (humaine_platform.utility_draw): the generator's shape,
numbers inside their ranges and quantised as it quantises, reproducible with a seed, and
``@humaine/utils/math`` ``quantize`` to the last JavaScript rounding."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from humaine_platform import utility_draw as ud
from humaine_platform.endpoints import BUYER_ROLE, SELLER_ROLE

DRAWS = 200
"""Draws per role for the range checks (pure and quick: a few milliseconds)."""
SEED = 408


def leaves(tree: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf under ``tree`` with the keys that lead to it, in key order."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from leaves(value, (*path, key))
    else:
        yield path, tree


def drawn_path(path: tuple[str, ...]) -> tuple[str, ...]:
    """Where a distribution's leaf lands in a drawn utility."""
    return tuple(ud.UTILITY_KEY if key == ud.DISTRIBUTION_KEY else key for key in path)


def expected_leaves(role: str) -> dict[tuple[str, ...], Any]:
    """The role's distribution, leaf by leaf at its drawn path: a ``[low, high]`` list or a string."""
    return {drawn_path(path): leaf for path, leaf in leaves(ud.distribution_parameters(role))}


class Ends(random.Random):
    """A source that always gives the same number: 0 draws every range's low end."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.mark.parametrize("role", ud.ROLES)
def test_shape_is_the_distributions_with_utility_for_distribution(role: str) -> None:
    drawn = ud.draw_utility(role, random.Random(SEED))
    distribution = ud.distribution_parameters(role)
    assert list(drawn) == ["currencyUnit", ud.UTILITY_KEY] and drawn["currencyUnit"] == "USD"
    assert list(drawn[ud.UTILITY_KEY]) == list(distribution[ud.DISTRIBUTION_KEY])  # every good, in order
    expected = expected_leaves(role)
    got = dict(leaves(drawn))
    assert list(got) == list(expected)  # the same key paths in the same order
    for path, leaf in expected.items():
        if isinstance(leaf, str):  # currencyUnit, each good's type and unit, each supplement's
            assert got[path] == leaf, path


@pytest.mark.parametrize("role", ud.ROLES)
def test_every_number_in_its_range_and_quantised(role: str) -> None:
    rng = random.Random(SEED)
    ranges = {path: leaf for path, leaf in expected_leaves(role).items() if isinstance(leaf, list)}
    assert ranges
    for _ in range(DRAWS):
        drawn = dict(leaves(ud.draw_utility(role, rng)))
        for path, (low, high) in ranges.items():
            value = drawn[path]
            assert low <= value <= high, (path, value)
            if ud.WHOLE_MARK in path[-1]:
                assert isinstance(value, int), (path, value)
            else:
                assert isinstance(value, (int, float)) and round(value, ud.CENT_DECIMALS) == value, (path, value)


def test_a_range_of_one_value_gives_that_value_as_a_whole_number() -> None:
    drawn = ud.draw_utility(BUYER_ROLE, random.Random(SEED))
    chocolate = drawn[ud.UTILITY_KEY]["cake"]["parameters"]["supplement"]["chocolate"]["parameters"]
    assert (chocolate["minQuantity"], chocolate["maxQuantity"]) == (3, 6)
    assert type(chocolate["minQuantity"]) is int


@pytest.mark.parametrize("role", ud.ROLES)
def test_the_ends_of_the_draw_give_the_ends_of_the_ranges(role: str) -> None:
    ranges = {path: leaf for path, leaf in expected_leaves(role).items() if isinstance(leaf, list)}
    lowest = dict(leaves(ud.draw_utility(role, Ends(0.0))))
    highest = dict(leaves(ud.draw_utility(role, Ends(1.0 - 2**-53))))  # the largest random() gives
    for path, (low, high) in ranges.items():
        assert (lowest[path], highest[path]) == (low, high), path


@pytest.mark.parametrize("role", ud.ROLES)
def test_a_seed_draws_the_same_utility_twice_and_another_seed_another(role: str) -> None:
    assert ud.draw_utility(role, random.Random(SEED)) == ud.draw_utility(role, random.Random(SEED))
    assert ud.draw_utility(role, random.Random(SEED)) != ud.draw_utility(role, random.Random(SEED + 1))


def test_without_a_source_each_draw_differs() -> None:
    assert ud.draw_utility(BUYER_ROLE) != ud.draw_utility(BUYER_ROLE)


@pytest.mark.parametrize(("alias", "role"), [("human", BUYER_ROLE), ("agent", SELLER_ROLE), ("Human", BUYER_ROLE),
                                             ("BUYER", BUYER_ROLE), ("Seller", SELLER_ROLE)])
def test_aliases_and_any_case_name_the_roles(alias: str, role: str) -> None:
    assert ud.canonical_role(alias) == role
    assert ud.draw_utility(alias, random.Random(SEED)) == ud.draw_utility(role, random.Random(SEED))


@pytest.mark.parametrize("role", ["chef", "", "buyers", "agents"])
def test_an_unknown_role_is_refused_naming_the_roles(role: str) -> None:
    with pytest.raises(ud.UnknownRole) as refused:
        ud.draw_utility(role)
    message = str(refused.value)
    assert isinstance(refused.value, ValueError) and "\n" not in message
    assert all(name in message for name in (repr(role), *ud.ROLES, *ud.ROLE_ALIASES))


def test_the_distributions_are_read_once_and_handed_out_as_copies() -> None:
    first = ud.distribution_parameters(BUYER_ROLE)
    first[ud.DISTRIBUTION_KEY].clear()
    assert ud.distribution_parameters(BUYER_ROLE)[ud.DISTRIBUTION_KEY]
    assert ud.draw_utility(BUYER_ROLE)[ud.UTILITY_KEY]


@pytest.mark.parametrize(("value", "decimals", "expected"), [
    (2.675, 2, 2.68),  # 2.675 * 100 is 267.49999999999997; toFixed(11) makes it 267.5, which rounds up
    (1.005, 2, 1.01),  # likewise 100.49999999999999 -> 100.5 -> 101
    (0.125, 2, 0.13),  # 12.5 exactly: a half, up
    (2.5, 0, 3),
    (-1.5, 0, -1),  # Math.round(-1.5) is -1: halves go toward +infinity
    (-2.5, 0, -2),
    (-2.675, 2, -2.67),  # -267.5 -> -267
    (0.49999999999999994, 0, 1),  # toFixed(11) gives "0.50000000000", which Math.round makes 1
    (1.4999999999, 0, 1),
    (3.0, 0, 3),
    (0.3, 2, 0.3),
])
def test_quantize_rounds_as_javascript_does(value: float, decimals: int, expected: float) -> None:
    assert ud.quantize(value, decimals) == expected


def test_a_seeded_room_draws_each_keys_utility_from_the_seed_and_the_key_alone() -> None:
    """Two processes of one competition (a room restarted between rounds) draw the same utility
    for a key, and a key drawn after the restart does not get the utility of the first key."""
    from avatar.competition.utilities import UtilitySource
    from tests.support.helpers import run_async

    first, restarted = UtilitySource(None, SEED), UtilitySource(None, SEED)
    a = run_async(first.draw(BUYER_ROLE, "buyer-set-1"))
    b = run_async(first.draw(BUYER_ROLE, "buyer-set-2"))
    assert run_async(restarted.draw(BUYER_ROLE, "buyer-set-2")) == b != a
