"""The rules-only reader of times a question names: each phrase's window, and never a crash."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_agent.conversation.time_phrases import time_window

NOW = datetime(2026, 11, 25, 15, 30, tzinfo=timezone.utc)  # a Wednesday


def day(year: int, month: int, number: int) -> datetime:
    return datetime(year, month, number, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did I say yesterday?", day(2026, 11, 24), day(2026, 11, 25)),
        ("the day before yesterday we met", day(2026, 11, 23), day(2026, 11, 24)),
        ("what happened today", day(2026, 11, 25), day(2026, 11, 26)),
        ("Where did we go last May?", day(2026, 5, 1), day(2026, 6, 1)),
        ("what did we plan last November", day(2025, 11, 1), day(2025, 12, 1)),
        ("in December 2023, what did Maria donate", day(2023, 12, 1), day(2024, 1, 1)),
        ("what did we do in 2022", day(2022, 1, 1), day(2023, 1, 1)),
        ("three days ago you said", day(2026, 11, 22), day(2026, 11, 23)),
        ("two weeks ago", day(2026, 11, 8), day(2026, 11, 15)),
        ("last week", day(2026, 11, 16), day(2026, 11, 23)),
        ("last weekend", day(2026, 11, 21), day(2026, 11, 23)),
        ("last month", day(2026, 10, 1), day(2026, 11, 1)),
        ("last year", day(2025, 1, 1), day(2026, 1, 1)),
        ("last friday", day(2026, 11, 20), day(2026, 11, 21)),
        ("on wednesday", day(2026, 11, 18), day(2026, 11, 19)),
    ],
)
def test_each_phrase_names_its_window(question: str, start: datetime, end: datetime) -> None:
    window = time_window(question, NOW)
    assert window is not None
    assert window.start == start
    assert window.end == end - timedelta(microseconds=1)


@pytest.mark.parametrize(
    "question",
    ["What is my cat called?", "two weeks before the trip", "May I ask about the boat?", ""],
)
def test_questions_naming_no_time_it_can_read_give_none(question: str) -> None:
    assert time_window(question, NOW) is None


@given(
    st.text(max_size=200),
    st.datetimes(min_value=datetime(1950, 1, 1), max_value=datetime(2190, 1, 1)),
)
def test_any_text_gives_none_or_an_ordered_window(question: str, now: datetime) -> None:
    window = time_window(question, now.replace(tzinfo=timezone.utc))
    assert window is None or window.start <= window.end
