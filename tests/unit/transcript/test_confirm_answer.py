"""The buyer's spoken answer to a seller's Accept: a plain yes or no, and nothing that negotiates."""

from __future__ import annotations

import pytest

from transcript.confirm_answer import spoken_answer

AVATARS = ("Celia", "Watson")


@pytest.mark.parametrize("text", ["Yes.", "yeah", "Yes, please.", "Deal!", "OK, deal.", "I accept.", "Celia, yes.",
                                  "That's a deal.", "Sure.", "Sounds good.", "Yes, deal, Watson."])
def test_a_plain_yes_accepts(text: str) -> None:
    assert spoken_answer(text, AVATARS) is True


@pytest.mark.parametrize("text", ["No.", "No, thank you.", "Nope.", "I decline.", "No thanks, Celia.", "Cancel.", "I pass."])
def test_a_plain_no_declines(text: str) -> None:
    assert spoken_answer(text, AVATARS) is False


@pytest.mark.parametrize("text", [
    "Yes but only for three dollars.",  # a counter-offer goes to the EO
    "Yes, 2 eggs.",                     # a number is negotiation
    "Is that a deal?",                  # a question
    "Not a deal.",                      # mixed words: not a plain answer
    "Do it.",                           # too little to take as a yes
    "Celia, can you do better on the flour?",
    "I want two cups of sugar and some milk please",
    "",
    "Celia",
])
def test_anything_else_is_negotiation(text: str) -> None:
    assert spoken_answer(text, AVATARS) is None
