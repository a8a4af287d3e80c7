"""Money and counts as people write them (:mod:`formats.written`), and the agents' amounts in a
page's text rewritten so (:func:`formats.written.amounts`)."""

from __future__ import annotations

import pytest

from formats import written
from formats.spoken_amounts import spoken


@pytest.mark.parametrize(("sent", "shown"), [
    ("I can do 0.8 USD for the eggs.", "I can do $0.80 for the eggs."),
    ("Deal at 3.0 USD", "Deal at $3.00"),
    ("USD 12 for the lot", "$12.00 for the lot"),
    ("$4.5 each", "$4.50 each"),
    ("US$ 1,250.5 in all", "$1,250.50 in all"),
    ("It is $4. Then we talk.", "It is $4. Then we talk."),
    ("$ 4 or US$4", "$4.00 or $4.00"),
    ("2 eggs for 1.5 USD, or 3 for USD 2.", "2 eggs for $1.50, or 3 for $2.00."),
    ("$0.80 already written", "$0.80 already written"),
])
def test_amounts_are_written_as_people_write_money(sent: str, shown: str) -> None:
    assert written.amounts(sent) == shown


@pytest.mark.parametrize("text", ["0.125 USD", "$0.125", "egg 2, milk 1", "room 12 at 3.5", "USD", "$3 or $1,250.00"])
def test_what_is_no_price_is_left_as_it_came(text: str) -> None:
    assert written.amounts(text) == text


def test_the_voice_reads_the_same_amounts_the_pages_write() -> None:
    sent = "Two eggs for 0.8 USD, flour for USD 3"
    assert written.amounts(sent) == "Two eggs for $0.80, flour for $3.00"
    assert spoken(sent) == spoken(written.amounts(sent)) == "Two eggs for eighty cents, flour for three dollars"


def test_money_and_counts() -> None:
    assert (written.money(0.8), written.money(9.0), written.money(-2.5), written.money(4.5, "EUR")) == \
        ("$0.80", "$9.00", "-$2.50", "4.50 EUR")
    assert [written.count(n, good) for n, good in ((1, "egg"), (2, "egg"), (2, "flour"), (3, "blueberry"), (2.0, "cake"))] == \
        ["1 egg", "2 eggs", "2 flour", "3 blueberries", "2 cakes"]
    assert written.goods({"egg": 2, "milk": 1}) == "2 eggs, 1 milk"


def test_what_an_allocation_still_needs_agrees_in_number() -> None:
    assert written.missing({"egg": 2, "flour": 1, "milk": 2.0}) == "2 more eggs, 1 more flour, 2 more milk"
    assert written.count(1, "egg", more=True) == "1 more egg"
