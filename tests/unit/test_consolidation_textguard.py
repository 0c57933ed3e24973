"""The near-duplicate guard: two texts merge only when they state the same particulars."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_agent.consolidation.rules import normalised_text
from memory_agent.consolidation.textguard import same_particulars

SENTENCES = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "Zs", "P")), max_size=80)


@given(SENTENCES)
def test_a_text_always_states_its_own_particulars(text: str) -> None:
    assert same_particulars(text, text) is None


@given(SENTENCES, SENTENCES)
def test_the_guard_is_symmetric(first: str, second: str) -> None:
    assert (same_particulars(first, second) is None) == (same_particulars(second, first) is None)


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=10_000))
def test_different_numbers_never_merge(one: int, other: int) -> None:
    verdict = same_particulars(f"Berth {one} was repainted green.", f"Berth {other} was repainted green.")
    assert (verdict is None) == (one == other)


def test_paraphrases_of_one_fact_pass_and_different_facts_do_not() -> None:
    assert same_particulars("The harbour master is called Ines Duarte.", "Ines Duarte is the harbour master.") is None
    assert same_particulars("The project deadline is 14 March.", "The deadline of the project is 14 March.") is None
    assert same_particulars("The user does not eat meat.", "The user doesn't eat meat.") is None
    assert "names" in (same_particulars("The user lives in Lisbon.", "The user lives in Porto.") or "")
    assert "negated" in (same_particulars("Likes peanuts.", "Does not like peanuts.") or "")
    assert "numbers" in (same_particulars("The office is on the third floor.", "The office is on the fourth floor.")
                         or "")
    assert same_particulars("Invoice 1,000 was paid.", "Invoice 1000 was paid.") is None  # one number, two spellings


def test_normalised_text_sets_aside_case_spacing_and_end_punctuation() -> None:
    assert normalised_text("  The user likes  green tea. ") == normalised_text("the user likes green tea")
    assert normalised_text("Tea!") != normalised_text("Coffee!")
