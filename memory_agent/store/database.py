"""One SQLite database per storage dir, shared by every agent and process that opens it.

Why these choices: WAL lets readers run while one process writes; `busy_timeout` makes a writer
wait for the lock instead of failing at once; every write is one short `BEGIN IMMEDIATE`
transaction (taking the write lock up front, so two read-modify-write edits can never interleave
and lose an update), retried a bounded number of times if the lock stays busy past the timeout.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from ..errors import ConfigurationError, StorageError
from ..privacy.encryption_key import EncryptionKey
from ..privacy.file_modes import private_dir, private_file
from ..validation import check_path
from . import cipher
from .migrations import migrate
from .new_store_image import place_new_store
from .sqlite_codes import (
    SQLITE_CANTOPEN,
    SQLITE_CORRUPT,
    SQLITE_FULL,
    SQLITE_IOERR,
    SQLITE_NOTADB,
    SQLITE_READONLY,
)
from .transactions import TransactionalStore

__all__ = [
    "DATABASE_FILENAME",
    "VECTORS_DIRNAME",
    "Database",
    "check_not_orphaned",
    "is_damage",
    "storage_error",
    "utc_now",
]

DATABASE_FILENAME = "memory.db"
"""The database file inside a storage dir."""
VECTORS_DIRNAME = "chroma"
"""The embedded vector store's directory beside the database (derived data: SQLite is the truth)."""

BUSY_TIMEOUT_MS = 10_000
BUSY_RETRY_ATTEMPTS = 8


def utc_now() -> str:
    """A sortable ISO-8601 UTC timestamp with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def storage_error(path: Path, error: sqlite3.Error) -> StorageError:
    """One clear StorageError for a SQLite failure: what is wrong with which file, what to do."""
    text = str(error)
    code = getattr(error, "sqlite_errorcode", None)
    if code == SQLITE_FULL or "disk is full" in text:
        message = (
            f"The disk holding {path} is full (disk full); nothing was written. Free some space "
            "and try again: memory-agent recovers by itself once there is room."
        )
    elif code == SQLITE_READONLY or "readonly" in text:
        message = (
            f"{path} is read-only ({text}); nothing was written. Make the file, its -wal and -shm "
            "files and the storage dir writable by this user."
        )
    elif is_damage(error):
        message = (
            f"{path} is damaged or is not a memory-agent database ({text}). Nothing was changed. "
            "Run 'memory-agent doctor' for a report; restore the file from a backup or an export, "
            "or move it aside to start an empty store."
        )
    elif (code == SQLITE_CANTOPEN or "unable to open" in text) and not _writable(path.parent):
        message = (
            f"Cannot open {path} ({text}): its directory is read-only (a read-only file system, "
            "or no write permission). SQLite needs to write beside the database even to read it "
            "in WAL mode; make the storage dir writable by this user."
        )
    elif code == SQLITE_CANTOPEN or "unable to open" in text:
        message = f"Cannot open {path} ({text}). Check that the storage dir exists and is writable."
    elif code == SQLITE_IOERR or "disk I/O error" in text:
        message = (
            f"Reading or writing {path} failed ({text}); nothing was written. Check the disk "
            "and the file system, then run 'memory-agent doctor'."
        )
    else:
        message = (
            f"The database {path} refused the operation ({type(error).__name__}: {text}); "
            "nothing was written."
        )
    storage = StorageError(message)
    storage.path = path  # type: ignore[attr-defined]  # for callers that report the file
    return storage


def _writable(directory: Path) -> bool:
    return not directory.exists() or os.access(directory, os.W_OK)


def is_damage(error: sqlite3.Error) -> bool:
    """Whether SQLite says the file itself is corrupt or not a database (not merely unusable)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code in (SQLITE_NOTADB, SQLITE_CORRUPT) or any(
        phrase in str(error) for phrase in ("malformed", "not a database")
    )


