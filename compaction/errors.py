"""The exceptions the compaction package raises, in one small tree.

    CompactionError             base of every error raised here on purpose
    ├── CompactionSettingsError a setting has a value compaction cannot use (also a ValueError)
    └── SummarizerError         the summariser gave no usable summary (after its retries)

`compact()` never lets a `SummarizerError` escape into a turn: it turns it into a deferred
outcome, or a marked truncation when the context is about to overflow. The errors carry the
fields a caller needs to react, and messages that say what to do.
"""

from __future__ import annotations

__all__ = ["CompactionError", "CompactionSettingsError", "SummarizerError"]


class CompactionError(Exception):
    """Base of every error the compaction package raises on purpose."""


class CompactionSettingsError(CompactionError, ValueError):
    """A compaction setting has a value that cannot be used.

    Attributes:
        field: The settings field (e.g. ``window_percentage``).
        value: The value refused, as given (a string when it came from the environment).
        allowed: What would have been accepted, in words.
        variable: The environment variable it came from, when it came from one.
    """

    def __init__(
        self, field: str, value: object, allowed: str, *, variable: str | None = None
    ) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.variable = variable
        source = (
            f"{variable} (CompactionSettings.{field})"
            if variable
            else f"CompactionSettings.{field}"
        )
        super().__init__(f"{source} cannot be {value!r}: it must be {allowed}.")

    def from_variable(self, variable: str) -> CompactionSettingsError:
        """The same refusal, naming the environment variable the value came from."""
        return CompactionSettingsError(self.field, self.value, self.allowed, variable=variable)


class SummarizerError(CompactionError):
    """The summariser could not produce a summary.

    Attributes:
        attempts: How many requests were made before giving up.
        retryable: Whether the last failure was of a kind worth retrying later (rate limit,
            overload, server or connection error), as opposed to a request the API refuses.
        status_code: HTTP status of the last failure, when there was a response.
    """

    def __init__(
        self,
        message: str,
        *,
        attempts: int = 1,
        retryable: bool = False,
        status_code: int | None = None,
    ) -> None:
        self.attempts = attempts
        self.retryable = retryable
        self.status_code = status_code
        super().__init__(message)
