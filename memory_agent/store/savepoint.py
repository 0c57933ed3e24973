"""A nested write as a savepoint, for both backends: nested `transaction()` blocks join the outer
transaction, and one that raises undoes only its own writes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["savepoint"]


@contextmanager
def savepoint(execute: Callable[[str], object], depth: int) -> Iterator[None]:
    """Run the block inside savepoint `sp{depth}`; roll back to it and re-raise if the block fails.

    `execute` runs one statement on the connection that holds the outer transaction. The
    statements are the SQL standard's, which SQLite and PostgreSQL both accept.
    """
    name = f"sp{depth}"
    execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        execute(f"ROLLBACK TO SAVEPOINT {name}")
        execute(f"RELEASE SAVEPOINT {name}")
        raise
    execute(f"RELEASE SAVEPOINT {name}")
