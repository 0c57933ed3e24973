"""Rules-only reading of the time a question names ("yesterday", "last May", "three weeks ago").

Conversation search can narrow or favour messages from the window a question names, using each
message's timestamp. No model is involved: a handful of patterns, each turned into a window of
UTC times relative to a reference moment (now, or the newest message). A question naming no time
this reader knows gives None and search works as without it. Phrases anchored on an event ("two
weeks before the trip") are not read: the event's date is not known without understanding it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

__all__ = ["TimeWindow", "time_window"]

MONTHS = (
    "january february march april may june july august september october november december"
).split()
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "a couple of": 2,
    "couple of": 2,
    "three": 3,
    "a few": 3,
    "few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_NUMBER = r"(\d{1,3}|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")"
_MONTH = r"(" + "|".join(MONTHS) + r"|" + "|".join(m[:3] for m in MONTHS) + r")"
_AGO = re.compile(_NUMBER + r"\s+(day|week|month|year)s?\s+ago\b")
_MONTH_YEAR = re.compile(r"\b" + _MONTH + r"\.?\s+(?:of\s+)?(\d{4})\b")
_LAST_MONTH_NAME = re.compile(r"\b(last|this|in|during|since|past)\s+" + _MONTH + r"\b")
_YEAR = re.compile(r"\b(?:in|during|of|since)\s+(\d{4})\b")
_LAST_WEEKDAY = re.compile(r"\b(last|on|this past|past)\s+(" + "|".join(WEEKDAYS) + r")\b")


@dataclass(frozen=True)
class TimeWindow:
    """An inclusive window of UTC times and the words of the question that named it."""

    start: datetime
    end: datetime
    phrase: str

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment <= self.end


def time_window(question: str, now: datetime | None = None) -> TimeWindow | None:
    """The window of time `question` names, relative to `now` (UTC now by default), or None."""
    reference = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    text = " ".join(question.lower().split())
    today = reference.replace(hour=0, minute=0, second=0, microsecond=0)
    for reader in (_named_days, _ago, _month_year, _month_name, _weekday, _periods, _year):
        found = reader(text, reference, today)
        if found is not None:
            return found
    return None


def _day(start: datetime, days: int, phrase: str) -> TimeWindow:
    return TimeWindow(start, start + timedelta(days=days, microseconds=-1), phrase)


def _named_days(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    if "day before yesterday" in text:
        return _day(today - timedelta(days=2), 1, "the day before yesterday")
    if re.search(r"\b(yesterday|last night)\b", text):
        return _day(today - timedelta(days=1), 1, "yesterday")
    if re.search(r"\b(today|this morning|tonight|earlier today)\b", text):
        return _day(today, 1, "today")
    return None


def _ago(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    match = _AGO.search(text)
    if match is None:
        return None
    count = int(match.group(1)) if match.group(1).isdigit() else NUMBERS[match.group(1)]
    unit = match.group(2)
    if unit == "day":
        return _day(today - timedelta(days=count), 1, match.group(0))
    days, slack = {"week": (7, 3), "month": (30, 10), "year": (365, 120)}[unit]
    centre = today - timedelta(days=count * days)
    return _day(centre - timedelta(days=slack), 2 * slack + 1, match.group(0))


def _month(year: int, month: int, phrase: str) -> TimeWindow:
    start = datetime(year, month, 1, tzinfo=timezone.utc)
    following = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=timezone.utc)
    return TimeWindow(start, following - timedelta(microseconds=1), phrase)


def _month_number(name: str) -> int:
    return [m[:3] for m in MONTHS].index(name[:3]) + 1


def _month_year(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    match = _MONTH_YEAR.search(text)
    if match is None or not 1900 <= int(match.group(2)) <= 2200:
        return None
    return _month(int(match.group(2)), _month_number(match.group(1)), match.group(0))


def _month_name(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    match = _LAST_MONTH_NAME.search(text)
    if match is None or match.group(2) == "may" and match.group(1) not in ("last", "in", "this"):
        return None
    month = _month_number(match.group(2))
    year = now.year
    if match.group(1) == "this":
        return _month(year, month, match.group(0))
    # "last May" is the latest May before this month; "in May" may be this one.
    if month > now.month or (month == now.month and match.group(1) == "last"):
        year -= 1
    return _month(year, month, match.group(0))


def _weekday(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    match = _LAST_WEEKDAY.search(text)
    if match is None:
        return None
    back = (today.weekday() - WEEKDAYS.index(match.group(2))) % 7 or 7
    return _day(today - timedelta(days=back), 1, match.group(0))


def _periods(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    monday = today - timedelta(days=today.weekday())
    first = today.replace(day=1)
    if "last weekend" in text:
        saturday = monday - timedelta(days=2)
        return _day(saturday, 2, "last weekend")
    if "this weekend" in text:
        return _day(monday + timedelta(days=5), 2, "this weekend")
    if "last week" in text:
        return _day(monday - timedelta(days=7), 7, "last week")
    if "this week" in text:
        return _day(monday, 7, "this week")
    if "last month" in text:
        previous = (first - timedelta(days=1)).replace(day=1)
        return _month(previous.year, previous.month, "last month")
    if "this month" in text:
        return _month(first.year, first.month, "this month")
    if "last year" in text:
        return TimeWindow(
            datetime(now.year - 1, 1, 1, tzinfo=timezone.utc),
            datetime(now.year, 1, 1, tzinfo=timezone.utc) - timedelta(microseconds=1),
            "last year",
        )
    if "this year" in text:
        return TimeWindow(
            datetime(now.year, 1, 1, tzinfo=timezone.utc),
            datetime(now.year + 1, 1, 1, tzinfo=timezone.utc) - timedelta(microseconds=1),
            "this year",
        )
    return None


def _year(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    match = _YEAR.search(text)
    if match is None or not 1900 <= int(match.group(1)) <= 2200:
        return None
    year = int(match.group(1))
    return TimeWindow(
        datetime(year, 1, 1, tzinfo=timezone.utc),
        datetime(year + 1, 1, 1, tzinfo=timezone.utc) - timedelta(microseconds=1),
        match.group(0),
    )
