"""The store on a PostgreSQL server, for agents on many hosts sharing one memory.

`PostgresDatabase` is a `store.protocol.Store` (`transaction()`, `reading()`, `close()`, on the
skeleton in `store.transactions` that SQLite's `Database` shares), and hands the writers a
`store.protocol.Connection` (`execute` with `?` placeholders, rows readable by name and position,
`rowcount`, `lastrowid`), so every writer and reader of the store is written once (see
`store.dialect` for the translation).

Why one advisory lock per write transaction: the writers were written for SQLite, where
`BEGIN IMMEDIATE` serialises writers, so a read-modify-write (an append reads the block's value,
checks the limit, writes the new value and its history version) can never interleave with
another and lose an update. `pg_advisory_xact_lock` on one key gives PostgreSQL's writers exactly
that guarantee, across hosts, released by COMMIT or ROLLBACK (or by the server when a client
dies), with no retry loop and no writer-by-writer audit of which rows to lock. Readers are never
blocked (MVCC). Writes stay short transactions, so the cost is that writes are serial, as they
are on SQLite; measured in bench/backends_bench.py.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, StorageError, WriteOutcomeUnknownError
from ..privacy.redaction import redact_url
from .dialect import translate
from .pg_errors import Target, connect_error, server_condition
from .pg_schema import PG_MIGRATIONS, PG_SCHEMA_VERSION, VERSION_TABLE
from .transactions import TransactionalStore

__all__ = ["WRITE_LOCK_KEY", "PostgresConnection", "PostgresDatabase", "is_postgres_url"]

logger = logging.getLogger(__name__)

BEGIN_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"
"""Explicit, whatever the server's default: only under READ COMMITTED does the statement after
the advisory lock see what the previous holder committed (a REPEATABLE READ or SERIALIZABLE
snapshot is taken before the lock is granted, and concurrent writers then fail to serialise)."""

WRITE_LOCK_KEY = 0x6D656D6F7279  # "memory": the advisory lock every write transaction holds
MIGRATION_LOCK_KEY = WRITE_LOCK_KEY + 1
CONNECT_TIMEOUT_S = 10
COMMIT_SETTLE_S = 5.0
"""How long to wait for the server to finish a COMMIT whose answer was lost with the connection."""


def is_postgres_url(url: str | None) -> bool:
    """Whether the URL names a PostgreSQL server (by its scheme alone: a URL that is not valid,
    an IPv6 host missing its bracket say, is the driver's to refuse, in words that name it)."""
    scheme = str(url or "").strip().partition("://")
    return bool(scheme[1]) and scheme[0].lower() in ("postgresql", "postgres")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ConfigurationError(
            "MEMORY_DATABASE_URL names a PostgreSQL server, but psycopg is not installed. "
            "Install the extra: pip install 'memory-agent[postgres]'."
        ) from error
    return psycopg


class PgRow:
    """One result row, readable by column name and by position, like `sqlite3.Row`."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: dict[str, int], values: Sequence[Any]) -> None:
        self._names = names
        self._values = tuple(values)

    def __getitem__(self, key: int | str | slice) -> Any:
        if isinstance(key, str):
            return self._values[self._names[key]]
        return self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"PgRow({dict(zip(self._names, self._values))!r})"


def _row_factory(cursor: Any) -> Any:
    description = cursor.description or ()
    names = {column.name: index for index, column in enumerate(description)}

    def make(values: Sequence[Any]) -> PgRow:
        return PgRow(names, values)

    return make


def _params(params: Sequence[Any]) -> tuple[Any, ...]:
    """SQLite stores bools as 0/1 and the schema keeps flags as integers: send them as such."""
    return tuple(int(value) if isinstance(value, bool) else value for value in params)


class PgCursor:
    """The result of one statement: `fetchone`, `fetchall`, iteration, `rowcount`, `lastrowid`."""

    def __init__(self, cursor: Any, returning: str | None) -> None:
        self._cursor = cursor
        self.rowcount: int = cursor.rowcount
        self.lastrowid: int | None = None
        if returning is not None:
            row = cursor.fetchone()
            self.lastrowid = None if row is None else int(row[0])

    def _has_rows(self) -> bool:
        return self._cursor.description is not None

    def fetchone(self) -> PgRow | None:
        return self._cursor.fetchone() if self._has_rows() else None

    def fetchall(self) -> list[PgRow]:
        return self._cursor.fetchall() if self._has_rows() else []

    def __iter__(self) -> Iterator[PgRow]:
        return iter(self.fetchall())


_REPEATABLE = re.compile(r"^\s*(SELECT|BEGIN)\b", re.IGNORECASE)


class PostgresConnection:
    """What the writers call `conn`: `sqlite3.Connection`'s calls, on a psycopg connection.

    A connection the server dropped while it sat idle (a restart, an idle timeout, a proxy) is
    noticed only when the next statement fails. If that statement is a read or a BEGIN sent
    outside any transaction, nothing can have happened twice, so it is sent again on a new
    connection (`reconnect`); anything else fails with the error and the caller decides.
    """

    dialect = "postgresql"

    def __init__(self, raw: Any, reconnect: Callable[[], Any] | None = None) -> None:
        self.raw = raw
        self._reconnect = reconnect

    @property
    def lost(self) -> bool:
        return bool(self.raw.broken or self.raw.closed)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> PgCursor:
        text, returning = translate(sql)
        return PgCursor(self._run(text, _params(params)), returning)

    def _run(self, text: str, params: Sequence[Any]) -> Any:
        psycopg = _psycopg()
        idle = self.raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        try:
            return self.raw.execute(text, params)
        except psycopg.OperationalError:
            if not (idle and self.lost and self._reconnect is not None and _REPEATABLE.match(text)):
                raise
            logger.info("The connection was lost while idle; reconnecting to repeat a read")
        self.raw = self._reconnect()
        return self.raw.execute(text, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        text, _ = translate(sql)
        cursor = self.raw.cursor()
        cursor.executemany(text, [_params(row) for row in rows])
        return PgCursor(cursor, None)


class PostgresDatabase(TransactionalStore[PostgresConnection]):
    """The `Store` on a PostgreSQL server: the same calls as `Database`, one connection per
    instance.

    `path` is the storage dir's nominal database path: PostgreSQL holds the data, and the storage
    dir beside it holds only local derived data (the embedded vector store, if no Chroma server).
    """

    dialect = "postgresql"

    def __init__(self, url: str, storage_dir: Path, *, create: bool = True) -> None:
        super().__init__()
        self.url = url
        self.display = redact_url(url)
        self.path = Path(storage_dir) / "postgresql"
        self.target = Target(url)
        self._conn = PostgresConnection(self._connect(), self._connect)
        try:
            if not create and not self._has_schema():
                raise StorageError(
                    f"No memory-agent storage in the database at {self.display} yet. Run "
                    "'memory-agent init' "
                    "first, or point MEMORY_DATABASE_URL (--database-url) at the database that "
                    "holds it."
                )
            self._migrate()
        except BaseException:
            self._conn.raw.close()
            raise

    def __repr__(self) -> str:
        return f"PostgresDatabase({self.display!r})"

    # ----- connection --------------------------------------------------------------------

    def _connect(self) -> Any:
        psycopg = _psycopg()
        try:
            return psycopg.connect(
                self.url,
                autocommit=True,
                row_factory=_row_factory,
                connect_timeout=CONNECT_TIMEOUT_S,
            )
        except psycopg.Error as error:
            raise connect_error(self.url, self.target, error) from None

    def _connect_read_only(self) -> Any:
        raw = self._connect()
        raw.execute("SET default_transaction_read_only = on")
        return raw

    def _usable(self) -> PostgresConnection:
        """The connection, reopened if the server dropped it (a restart, a network cut); never after
        `close()`, which would leave a connection nobody closes (SQLite refuses that use too)."""
        if self._closed:
            raise StorageError(f"The store at {self.display} was closed; open it again to use it.")
        if self._conn.raw.broken or self._conn.raw.closed:
            if self._depth:
                raise StorageError(
                    f"The connection to {self.display} was lost inside a transaction; "
                    "nothing of it was written. Try again."
                )
            self._conn = PostgresConnection(self._connect(), self._connect)
        return self._conn

    def _has_schema(self) -> bool:
        row = self._conn.raw.execute("SELECT to_regclass(%s)", (VERSION_TABLE,)).fetchone()
        return row is not None and row[0] is not None

    def _current(self) -> bool:
        """Whether the schema is already at this version: then opening writes nothing, so a
        read-only server or a role allowed only to SELECT can still read memory."""
        if not self._has_schema():
            return False
        row = self._conn.raw.execute(f"SELECT version FROM {VERSION_TABLE}").fetchone()
        return row is not None and int(row[0]) == PG_SCHEMA_VERSION

    def _migrate(self) -> None:
        conn = self._conn
        with self._lock:
            try:
                if self._current():
                    return
            except BaseException as error:
                raise self._translated(error) from error
            conn.raw.execute(BEGIN_WRITE)
            try:
                conn.raw.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                conn.raw.execute(
                    f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version INTEGER NOT NULL)"
                )
                row = conn.raw.execute(f"SELECT version FROM {VERSION_TABLE}").fetchone()
                current = 0 if row is None else int(row[0])
                if current > PG_SCHEMA_VERSION:
                    raise StorageError(
                        f"The database at {self.display} is at schema version {current}, newer "
                        "than "
                        "this "
                        f"memory-agent understands ({PG_SCHEMA_VERSION}). Upgrade memory-agent."
                    )
                for migration in PG_MIGRATIONS[current:]:
                    with conn.raw.cursor() as cursor:
                        migration(cursor)
                if row is None:
                    conn.raw.execute(
                        f"INSERT INTO {VERSION_TABLE} (version) VALUES (%s)", (PG_SCHEMA_VERSION,)
                    )
                elif (
                    current < PG_SCHEMA_VERSION
                ):  # a current schema is left as it is: opening writes nothing
                    conn.raw.execute(
                        f"UPDATE {VERSION_TABLE} SET version = %s", (PG_SCHEMA_VERSION,)
                    )
                conn.raw.execute("COMMIT")
            except BaseException as error:
                self._rollback(conn)
                raise self._translated(error) from error

    def schema_version(self) -> int:
        with self.reading() as conn:
            row = conn.execute(f"SELECT version FROM {VERSION_TABLE}").fetchone()
        return 0 if row is None else int(row[0])

    # ----- transactions ------------------------------------------------------------------

    # ----- the hooks of the shared transaction skeleton (store.transactions) ----------------

    def _statement(self, conn: PostgresConnection) -> Callable[[str], object]:
        return conn.raw.execute

    def _begin(self, conn: PostgresConnection) -> str:
        """BEGIN and take the write lock (see the module's docstring); returns the transaction's
        id, which `_commit` needs to look up a COMMIT whose answer was lost."""
        try:
            conn.execute(BEGIN_WRITE)
            return str(
                conn.raw.execute(
                    "SELECT pg_current_xact_id()::text, pg_advisory_xact_lock(%s)",
                    (WRITE_LOCK_KEY,),
                ).fetchone()[0]
            )
        except BaseException as error:
            self._rollback(conn)
            raise self._translated(error) from error

    def _commit(self, conn: PostgresConnection, xid: str) -> None:
        """COMMIT; if the connection is lost on the way, ask the server whether it committed.

        A COMMIT whose answer never arrived may have been applied. Reporting "nothing was
        written" then would make a caller's retry write twice, so the outcome is looked up on a
        new connection by transaction id (`pg_xact_status`, which PostgreSQL provides for
        exactly this) and the write counts as done if the server committed it."""
        try:
            conn.raw.execute("COMMIT")
            return
        except BaseException as error:
            if not conn.lost:
                self._rollback(conn)
                raise self._translated(error) from error
            lost = error
        status = self._settled_status(xid)
        if status == "committed":
            logger.info(
                "The connection to %s was lost during COMMIT; the server had committed it",
                self.display,
            )
            return
        if status == "aborted":
            raise StorageError(
                f"The connection to {self.display} was lost while committing "
                f"({_first_line(lost)}); "
                "the server rolled the write back, so nothing was written. Try again."
            ) from lost
        raise WriteOutcomeUnknownError(
            f"The connection to {self.display} was lost while committing ({_first_line(lost)}), "
            "and "
            "whether "
            "the server saved the write cannot be known now. Check (for example view the block or "
            "list the "
            "passages) before repeating it."
        ) from lost

    def _settled_status(self, xid: str) -> str | None:
        """'committed' or 'aborted' for transaction `xid`, asked on a new connection; None if
        unknown.

        Keeps asking for COMMIT_SETTLE_S: a server that restarts (every connection cut at once,
        some of them at COMMIT) is usually back within that, and then the answer is known."""
        deadline = time.monotonic() + COMMIT_SETTLE_S
        while True:
            try:
                self._conn = PostgresConnection(self._connect(), self._connect)
                while True:
                    row = self._conn.raw.execute(
                        "SELECT pg_xact_status(%s::xid8)", (xid,)
                    ).fetchone()
                    status = None if row is None else row[0]
                    if status != "in progress" or time.monotonic() > deadline:
                        return status if status in ("committed", "aborted") else None
                    time.sleep(0.05)
            except Exception as error:  # noqa: BLE001 - unreachable for now: ask again until the deadline
                if time.monotonic() > deadline:
                    logger.warning(
                        "Cannot ask %s whether a lost COMMIT was applied: %s", self.display, error
                    )
                    return None
                time.sleep(0.2)

    def _rollback(self, conn: PostgresConnection) -> None:
        if conn.lost:
            return
        try:
            conn.raw.execute("ROLLBACK")
        except Exception as error:  # noqa: BLE001 - the original error is what matters
            logger.debug(
                "ROLLBACK after a failed transaction on %s failed too: %s", self.display, error
            )

    def _open_reader_connection(self) -> PostgresConnection:
        """A new connection whose every statement is a read-only transaction."""
        return PostgresConnection(self._connect_read_only(), self._connect_read_only)

    def _close_connection(self, conn: PostgresConnection) -> None:
        conn.raw.close()

    def _reader_usable(self, conn: PostgresConnection) -> bool:
        return not conn.lost

    def _name(self) -> str:
        return f"The store at {self.display}"

    def _translated(self, error: BaseException) -> BaseException:
        """Our error for a driver failure: bad values are ConfigurationErrors, the rest
        StorageErrors."""
        psycopg = _psycopg()
        if not isinstance(error, psycopg.Error):
            if isinstance(error, OverflowError):
                return ConfigurationError(
                    f"A number sent to {self.display} is too large ({error}); nothing was written."
                )
            return error
        condition = server_condition(self.display, error)
        if condition is not None:
            return condition
        errors = psycopg.errors
        if isinstance(
            error,
            (
                errors.NumericValueOutOfRange,
                errors.UntranslatableCharacter,
                errors.CharacterNotInRepertoire,
            ),
        ) or "NUL (0x00)" in str(error):
            return ConfigurationError(
                f"PostgreSQL at {self.display} cannot store a value sent to it "
                f"({_first_line(error)}); nothing was written."
            )
        if isinstance(error, psycopg.DataError) and "out of range" in str(error):
            return ConfigurationError(
                f"A number sent to {self.display} is out of range "
                f"({_first_line(error)}); nothing was written."
            )
        if isinstance(error, psycopg.OperationalError):
            return StorageError(
                f"The PostgreSQL server at {self.display} failed: {_first_line(error)}. "
                "Nothing was written; check the server and try again."
            )
        if isinstance(error, psycopg.ProgrammingError) and (
            "cannot adapt" in str(error) or "not all arguments" in str(error)
        ):
            return ConfigurationError(
                f"A value sent to {self.display} has a type PostgreSQL cannot "
                f"store ({_first_line(error)}); nothing was written."
            )
        return StorageError(
            f"The database {self.display} refused the operation "
            f"({type(error).__name__}: {_first_line(error)}); nothing was written."
        )

    def _close(self) -> None:
        self._conn.raw.close()


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
