"""Helpers for hostile-input and broken-environment tests: a database fingerprint, so that a
refused call can be shown to have changed nothing, and the tests' hashing embedding."""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "archival"))

from archival_helpers import HashEmbedding

__all__ = ["HashEmbedding", "database_state"]


def database_state(path: Path) -> str:
    """A hash of every row of every table, read through a separate read-only connection."""
    digest = hashlib.sha256()
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        tables = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            digest.update(table.encode())
            for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid' if _has_rowid(conn, table)
                                    else f'SELECT * FROM "{table}"'):
                digest.update(repr(row).encode("utf-8", "backslashreplace"))
    finally:
        conn.close()
    return digest.hexdigest()


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    try:
        conn.execute(f'SELECT rowid FROM "{table}" LIMIT 0')
        return True
    except sqlite3.OperationalError:
        return False
