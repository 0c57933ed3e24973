"""Compaction settings: one validated object, built directly or from ``COMPACTION_*`` variables.

Every field is checked in ``__post_init__``, so a bad value is refused when the object is built,
whether it came from code or the environment, with a message naming the field (and the variable),
the value and what is allowed. The environment is read only by `CompactionSettings.from_env`,
never at import.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Literal, TypeGuard

from .errors import CompactionSettingsError

__all__ = ["ENV_PREFIX", "MODES", "CompactionMode", "CompactionSettings"]

CompactionMode = Literal["sliding_window", "all"]
MODES: tuple[str, ...] = ("sliding_window", "all")
ENV_PREFIX = "COMPACTION_"

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class CompactionSettings:
    """When and how a conversation is compacted.

    Token figures are estimates of a whole request: system prompt, tool definitions, the
    conversation summary and the messages still in context.
    """

    enabled: bool = True
    """Compact automatically when the trigger is reached (COMPACTION_ENABLED)."""
    model: str = "claude-haiku-4-5"
    """Cheap model that writes the summaries (COMPACTION_MODEL)."""
    mode: CompactionMode = "sliding_window"
    """'sliding_window' evicts the oldest share; 'all' keeps only the last turn
    (COMPACTION_MODE)."""
    window_percentage: float = 0.3
    """Smallest share of the conversation's tokens evicted per compaction, 0 to 1."""
    clip_chars: int = 2000
    """Longest summary kept, in characters; longer ones are clipped (COMPACTION_CLIP_CHARS)."""
    trigger_threshold: float = 0.8
    """Compact when a request would fill this share of the context window."""
    overflow_threshold: float = 0.95
    """Share of the window above which a failed summariser leads to a marked truncation
    instead of a deferral, because the next request would not fit
    (COMPACTION_OVERFLOW_THRESHOLD)."""
    context_window: int = 200_000
    """Context window of the agent's model, in tokens (COMPACTION_CONTEXT_WINDOW)."""
    min_kept_messages: int = 4
    """Fewest recent messages a sliding-window compaction keeps (COMPACTION_MIN_KEPT_MESSAGES)."""
    summary_chunk_tokens: int = 100_000
    """Most message tokens sent to the summariser in one request; more are summarised in
    several requests, each folding in the summary so far (COMPACTION_SUMMARY_CHUNK_TOKENS)."""
    summary_max_tokens: int = 1024
    """``max_tokens`` of a summariser request (COMPACTION_SUMMARY_MAX_TOKENS)."""
    max_attempts: int = 5
    """Summariser requests tried, first one included, before giving up (COMPACTION_MAX_ATTEMPTS)."""
    retry_initial_wait: float = 1.0
    """Seconds of the first backoff window; it doubles per retry, with full jitter."""
    retry_max_wait: float = 30.0
    """Longest wait between two attempts, in seconds, ``retry-after`` included."""
    request_timeout: float = 120.0
    """Seconds one summariser request may take (COMPACTION_REQUEST_TIMEOUT)."""

    def __post_init__(self) -> None:
        for name, check, allowed in _FIELD_RULES:
            value = getattr(self, name)
            if not check(value):
                raise CompactionSettingsError(name, value, allowed)
        self._check_combinations()

    def _check_combinations(self) -> None:
        if self.overflow_threshold < self.trigger_threshold:
            raise CompactionSettingsError(
                "overflow_threshold",
                self.overflow_threshold,
                f"at least trigger_threshold ({self.trigger_threshold})",
            )
        if self.retry_max_wait < self.retry_initial_wait:
            raise CompactionSettingsError(
                "retry_max_wait",
                self.retry_max_wait,
                f"at least retry_initial_wait ({self.retry_initial_wait})",
            )

    @property
    def trigger_tokens(self) -> int:
        """Request size at which compaction starts."""
        return int(self.context_window * self.trigger_threshold)

    @property
    def target_tokens(self) -> int:
        """Request size a compaction must get under. A caller that expects the next turn to add
        tokens passes them as ``headroom`` (`compact`), and the cut leaves that much more free,
        so the next turn's check does not find another compaction due."""
        return self.trigger_tokens

    @property
    def overflow_tokens(self) -> int:
        """Request size above which dropping text beats waiting for the summariser."""
        return int(self.context_window * self.overflow_threshold)

    @property
    def summary_reserve_tokens(self) -> int:
        """Tokens set aside for the new summary when planning a cut (about 2 chars/token,
        generous on purpose: a summary full of names and numbers tokenises densely)."""
        return math.ceil(self.clip_chars / 2)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CompactionSettings:
        """Build settings from ``COMPACTION_<FIELD>`` variables (default: the process environment).

        Unset or blank variables keep the defaults. A value that cannot be parsed or is out of
        range raises `CompactionSettingsError` naming the variable.
        """
        env = os.environ if environ is None else environ
        kwargs: dict[str, object] = {}
        variables: dict[str, str] = {}
        for spec in fields(cls):
            variable = ENV_PREFIX + spec.name.upper()
            raw = env.get(variable, "").strip()
            if raw:
                kwargs[spec.name] = _parse(spec.name, raw, spec.default, variable)
                variables[spec.name] = variable
        try:
            return cls(**kwargs)  # type: ignore[arg-type]  # each value was parsed for its field's type
        except CompactionSettingsError as exc:
            if exc.field in variables:
                raise exc.from_variable(variables[exc.field]) from None
            raise


