"""The near-duplicate guard: two texts merge only when they state the same particulars."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_agent.consolidation.rules import normalised_text
from memory_agent.consolidation.textguard import same_particulars

SENTENCES = st.text(
    alphabet=st.characters(codec="utf-8", categories=("L", "N", "Zs", "P")), max_size=80
)


@given(SENTENCES)
def test_a_text_always_states_its_own_particulars(text: str) -> None:
    assert same_particulars(text, text) is None


@given(SENTENCES, SENTENCES)
def test_the_guard_is_symmetric(first: str, second: str) -> None:
    assert (same_particulars(first, second) is None) == (same_particulars(second, first) is None)


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=10_000))
def test_different_numbers_never_merge(one: int, other: int) -> None:
    verdict = same_particulars(
        f"Berth {one} was repainted green.", f"Berth {other} was repainted green."
    )
    assert (verdict is None) == (one == other)


def test_paraphrases_of_one_fact_pass_and_different_facts_do_not() -> None:
    assert (
        same_particulars(
            "The harbour master is called Ines Duarte.", "Ines Duarte is the harbour master."
        )
        is None
    )
    assert (
        same_particulars(
            "The project deadline is 14 March.", "The deadline of the project is 14 March."
        )
        is None
    )
    assert same_particulars("The user does not eat meat.", "The user doesn't eat meat.") is None
    assert "names" in (
        same_particulars("The user lives in Lisbon.", "The user lives in Porto.") or ""
    )
    assert "negated" in (same_particulars("Likes peanuts.", "Does not like peanuts.") or "")
    assert "numbers" in (
        same_particulars("The office is on the third floor.", "The office is on the fourth floor.")
        or ""
    )
    assert (
        same_particulars("Invoice 1,000 was paid.", "Invoice 1000 was paid.") is None
    )  # one number, two spellings


def test_normalised_text_sets_aside_spacing_and_end_punctuation_but_not_case() -> None:
    assert normalised_text("  The user likes  green tea. ") == normalised_text(
        "The user likes green tea"
    )
    assert normalised_text("The wifi password is Hunter2Blue.") != normalised_text(
        "The wifi password is hunter2blue"
    )
    assert normalised_text("Tea!") != normalised_text("Coffee!")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("The freezer is kept at -18 degrees.", "The freezer is kept at 18 degrees."),
        ("Standup is at 7am every day.", "Standup is at 7pm every day."),
        ("Standup is at 7 am every day.", "Standup is at 7 pm every day."),
        ("Berth 4a was repainted green in May.", "Berth 4b was repainted green in May."),
        ("The invoice is due in 20 days.", "The invoice is due in 20 weeks."),
        ("Ada arrives before noon.", "Ada arrives after noon."),
        ("The warehouse is on the left of the gate.", "The warehouse is on the right of the gate."),
        ("The contract was signed by the buyer.", "The contract was signed by the seller."),
        ("The wifi password is Hunter2Blue.", "The wifi password is hunter2blue."),
        ("The shop is open on weekdays.", "The shop is open on weekends."),
    ],
)
def test_a_fact_carrying_token_in_one_text_only_blocks_the_merge(first: str, second: str) -> None:
    assert same_particulars(first, second) is not None
    assert same_particulars(second, first) is not None


def test_small_inflections_and_known_variants_do_not_block() -> None:
    assert (
        same_particulars("The user is allergic to peanuts.", "The user has a peanut allergy.")
        is None
    )
    assert (
        same_particulars("The ferry to Sintra leaves at 8.", "The ferry to Sintra departs at 8.")
        is None
    )
    assert (
        same_particulars("The office is on the 3rd floor.", "The office is on the third floor.")
        is None
    )
