"""The `meta` table: small key/value settings of a storage dir (e.g. its default agent).

The one reader and writer of the table, so its SQL lives in one place.
"""

from __future__ import annotations

from .protocol import Connection

__all__ = ["delete_meta", "read_meta", "write_meta"]


def read_meta(conn: Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def write_meta(conn: Connection, key: str, value: str) -> None:
    """Set `key` to `value`, replacing any value it had."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
        "excluded.value",
        (key, value),
    )


def delete_meta(conn: Connection, key: str) -> None:
    """Remove `key` (nothing happens if it is not set)."""
    conn.execute("DELETE FROM meta WHERE key = ?", (key,))
