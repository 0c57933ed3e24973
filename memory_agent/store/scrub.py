"""Make deleted rows unrecoverable from the database's files, after forgetting.

A DELETE leaves the row's bytes in free pages (and in SQLite's write-ahead log, and in FTS5's
older segments) until something overwrites them. So after a forget: on SQLite every FTS5 index is
merged ('optimize'), the file is rebuilt by VACUUM (with `secure_delete` on, freed cells are zeroed
as well), and the WAL is checkpointed and truncated. On PostgreSQL the touched tables are rewritten
by VACUUM FULL (the old files are unlinked at the next checkpoint); the server's WAL archive,
replicas and backups are the operator's to expire, which the docs say.
"""

from __future__ import annotations

from typing import Protocol

from .dialect import by_engine
from .passage_fts import optimize_all
from .protocol import Connection, Store

__all__ = ["FORGET_TABLES", "scrub", "secure_delete"]

FORGET_TABLES = (
    "journal",
    "passages",
    "passage_tags",
    "messages",
    "summaries",
    "blocks",
    "block_history",
    "agent_blocks",
    "agents",
    "session_entries",
    "session_summaries",
    "session_transcripts",
    "consolidation_sessions",
    "meta",
)
"""The tables a forget can touch (rewritten on PostgreSQL)."""


def secure_delete(db: Store, on: bool) -> None:
    """SQLite's `secure_delete` for this connection: deleted content is overwritten with zeros."""
    with db.reading() as conn:
        _scrubber(conn).secure_delete(conn, on)


def scrub(db: Store) -> list[str]:
    """Rewrite the store's files so that nothing deleted stays readable; returns warnings."""
    with db.reading() as conn:
        return _scrubber(conn).scrub(conn)


class _Scrubber(Protocol):
    """How an engine makes deleted content unrecoverable (one implementation per engine)."""

    def secure_delete(self, conn: Connection, on: bool) -> None: ...

    def scrub(self, conn: Connection) -> list[str]: ...


class _SqliteScrubber(_Scrubber):
    """FTS5 merged, the file rebuilt by VACUUM, the WAL checkpointed and truncated."""

    def secure_delete(self, conn: Connection, on: bool) -> None:
        conn.execute(f"PRAGMA secure_delete = {'ON' if on else 'OFF'}")

    def scrub(self, conn: Connection) -> list[str]:
        warnings: list[str] = []
        optimize_all(conn)
        conn.execute("VACUUM")
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy and busy[0]:
            warnings.append(
                "memory.db's write-ahead log could not be truncated (another process is reading); "
                "deleted pages stay in memory.db-wal until the next checkpoint"
            )
        return warnings


class _PostgresScrubber(_Scrubber):
    """The tables a forget touches rewritten by VACUUM FULL (and ANALYZE's samples of them)."""

    def secure_delete(self, conn: Connection, on: bool) -> None:
        return None  # VACUUM FULL rewrites the tables instead

    def scrub(self, conn: Connection) -> list[str]:
        warnings: list[str] = []
        for table in FORGET_TABLES:
            conn.execute(f"VACUUM (FULL, ANALYZE) {table}")
        try:
            conn.execute("VACUUM FULL pg_statistic")  # ANALYZE's samples of the old rows
        except Exception as error:  # noqa: BLE001 - a role that may not vacuum the catalog
            warnings.append(
                f"pg_statistic was not rewritten ({str(error).splitlines()[0]}); its old "
                "samples of column values stay until autovacuum reclaims them"
            )
        return warnings


_SQLITE = _SqliteScrubber()
_POSTGRES = _PostgresScrubber()


def _scrubber(conn: Connection) -> _Scrubber:
    return by_engine(conn, sqlite=_SQLITE, postgresql=_POSTGRES)
