"""The storage protocol: what every writer and reader may call on a store and its connection.

Two engines hold memory (SQLite in the storage dir, `store.database.Database`; a PostgreSQL
server, `store.postgres.PostgresDatabase`). Code above `store/` is written against these
Protocols only, never against either class or `sqlite3.Connection`, so mypy proves that both
engines offer everything the writers use, and a third engine is a class that satisfies them
(docs/storage-protocol.md says how to add one).

The shapes are what the code actually calls, no more: a store opens short write transactions
and reads; a connection runs statements written in SQLite's SQL with `?` placeholders (the
PostgreSQL connection translates the few that differ, `store.dialect`); a cursor is read once.
Rows are read by column name or position.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["Connection", "Cursor", "Row", "Store"]


class Row(Protocol):
    """One result row: `row["column"]` or `row[0]` (`sqlite3.Row`, `postgres.PgRow`)."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    """The result of one statement: its rows (fetched or iterated) and what it changed."""

    @property
    def rowcount(self) -> int:
        """Rows an INSERT, UPDATE or DELETE changed (-1 for a SELECT)."""
        ...

    @property
    def lastrowid(self) -> int | None:
        """The generated key of the row an INSERT added (see `store.dialect.GENERATED_KEYS`)."""
        ...

    def fetchone(self) -> Any:
        """The next `Row`, or None when there is none."""
        ...

    def fetchall(self) -> list[Any]:
        """The remaining `Row`s."""
        ...

    def __iter__(self) -> Iterator[Any]: ...


@runtime_checkable
class Connection(Protocol):
    """What a writer or reader is handed inside `Store.transaction()` or `Store.reading()`.

    Statements are SQLite's SQL with `?` placeholders; parameters are a sequence (positional
    only: the engines name them differently)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...


@runtime_checkable
class Store(Protocol):
    """One storage dir's database, on whichever engine `store.backend.open_store` chose.

    `transaction()` is one short write transaction (commits when the block ends, rolls back if
    it raises; nested use is a savepoint, so an inner block that raises undoes only itself).
    `reading()` is the connection for reads, each statement seeing the latest commit. Both
    serialise the threads of one process and turn engine failures into `StorageError` or
    `ConfigurationError`. `dialect` names the engine ("sqlite" or "postgresql"): only `store/`
    looks at it (`store.dialect.by_engine`)."""

    @property
    def path(self) -> Path:
        """The database file (on PostgreSQL, a nominal path inside the storage dir)."""
        ...

    @property
    def dialect(self) -> str: ...

    def transaction(self) -> AbstractContextManager[Connection]: ...

    def reading(self) -> AbstractContextManager[Connection]: ...

    def parallel_reading(self) -> AbstractContextManager[Connection]:
        """A read-only connection of the calling thread's own (worker threads reading beside the
        main connection); the main one inside this thread's own transaction."""
        ...

    def writing_here(self) -> bool:
        """Whether the calling thread is inside `transaction()`."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Store: ...

    def __exit__(self, *exc: object) -> None: ...
