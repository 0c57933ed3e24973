"""CompactionSettings: defaults, derived token figures, validation, and COMPACTION_* parsing."""

from __future__ import annotations

import dataclasses

import pytest

from compaction import CompactionError, CompactionSettings, CompactionSettingsError


def test_defaults_follow_the_issue() -> None:
    settings = CompactionSettings()

    assert settings.enabled is True
    assert settings.model == "claude-haiku-4-5"
    assert settings.mode == "sliding_window"
    assert settings.window_percentage == 0.3
    assert settings.clip_chars == 2000
    assert settings.trigger_threshold == 0.8
    assert settings.context_window == 200_000
    assert settings.min_kept_messages == 4


def test_derived_token_figures() -> None:
    settings = CompactionSettings(context_window=100_000, trigger_threshold=0.75, clip_chars=1000)

    assert settings.trigger_tokens == 75_000
    assert settings.target_tokens == 75_000
    assert settings.overflow_tokens == 95_000
    assert settings.summary_reserve_tokens == 500


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("window_percentage", 1.5, "from 0 to 1"),
        ("window_percentage", -0.1, "from 0 to 1"),
        ("trigger_threshold", 0, "above 0 and at most 1"),
        ("clip_chars", -5, "at least 100"),
        ("min_kept_messages", -1, "0 or more"),
        ("context_window", 10, "at least 1000"),
        ("mode", "fifo", "'sliding_window', 'all'"),
        ("max_attempts", 0, "at least 1"),
        ("clip_chars", True, "whole number"),
        ("window_percentage", float("nan"), "from 0 to 1"),
        ("model", " ", "non-empty"),
    ],
)
def test_bad_values_are_refused_when_built_directly(
    field: str, value: object, allowed: str
) -> None:
    with pytest.raises(CompactionSettingsError) as caught:
        CompactionSettings(**{field: value})  # type: ignore[arg-type]

    error = caught.value
    assert error.field == field
    assert allowed in str(error)
    assert field in str(error) and repr(value) in str(error)
    assert isinstance(error, CompactionError) and isinstance(error, ValueError)


def test_overflow_below_the_trigger_is_refused() -> None:
    with pytest.raises(CompactionSettingsError, match="at least trigger_threshold"):
        CompactionSettings(trigger_threshold=0.9, overflow_threshold=0.85)


def test_replace_is_validated_too() -> None:
    with pytest.raises(CompactionSettingsError):
        dataclasses.replace(CompactionSettings(), window_percentage=2)


def test_from_env_reads_every_documented_variable() -> None:
    settings = CompactionSettings.from_env(
        {
            "COMPACTION_ENABLED": "false",
            "COMPACTION_MODEL": "claude-3-5-haiku-latest",
            "COMPACTION_MODE": "ALL",
            "COMPACTION_WINDOW_PERCENTAGE": "0.5",
            "COMPACTION_CLIP_CHARS": "3000",
            "COMPACTION_TRIGGER_THRESHOLD": "0.7",
            "COMPACTION_CONTEXT_WINDOW": "100_000",
            "COMPACTION_MIN_KEPT_MESSAGES": "6",
            "COMPACTION_OVERFLOW_THRESHOLD": "0.9",
            "COMPACTION_MAX_ATTEMPTS": "2",
            "COMPACTION_RETRY_INITIAL_WAIT": "0.5",
        }
    )

    assert settings == CompactionSettings(
        enabled=False,
        model="claude-3-5-haiku-latest",
        mode="all",
        window_percentage=0.5,
        clip_chars=3000,
        trigger_threshold=0.7,
        context_window=100_000,
        min_kept_messages=6,
        overflow_threshold=0.9,
        max_attempts=2,
        retry_initial_wait=0.5,
    )


def test_from_env_ignores_blank_and_unrelated_variables() -> None:
    settings = CompactionSettings.from_env({"COMPACTION_MODEL": "  ", "HOME": "/tmp"})

    assert settings == CompactionSettings()


def test_from_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPACTION_CLIP_CHARS", "1234")

    assert CompactionSettings.from_env().clip_chars == 1234


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [
        ("COMPACTION_WINDOW_PERCENTAGE", "1.5", "a number from 0 to 1"),
        ("COMPACTION_WINDOW_PERCENTAGE", "thirty", "a number from 0 to 1"),
        ("COMPACTION_CLIP_CHARS", "-1", "at least 100"),
        ("COMPACTION_CLIP_CHARS", "2000.5", "whole number"),
        ("COMPACTION_TRIGGER_THRESHOLD", "80%", "above 0 and at most 1"),
        ("COMPACTION_MODE", "fifo", "one of 'sliding_window', 'all'"),
        ("COMPACTION_ENABLED", "maybe", "true or false"),
        ("COMPACTION_MIN_KEPT_MESSAGES", "-2", "0 or more"),
    ],
)
def test_from_env_names_the_variable_value_and_what_is_allowed(
    variable: str, value: str, allowed: str
) -> None:
    with pytest.raises(CompactionSettingsError) as caught:
        CompactionSettings.from_env({variable: value})

    message = str(caught.value)
    assert caught.value.variable == variable
    assert variable in message and value in message and allowed in message
