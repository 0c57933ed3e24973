"""`MemoryAwareAgent(auto_recall=...)`'s settings: every bad value is refused with a clear error."""

from __future__ import annotations

import pytest

from memory_agent import AutoRecallSettings, ConfigurationError
from memory_agent.agent.auto_recall import auto_recall_settings


@pytest.mark.parametrize(
    "values",
    [
        {"token_budget": 10},
        {"token_budget": True},
        {"max_items": 0},
        {"max_item_tokens": 5},
        {"candidates": "20"},
        {"sources": ()},
        {"sources": ["archival"]},
        {"sources": ("archival", "archival")},
        {"sources": ("web",)},
        {"mode": "scored"},
        {"min_score": "high"},
    ],
)
def test_bad_settings_are_refused_with_a_clear_error(values: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match="auto-recall"):
        AutoRecallSettings(**values)  # type: ignore[arg-type]  # deliberately wrong values


def test_the_auto_recall_argument() -> None:
    assert auto_recall_settings(False) is None
    assert auto_recall_settings(True) == AutoRecallSettings()
    custom = AutoRecallSettings(token_budget=500, sources=("conversation",))
    assert auto_recall_settings(custom) is custom
    for wrong in (None, 1, "yes", {"token_budget": 500}):
        with pytest.raises(ConfigurationError, match="auto_recall must be"):
            auto_recall_settings(wrong)  # type: ignore[arg-type]  # deliberately wrong values
