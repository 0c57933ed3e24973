"""Stores as an older release left them: the first `version` shipped migrations and the version
mark, for tests of what a later migration does to rows written before it. The caller opens the
connection (and, on SQLite, the transaction), adds its old rows, and commits."""

from __future__ import annotations

import sqlite3
from typing import Any

from memory_agent.store.migrations import MIGRATIONS
from memory_agent.store.pg_schema import PG_MIGRATIONS, VERSION_TABLE


def sqlite_schema_at(conn: sqlite3.Connection, version: int) -> None:
    """The first `version` SQLite migrations, and `user_version` saying so."""
    for migration in MIGRATIONS[:version]:
        migration(conn)
    conn.execute(f"PRAGMA user_version = {version}")


def postgres_schema_at(conn: Any, version: int) -> None:
    """The first `version` PostgreSQL migrations on a psycopg connection to an empty database,
    and the version table saying so."""
    conn.execute(f"CREATE TABLE {VERSION_TABLE} (version INTEGER NOT NULL)")
    for migration in PG_MIGRATIONS[:version]:
        with conn.cursor() as cursor:
            migration(cursor)
    conn.execute(f"INSERT INTO {VERSION_TABLE} (version) VALUES (%s)", (version,))
