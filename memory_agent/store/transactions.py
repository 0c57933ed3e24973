"""The transaction skeleton both engines share, written once.

What every store does the same way: one lock serialises the threads of a process; a write
transaction begins, hands out the connection, and commits when the block ends or rolls back
and translates the error if it raises; a nested `transaction()` joins the outer one as a
savepoint (`store.savepoint`), so an inner block that raises undoes only its own writes; a
read hands out the connection under the lock and translates what fails. What differs (how to
begin, the write lock, how to commit, what a driver error means) is each engine's hooks.
"""

from __future__ import annotations

import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..errors import StorageError
from .savepoint import savepoint

__all__ = ["TransactionalStore"]

C = TypeVar("C")
"""The engine's connection type (it satisfies `store.protocol.Connection`)."""
_S = TypeVar("_S", bound="TransactionalStore[Any]")


class TransactionalStore(ABC, Generic[C]):
    """`transaction()`, `reading()`, `close()` and the context manager, over an engine's hooks.

    A subclass sets `path` and `dialect`, calls `__init__` here before opening its connection,
    and implements the hooks below."""

    path: Path
    dialect: str

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._writer: int | None = None  # the thread inside `transaction()`, if any
        self._closed = False
        self._readers = threading.local()  # each worker thread's own read connection
        self._reader_conns: list[C] = []

    # ----- the engine's hooks -------------------------------------------------------------

    @abstractmethod
    def _usable(self) -> C:
        """The connection to use now (an engine may reopen a dropped one, or refuse after close)."""

    @abstractmethod
    def _begin(self, conn: C) -> Any:
        """Begin a write transaction holding the write lock; returns what `_commit` needs.

        Raises the project's error (and leaves no transaction open) if it cannot begin."""

    @abstractmethod
    def _commit(self, conn: C, begun: Any) -> None:
        """Commit; on failure leave no transaction open and raise the project's error."""

    @abstractmethod
    def _rollback(self, conn: C) -> None:
        """Roll back whatever is open; never raises (the original error is what matters)."""

    @abstractmethod
    def _translated(self, error: BaseException) -> BaseException:
        """The project's error for a failure inside a block (`error` itself if not a driver's)."""

    @abstractmethod
    def _statement(self, conn: C) -> Callable[[str], object]:
        """How to run one untranslated statement on `conn` (savepoints)."""

    @abstractmethod
    def _close(self) -> None:
        """Close the connection (under the lock)."""

    @abstractmethod
    def _open_reader_connection(self) -> C:
        """A new read-only connection to the same store, for one worker thread."""

    @abstractmethod
    def _close_connection(self, conn: C) -> None:
        """Close a worker's read connection."""

    def _reader_usable(self, conn: C) -> bool:
        """Whether a worker's kept read connection can still be used (an engine may see it lost)."""
        return True

    def _name(self) -> str:
        """The store as messages name it."""
        return str(self.path)

    # ----- the skeleton -------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[C]:
        """One short write transaction; nested use joins the outer one (a savepoint).

        Commits when the block ends, rolls everything back if it raises.
        """
        with self._lock:
            conn = self._usable()
            if self._depth:
                self._depth += 1
                try:
                    with savepoint(self._statement(conn), self._depth - 1):
                        yield conn
                finally:
                    self._depth -= 1
                return
            begun = self._begin(conn)
            self._depth = 1
            self._writer = threading.get_ident()
            try:
                yield conn
            except BaseException as error:
                self._rollback(conn)
                raise self._translated(error) from error
            finally:
                self._depth = 0
                self._writer = None
            self._commit(conn, begun)

    @contextmanager
    def reading(self) -> Iterator[C]:
        """The connection for reads (autocommit: each statement sees the latest commit).

        A driver failure becomes the project's error (a StorageError naming the store)."""
        with self._lock:
            conn = self._usable()
            try:
                yield conn
            except BaseException as error:
                translated = self._translated(error)
                if translated is error:
                    raise
                raise translated from error

    def writing_here(self) -> bool:
        """Whether the calling thread is inside `transaction()` (its reads must then see its own
        uncommitted writes, so they use the main connection, never `parallel_reading`)."""
        return self._writer == threading.get_ident()

    @contextmanager
    def parallel_reading(self) -> Iterator[C]:
        """A read-only connection of the calling thread's own, opened on its first use.

        Reads through it run beside the main connection's and see the latest commit. Meant for a
        few long-lived worker threads (the two legs of a hybrid search): each keeps its connection
        until `close()` or until the thread ends. Inside this thread's own transaction, or after
        `close()`, the main connection is used instead (so the read sees that transaction's
        writes, or the closed store refuses as it always does)."""
        if self._closed or self.writing_here():
            with self.reading() as main:
                yield main
            return
        own: C | None = getattr(self._readers, "conn", None)
        if own is None or not self._reader_usable(own):
            own = self._open_reader()
        try:
            yield own
        except BaseException as error:
            translated = self._translated(error)
            if translated is error:
                raise
            raise translated from error

    def _open_reader(self) -> C:
        conn = self._open_reader_connection()
        with self._lock:
            if self._closed:
                self._close_connection(conn)
                raise StorageError(f"{self._name()} was closed; open it again to read it.")
            self._reader_conns.append(conn)
        self._readers.conn = conn
        # A thread that ends (a closed archive's pool) takes its connection with it.
        weakref.finalize(threading.current_thread(), self._drop_reader, conn)
        return conn

    def _drop_reader(self, conn: C) -> None:
        with self._lock:
            if conn in self._reader_conns:
                self._reader_conns.remove(conn)
        self._close_connection(conn)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for reader in self._reader_conns:
                self._close_connection(reader)
            self._reader_conns.clear()
            self._close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
