"""Make deleted rows unrecoverable from the database's files, after forgetting.

A DELETE leaves the row's bytes in free pages (and in SQLite's write-ahead log, and in FTS5's
older segments) until something overwrites them. So after a forget: on SQLite every FTS5 index is
merged ('optimize'), the file is rebuilt by VACUUM (with `secure_delete` on, freed cells are zeroed
as well), and the WAL is checkpointed and truncated. On PostgreSQL the touched tables are rewritten
by VACUUM FULL (the old files are unlinked at the next checkpoint); the server's WAL archive,
replicas and backups are the operator's to expire, which the docs say.

VACUUM FULL copies a deleted row version into the new file while any transaction might still see
it. On PostgreSQL 15 that is (measured, tests/integration/test_forget.py): a snapshot taken in this
database before the forget committed (a REPEATABLE READ reader, a pg_dump), and a transaction id
assigned anywhere on the server before it (a writer in another database, a CREATE DATABASE, a
prepared transaction: the rewrite's own snapshot counts it as running), a replica's feedback or a
replication slot. A snapshot alone in another database does not count. So the PostgreSQL scrub
first waits, a bounded time, until no such transaction is left, then rewrites. If some still are,
it rewrites anyway (what no one holds goes), names them in its warnings and leaves a mark in
`meta` (`PENDING_KEY`): `memory-agent doctor` reports it and `--repair` scrubs again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol

from .dialect import by_engine
from .meta import delete_meta, read_meta, write_meta
from .passage_fts import optimize_all
from .protocol import Connection, Store

__all__ = [
    "FORGET_TABLES",
    "PENDING_KEY",
    "ScrubOutcome",
    "pending_since",
    "scrub",
    "secure_delete",
]

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

logger = logging.getLogger(__name__)

PENDING_KEY = "scrub_pending"
"""The `meta` key set (to the time, UTC) while a scrub could not finish."""

POLL_S = 0.1
"""How often the PostgreSQL scrub looks again for the transactions it waits for."""

LOCK_TIMEOUT_MS = 50
"""The lock wait of the tables rewritten after one waited in vain (and the least: 0 would mean no
limit at all)."""


@dataclass(frozen=True)
class ScrubOutcome:
    """What a scrub left: its warnings, and whether every deleted byte is gone from the files."""

    warnings: tuple[str, ...] = ()
    complete: bool = True
    """False: bytes of deleted rows may still be readable (the warnings say why and who holds
    them); scrubbing again once they are released finishes the job."""


def secure_delete(db: Store, on: bool) -> None:
    """SQLite's `secure_delete` for this connection: deleted content is overwritten with zeros."""
    with db.reading() as conn:
        _scrubber(conn).secure_delete(conn, on)


def scrub(db: Store, *, wait_s: float = 0.0) -> ScrubOutcome:
    """Rewrite the store's files so that nothing deleted stays readable.

    On PostgreSQL, waits up to `wait_s` for older transactions to end first (see the module's
    docstring). An incomplete scrub is marked (`pending_since`), a complete one clears the mark."""
    with db.reading() as conn:
        scrubber = _scrubber(conn)
    outcome = scrubber.scrub(db, wait_s)
    _mark(db, outcome.complete)
    return outcome


def pending_since(db: Store) -> str | None:
    """When a scrub that could not finish ran (UTC, ISO 8601), or None if none is pending."""
    with db.reading() as conn:
        return read_meta(conn, PENDING_KEY)


def _mark(db: Store, complete: bool) -> None:
    """One short write, only when the mark changes."""
    if complete and pending_since(db) is None:
        return
    with db.transaction() as conn:
        if complete:
            delete_meta(conn, PENDING_KEY)
        else:
            write_meta(conn, PENDING_KEY, datetime.now(timezone.utc).isoformat(timespec="seconds"))


class _Scrubber(Protocol):
    """How an engine makes deleted content unrecoverable (one implementation per engine)."""

    def secure_delete(self, conn: Connection, on: bool) -> None: ...

    def scrub(self, db: Store, wait_s: float) -> ScrubOutcome: ...


class _SqliteScrubber(_Scrubber):
    """FTS5 merged, the file rebuilt by VACUUM, the WAL checkpointed and truncated."""

    def secure_delete(self, conn: Connection, on: bool) -> None:
        conn.execute(f"PRAGMA secure_delete = {'ON' if on else 'OFF'}")

    def scrub(self, db: Store, wait_s: float) -> ScrubOutcome:
        with db.reading() as conn:
            optimize_all(conn)
            conn.execute("VACUUM")
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy and busy[0]:
            return ScrubOutcome(
                (
                    "memory.db's write-ahead log could not be truncated (another process is "
                    "reading); deleted pages stay in memory.db-wal until the next checkpoint, or "
                    "run 'memory-agent doctor --repair'",
                ),
                complete=False,
            )
        return ScrubOutcome()


