"""One SQLite database per storage dir, shared by every agent and process that opens it.

Why these choices: WAL lets readers run while one process writes; `busy_timeout` makes a writer
wait for the lock instead of failing at once; every write is one short `BEGIN IMMEDIATE`
transaction (taking the write lock up front, so two read-modify-write edits can never interleave
and lose an update), retried a bounded number of times if the lock stays busy past the timeout.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from ..errors import StorageError
from .migrations import migrate

__all__ = ["DATABASE_FILENAME", "Database", "utc_now"]

DATABASE_FILENAME = "memory.db"
"""The database file inside a storage dir."""

BUSY_TIMEOUT_MS = 10_000
BUSY_RETRY_ATTEMPTS = 8


def utc_now() -> str:
    """A sortable ISO-8601 UTC timestamp with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _is_busy(error: BaseException) -> bool:
    return isinstance(error, sqlite3.OperationalError) and (
        "locked" in str(error) or "busy" in str(error)
    )


class Database:
    """A connection to memory.db with the pragmas, migrations and the write-transaction helper.

    One instance holds one connection; it is safe to share between threads of one process
    (calls are serialised by a lock). Open one instance per process.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
            )
        except (OSError, sqlite3.Error) as error:
            raise StorageError(
                f"Cannot open the database at {self.path}: {error}. "
                "Check that the storage dir exists and is writable."
            ) from error
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._depth = 0
        self._apply_pragmas()
        with self._lock:
            migrate(self._conn, self._begin_immediate)

    def _apply_pragmas(self) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StorageError(f"Could not switch {self.path} to WAL mode (got {mode}).")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")

    def _begin_immediate(self) -> None:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as error:
            if not _is_busy(error):
                raise
        # The lock stayed busy past busy_timeout: retry a bounded number of times with jitter.
        for attempt in Retrying(
            retry=retry_if_exception(_is_busy),
            stop=stop_after_attempt(BUSY_RETRY_ATTEMPTS),
            wait=wait_random_exponential(multiplier=0.01, max=0.5),
            reraise=True,
        ):
            with attempt:
                self._conn.execute("BEGIN IMMEDIATE")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction; nested use joins the outer one (a savepoint).

        Commits when the block ends, rolls everything back if it raises.
        """
        with self._lock:
            if self._depth:
                name = f"sp{self._depth}"
                self._conn.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield self._conn
                except BaseException:
                    self._conn.execute(f"ROLLBACK TO {name}")
                    self._conn.execute(f"RELEASE {name}")
                    raise
                else:
                    self._conn.execute(f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            try:
                self._begin_immediate()
            except sqlite3.Error as error:
                raise StorageError(
                    f"The database {self.path} stayed locked: {error}. "
                    "Another process holds a long write; try again."
                ) from error
            self._depth = 1
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._depth = 0

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection for reads (autocommit: each statement sees the latest commit)."""
        with self._lock:
            yield self._conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