def _translated(path: Path, error: BaseException) -> BaseException:
    """Our error for a failure inside a transaction or read: SQLite's become StorageErrors, text
    SQLite could not encode (a lone surrogate that slipped past the checks) a ConfigurationError."""
    if isinstance(error, (sqlite3.ProgrammingError, sqlite3.InterfaceError)):
        if "binding parameter" in str(error) or "unsupported type" in str(error):
            return ConfigurationError(
                f"A value sent to {path} has a type SQLite cannot store ({error}); "
                "nothing was written."
            )
        return error  # misuse of the connection (e.g. used after close): a defect to see as it is
    if isinstance(error, sqlite3.Error):
        return storage_error(path, error)
    if isinstance(error, UnicodeEncodeError):
        return ConfigurationError(
            f"Text sent to {path} is not valid Unicode ({error.reason}); nothing "
            "was written. Send valid UTF-8 text."
        )
    if isinstance(error, OverflowError):
        return ConfigurationError(
            f"A number sent to {path} is too large ({error}); SQLite holds whole "
            f"numbers up to {2**63 - 1}. Nothing was written."
        )
    return error


def check_not_orphaned(path: Path) -> None:
    """Refuse to start a new database where one is missing or empty beside existing vectors.

    A missing or 0-byte memory.db next to a non-empty vector directory means the database was
    lost or truncated, not that this is a new store: starting afresh would orphan (and the next
    reconcile delete) every vector. SQLite itself treats a 0-byte file as an empty database,
    which stays right for a storage dir without vectors (a process that died before its first
    write, or two processes creating the store at once).
    """
    vectors = path.parent / VECTORS_DIRNAME
    empty = not path.exists() or (path.is_file() and path.stat().st_size == 0)
    if empty and vectors.is_dir() and any(vectors.iterdir()):
        state = "missing" if not path.exists() else "empty (0 bytes)"
        raise StorageError(
            f"{path} is {state}, but {vectors} holds archival vectors: this is a storage dir that "
            "lost "
            "its database, not a new one, so nothing was created. Restore memory.db from a backup "
            "or "
            "an export; or run 'memory-agent doctor --repair' to start an empty database and move "
            f"the vectors aside to a backup."
        )


def _is_busy(error: BaseException) -> bool:
    return isinstance(error, sqlite3.OperationalError) and (
        "locked" in str(error) or "busy" in str(error)
    )