_HOLDERS = """
SELECT 'session' AS kind, pid::text AS name, coalesce(application_name, '') AS application,
       coalesce(datname, '') AS database
FROM pg_stat_activity
WHERE pid <> pg_backend_pid()
  AND ((backend_xid IS NOT NULL AND age(backend_xid) > age(xid(?::xid8)))
       OR (backend_xmin IS NOT NULL AND age(backend_xmin) > age(xid(?::xid8))
           AND (datid IS NULL OR datname = current_database())))
UNION ALL
SELECT 'prepared transaction', gid, '', database
FROM pg_prepared_xacts
WHERE age(transaction) > age(xid(?::xid8))
UNION ALL
SELECT 'replication slot', slot_name, '', coalesce(database, '')
FROM pg_replication_slots
WHERE (xmin IS NOT NULL AND age(xmin) > age(xid(?::xid8)))
   OR (catalog_xmin IS NOT NULL AND age(catalog_xmin) > age(xid(?::xid8))
       AND (database IS NULL OR database = current_database()))
ORDER BY 1, 2
"""
"""What may still see rows deleted before transaction id `?` (xid8, all five the same): sessions
holding an older transaction id (any database) or an older snapshot (this database, or none: a
replica's feedback), prepared transactions, replication slots. `age()` compares ids modulo
wraparound (xid has no order of its own)."""


class _PostgresScrubber(_Scrubber):
    """The tables a forget touches rewritten by VACUUM FULL (and ANALYZE's samples of them), once
    no older transaction can see their deleted rows, or the wait is over."""

    def secure_delete(self, conn: Connection, on: bool) -> None:
        return None  # VACUUM FULL rewrites the tables instead

    def scrub(self, db: Store, wait_s: float) -> ScrubOutcome:
        with db.reading() as conn:
            since = str(
                conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()[0]
            )
        deadline = time.monotonic() + wait_s
        said: list[str] = []
        while True:
            with db.reading() as conn:
                holders = _holders(conn, since)
            left = deadline - time.monotonic()
            if not holders or left <= 0:
                break
            if holders != said:
                logger.info("Forget waits up to %.1f s for: %s", left, "; ".join(holders))
                said = holders
            time.sleep(min(POLL_S, left))
        with db.reading() as conn:
            unwritten, warnings = _rewrite(conn, lock_budget_s=max(wait_s, 1.0))
        if unwritten:
            warnings.insert(0, _locked_warning(unwritten))
        if holders:
            warnings.insert(0, _held_warning(holders, wait_s))
        return ScrubOutcome(tuple(warnings), complete=not holders and not unwritten)


def _holders(conn: Connection, since: str) -> list[str]:
    rows = conn.execute(_HOLDERS, (since,) * 5).fetchall()
    return [_describe(row[0], row[1], row[2], row[3]) for row in rows]


def _describe(kind: str, name: str, application: str, database: str) -> str:
    what = f"pid {name}" if kind == "session" else f"{kind} '{name}'"
    details = [f"application '{application}'"] if application else []
    details += [f"database '{database}'"] if database else []
    return f"{what} ({', '.join(details)})" if details else what


def _rewrite(conn: Connection, *, lock_budget_s: float) -> tuple[list[str], list[str]]:
    """VACUUM FULL each table, waiting for its lock no longer than the budget (and, once one table
    used it up, only briefly for the rest); the tables not rewritten and the warnings."""
    unwritten: list[str] = []
    warnings: list[str] = []
    conn.execute(f"SET lock_timeout = {max(int(lock_budget_s * 1000), LOCK_TIMEOUT_MS)}")
    try:
        # pg_statistic last: ANALYZE's samples of the old rows' column values
        for table in (*FORGET_TABLES, "pg_statistic"):
            options = "FULL" if table == "pg_statistic" else "FULL, ANALYZE"
            try:
                conn.execute(f"VACUUM ({options}) {table}")
            except Exception as error:  # noqa: BLE001 - one table's failure is reported, not raised
                if getattr(error, "sqlstate", None) == "55P03":  # lock_not_available
                    if not unwritten:
                        conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
                    unwritten.append(table)
                elif table == "pg_statistic":  # a role that may not vacuum the catalog
                    warnings.append(
                        f"pg_statistic was not rewritten ({str(error).splitlines()[0]}); its old "
                        "samples of column values stay until autovacuum reclaims them"
                    )
                else:
                    raise
    finally:
        conn.execute("RESET lock_timeout")
    return unwritten, warnings


def _held_warning(holders: list[str], wait_s: float) -> str:
    return (
        "bytes of what was forgotten may still be in PostgreSQL's table files: transactions "
        f"older than the forget were still open after waiting {wait_s:g} s, and the server keeps "
        f"the row versions they may read ({'; '.join(holders)}). End them (or wait until they "
        "end), then run 'memory-agent doctor --repair' to finish"
    )


def _locked_warning(tables: list[str]) -> str:
    return (
        f"bytes of what was forgotten may still be in PostgreSQL's table files: {', '.join(tables)}"
        " could not be rewritten (another transaction held a lock on it too long). Run "
        "'memory-agent doctor --repair' to finish"
    )


_SQLITE = _SqliteScrubber()
_POSTGRES = _PostgresScrubber()


def _scrubber(conn: Connection) -> _Scrubber:
    return by_engine(conn, sqlite=_SQLITE, postgresql=_POSTGRES)
