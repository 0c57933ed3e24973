"""Our copies of SQLite's result codes equal the ones `sqlite3` exposes (Python 3.11 and later)."""

from __future__ import annotations

import sqlite3

import pytest

from memory_agent.store import sqlite_codes


@pytest.mark.skipif(
    not hasattr(sqlite3, "SQLITE_FULL"), reason="sqlite3 names these codes from Python 3.11"
)
def test_codes_match_the_sqlite3_module() -> None:
    for name in sqlite_codes.__all__:
        assert getattr(sqlite_codes, name) == getattr(sqlite3, name), name