class Database(TransactionalStore[sqlite3.Connection]):
    """A connection to memory.db with the pragmas, migrations and the write-transaction helper.

    One instance holds one connection; it is safe to share between threads of one process
    (calls are serialised by a lock). Open one instance per process. Worker threads that must read
    beside it (the two legs of a hybrid search) take `parallel_reading`, a read-only connection of
    their own.
    """

    dialect = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        allow_orphaned: bool = False,
        encryption_key: EncryptionKey | None = None,
    ) -> None:
        super().__init__()
        self.path = check_path("The database path", path)
        cipher.verify_key(
            self.path, encryption_key
        )  # before anything is created: a mismatch changes nothing
        try:
            private_dir(self.path.parent)
        except OSError as error:
            raise StorageError(
                f"Cannot create the storage dir {self.path.parent}: {error.strerror or error}. "
                "Check that its parent exists and is writable."
            ) from error
        if not allow_orphaned:
            check_not_orphaned(self.path)
        if encryption_key is None:
            place_new_store(self.path)  # a new store starts at the current schema, not migrated
        try:
            private_file(
                self.path
            )  # 0600 before SQLite creates it (its -wal and -shm take its mode)
        except OSError:
            # SQLite's own open names the problem (a directory in its place, no permission, ...)
            pass
        try:
            if encryption_key is not None:
                self._conn = cipher.connect(
                    self.path, encryption_key, timeout=BUSY_TIMEOUT_MS / 1000
                )
            else:
                self._conn = sqlite3.connect(
                    self.path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=BUSY_TIMEOUT_MS / 1000,
                )
        except sqlite3.Error as error:
            raise storage_error(self.path, error) from error
        self._conn.row_factory = sqlite3.Row
        self._encryption_key = encryption_key
        self._stat_path = os.path.abspath(self.path)
        try:
            self._apply_pragmas()
            with self._lock:
                migrate(self._conn, self._begin_immediate, self.path)
            self._identity = self._file_identity()
        except sqlite3.Error as error:
            self._conn.close()
            raise storage_error(self.path, error) from error
        except BaseException:
            self._conn.close()
            raise

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

    # ----- the hooks of the shared transaction skeleton (store.transactions) ----------------

    def _usable(self) -> sqlite3.Connection:
        return self._conn

    def _statement(self, conn: sqlite3.Connection) -> Callable[[str], object]:
        return conn.execute

    def _begin(self, conn: sqlite3.Connection) -> None:
        """BEGIN IMMEDIATE: SQLite's write lock, taken up front (see the module's docstring)."""
        try:
            self._begin_immediate()
        except sqlite3.Error as error:
            if not _is_busy(error):
                raise storage_error(self.path, error) from error
            raise StorageError(
                f"The database {self.path} stayed locked: {error}. "
                "Another process holds a long write; try again."
            ) from error

    def _commit(self, conn: sqlite3.Connection, begun: object) -> None:
        """COMMIT, unless the file is no longer the storage dir's memory.db (`_check_identity`)."""
        try:
            self._check_identity()
            conn.execute("COMMIT")
        except BaseException as error:
            self._rollback(conn)
            raise _translated(self.path, error) from error

    def _translated(self, error: BaseException) -> BaseException:
        return _translated(self.path, error)

    def _close(self) -> None:
        self._conn.close()

    def _file_identity(self) -> tuple[int, int] | None:
        """The file's device and inode (None if it cannot be seen: then the first write says
        why)."""
        try:
            found = os.stat(self._stat_path)
        except OSError:
            return None
        return found.st_dev, found.st_ino

    def _check_identity(self) -> None:
        """Refuse to COMMIT into a file that is no longer the storage dir's memory.db.

        SQLite keeps writing to the file it opened: if the storage dir was removed, or memory.db
        moved or replaced, under a running process, every write would succeed into a file nobody
        will read again. One stat() per write transaction (a few microseconds, see
        bench/block_edit_bench.py) makes such a write fail instead of being acknowledged."""
        now = self._file_identity()
        if now is not None and now == self._identity:
            return
        happened = (
            "is gone (the file or the storage dir was removed)"
            if now is None
            else "was replaced by another file"
        )
        raise StorageError(
            f"{self.path} {happened} while this process had it open; nothing was written. Restore "
            "the "
            "storage dir (or put the right memory.db back) and open it again: writes to the old "
            "file "
            "would be lost."
        )

    def _rollback(self, conn: sqlite3.Connection) -> None:
        """Roll back if a transaction is open (a failed COMMIT, e.g. disk full, may leave one)."""
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite already rolled back on its own; the original error is what matters

    def _open_reader_connection(self) -> sqlite3.Connection:
        """A `mode=ro` connection to the same file (TEMP tables, which keyword search's pruning
        uses, still work on it)."""
        uri = self.path.absolute().as_uri() + "?mode=ro"
        timeout = BUSY_TIMEOUT_MS / 1000
        try:
            if self._encryption_key is not None:
                conn = cipher.connect(uri, self._encryption_key, timeout=timeout, uri=True)
            else:
                conn = sqlite3.connect(
                    uri, isolation_level=None, check_same_thread=False, timeout=timeout, uri=True
                )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        except sqlite3.Error as error:
            raise storage_error(self.path, error) from error
        return conn

    def _close_connection(self, conn: sqlite3.Connection) -> None:
        conn.close()
