"""Timestamps of passages: one canonical form so that SQLite and the vector store agree.

Passages store `created_at` as ISO-8601 UTC with microseconds (sortable as text, the same form as
`store.utc_now`); the vector store keeps the same instant as epoch seconds, because Chroma can
only compare numbers. Callers may give datetimes, dates or ISO strings; naive values are UTC, and
a bare date used as an end bound means the end of that day, so `end_date="2024-05-01"` includes
everything on 1 May.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone

from ..errors import ArchivalError, MemoryAgentError, preview
from ..validation import check_text

__all__ = ["Timestamp", "aware_utc_iso", "to_epoch", "to_utc_iso"]

Timestamp = datetime | date | str


def to_utc_iso(value: Timestamp, *, end_of_day: bool = False) -> str:
    """The canonical UTC text of `value`; `end_of_day` makes a bare date cover its whole day."""
    return _as_utc(value, end_of_day=end_of_day).isoformat(timespec="microseconds")


def aware_utc_iso(name: str, value: Timestamp) -> str:
    """Like `to_utc_iso`, but a time without a zone (or a bare date) is refused, not taken as UTC:
    an expiry is a deadline, and guessing its zone could move it by hours."""
    moment = _parse(value) if isinstance(value, str) else value
    if not isinstance(moment, datetime):
        raise ArchivalError(
            f"{name} must be a date and time with a time zone, e.g. '2024-05-01T13:30:00Z'; "
            f"got {value!r}. Nothing was changed."
        )
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ArchivalError(
            f"{name} has no time zone ({value!r}); add one, e.g. 'Z' or '+02:00'. "
            "Nothing was changed."
        )
    return to_utc_iso(moment)


def to_epoch(value: Timestamp) -> float:
    """Seconds since the epoch, for the vector store's numeric metadata."""
    return _as_utc(value).timestamp()


def _as_utc(value: Timestamp, *, end_of_day: bool = False) -> datetime:
    try:
        return _to_utc(value, end_of_day)
    except MemoryAgentError:
        raise
    except (OverflowError, ValueError):
        # e.g. 0001-01-01T00:00:00+01:00 is a valid ISO time whose UTC instant is before year 1.
        raise ArchivalError(
            f"'{value}' is out of the range of representable times (years 1-9999 in UTC)."
        ) from None


def _to_utc(value: Timestamp, end_of_day: bool) -> datetime:
    if isinstance(value, str):
        value = _parse(value)
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime.combine(value, time.min)
        if end_of_day:
            moment += timedelta(days=1, microseconds=-1)
    else:
        raise ArchivalError(
            f"Expected a date, datetime or ISO-8601 string, got {type(value).__name__}."
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def _parse(text: str) -> datetime | date:
    check_text("a date", text)
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        if len(cleaned) == 10:
            return date.fromisoformat(cleaned)
        return datetime.fromisoformat(cleaned)
    except ValueError:
        raise ArchivalError(
            f"'{preview(text)}' is not a date. Use ISO-8601, e.g. '2024-05-01' or "
            "'2024-05-01T13:30:00Z'."
        ) from None