def _parse(name: str, raw: str, default: object, variable: str) -> object:
    """Turn an environment string into the field's type (the type of its default)."""
    try:
        if isinstance(default, bool):
            return _parse_bool(raw)
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError:
        allowed = _ALLOWED.get(name, "a valid value")
        raise CompactionSettingsError(name, raw, allowed, variable=variable) from None
    return raw.lower() if name == "mode" else raw


def _parse_bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(raw)


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _share(low_open: bool) -> Callable[[object], bool]:
    """A share of something: 0..1, optionally excluding 0."""

    def check(value: object) -> bool:
        if not _is_number(value):
            return False
        low_ok = value > 0 if low_open else value >= 0
        return bool(low_ok and value <= 1)

    return check


def _int_at_least(minimum: int) -> Callable[[object], bool]:
    return lambda value: _is_int(value) and value >= minimum


def _number_at_least(minimum: float, *, strict: bool = False) -> Callable[[object], bool]:
    def check(value: object) -> bool:
        if not _is_number(value):
            return False
        return value > minimum if strict else value >= minimum

    return check


_FIELD_RULES: tuple[tuple[str, Callable[[object], bool], str], ...] = (
    ("enabled", lambda v: isinstance(v, bool), "true or false"),
    ("model", lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty model name"),
    ("mode", lambda v: v in MODES, "one of " + ", ".join(repr(m) for m in MODES)),
    ("window_percentage", _share(low_open=False), "a number from 0 to 1 (e.g. 0.3)"),
    ("clip_chars", _int_at_least(100), "a whole number of characters, at least 100"),
    ("trigger_threshold", _share(low_open=True), "a number above 0 and at most 1 (e.g. 0.8)"),
    ("overflow_threshold", _share(low_open=True), "a number above 0 and at most 1 (e.g. 0.95)"),
    ("context_window", _int_at_least(1000), "a whole number of tokens, at least 1000"),
    ("min_kept_messages", _int_at_least(0), "a whole number, 0 or more"),
    ("summary_chunk_tokens", _int_at_least(1000), "a whole number of tokens, at least 1000"),
    ("summary_max_tokens", _int_at_least(1), "a whole number of tokens, at least 1"),
    ("max_attempts", _int_at_least(1), "a whole number, at least 1"),
    ("retry_initial_wait", _number_at_least(0), "a number of seconds, 0 or more"),
    ("retry_max_wait", _number_at_least(0), "a number of seconds, 0 or more"),
    ("request_timeout", _number_at_least(0, strict=True), "a number of seconds above 0"),
)
_ALLOWED: dict[str, str] = {name: allowed for name, _, allowed in _FIELD_RULES}
