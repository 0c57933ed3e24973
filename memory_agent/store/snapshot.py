"""Every row of every table of a store, on SQLite or PostgreSQL: what "nothing changed" means.

A refused call must leave the store exactly as it was. Comparing the SQLite file's bytes would
prove that on one backend only (and flag harmless page reuse), so the proof is made through the
store's own `reading()` connection, the same way on both: the tables the database lists (SQLite's
FTS5 shadow tables included; PostgreSQL's generated tsvector columns included), each table's rows
sorted, so two snapshots are equal exactly when the stored data is.

What it does not see, on purpose: PostgreSQL sequences (a rolled-back insert still advances an
identity, as PostgreSQL documents; no row changes) and SQLite's free pages.

Take snapshots through a store opened separately from the one under test (`open_store` on the
same storage dir and URL), so a transaction the code under test leaves open cannot hide from it.
"""

from __future__ import annotations

from typing import Any, Protocol

from .dialect import by_engine
from .protocol import Connection

__all__ = ["Readable", "Snapshot", "store_snapshot", "table_names"]

Snapshot = dict[str, list[tuple[Any, ...]]]


class Readable(Protocol):
    """Anything with the store's `reading()` context manager (`Database`, `PostgresDatabase`)."""

    def reading(self) -> Any: ...


_SQLITE_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
_POSTGRES_TABLES = (
    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    " AND table_type = 'BASE TABLE' ORDER BY table_name"
)


def table_names(conn: Connection) -> list[str]:
    """The store's tables, by name, on either backend (each engine's catalog query)."""
    sql = by_engine(conn, sqlite=_SQLITE_TABLES, postgresql=_POSTGRES_TABLES)
    return [str(row[0]) for row in conn.execute(sql)]


def store_snapshot(db: Readable) -> Snapshot:
    """Each table's rows as tuples, sorted (by their repr: columns may mix None, numbers and
    text)."""
    with db.reading() as conn:
        return {
            table: sorted(
                (tuple(row) for row in conn.execute(f'SELECT * FROM "{table}"')), key=repr
            )
            for table in table_names(conn)
        }
