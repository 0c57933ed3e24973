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
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

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
            try:
                yield conn
            except BaseException as error:
                self._rollback(conn)
                raise self._translated(error) from error
            finally:
                self._depth = 0
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

    def close(self) -> None:
        with self._lock:
            self._close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
