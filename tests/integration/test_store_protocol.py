"""Each backend satisfies the storage protocol (`memory_agent.store.protocol`): the Protocols'
runtime check, and what the Protocol promises in words (commit, rollback, savepoints, reads that
see the latest commit, rows by name and position, driver errors in the project's words).

mypy proves the signatures (`store.backend.open_store` returns either engine as a `Store` with no
cast); this suite proves the behaviour, once per backend."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_agent.errors import StorageError
from memory_agent.privacy.encryption_key import key_from_environ
from memory_agent.store.backend import open_store
from memory_agent.store.meta import read_meta, write_meta
from memory_agent.store.protocol import Connection, Store

pytestmark = pytest.mark.usefixtures("backend")


class _Refused(Exception):
    pass


def _open(directory: Path) -> Store:
    """The backend fixture's store (an encrypted SQLite one under MEMORY_AGENT_TEST_ENCRYPTION=1,
    whose connection is `store.cipher`'s, a third implementation of `Connection`)."""
    return open_store(
        directory,
        os.environ.get("MEMORY_DATABASE_URL"),
        encryption_key=key_from_environ(os.environ),
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with _open(tmp_path / "store") as db:
        yield db


def test_the_store_and_its_connections_satisfy_the_protocol(store: Store, backend: str) -> None:
    assert isinstance(store, Store)
    assert store.dialect == {"sqlite": "sqlite", "postgres": "postgresql"}[backend]
    assert isinstance(store.path, Path)
    with store.transaction() as conn:
        assert isinstance(conn, Connection)
    with store.reading() as conn:
        assert isinstance(conn, Connection)


def test_a_transaction_commits_when_its_block_ends(store: Store, tmp_path: Path) -> None:
    with _open(tmp_path / "store") as other:  # a second connection to the same database
        with store.transaction() as conn:
            write_meta(conn, "k", "v")
            with other.reading() as seen:
                assert read_meta(seen, "k") is None  # not committed yet
        with other.reading() as seen:
            assert read_meta(seen, "k") == "v"


def test_a_block_that_raises_rolls_back_and_its_error_passes_unchanged(store: Store) -> None:
    with pytest.raises(_Refused), store.transaction() as conn:
        write_meta(conn, "k", "v")
        raise _Refused
    with store.reading() as conn:
        assert read_meta(conn, "k") is None
    with store.transaction() as conn:  # the store is usable again: nothing was left open
        write_meta(conn, "k", "after")
    with store.reading() as conn:
        assert read_meta(conn, "k") == "after"


def test_a_failed_statement_rolls_back_as_a_storage_error(store: Store) -> None:
    with pytest.raises(StorageError), store.transaction() as conn:
        write_meta(conn, "k", "v")
        conn.execute("INSERT INTO no_such_table (x) VALUES (?)", (1,))
    with store.reading() as conn:
        assert read_meta(conn, "k") is None


def test_a_failed_read_is_a_storage_error_and_the_store_reads_on(store: Store) -> None:
    with pytest.raises(StorageError), store.reading() as conn:
        conn.execute("SELECT * FROM no_such_table").fetchall()
    with store.reading() as conn:
        assert conn.execute("SELECT COUNT(*) FROM meta").fetchone()[0] >= 0


def test_nested_transactions_are_savepoints_two_deep(store: Store) -> None:
    with store.transaction() as outer:
        write_meta(outer, "outer", "kept")
        with store.transaction() as middle:
            write_meta(middle, "middle", "kept")
            with pytest.raises(_Refused), store.transaction() as inner:
                write_meta(inner, "inner", "undone")
                raise _Refused
        with pytest.raises(_Refused), store.transaction() as middle:
            write_meta(middle, "second middle", "undone")
            raise _Refused
    with store.reading() as conn:
        assert read_meta(conn, "outer") == "kept"
        assert read_meta(conn, "middle") == "kept"
        assert read_meta(conn, "inner") is None
        assert read_meta(conn, "second middle") is None


def test_cursors_report_keys_counts_and_rows_by_name_and_position(store: Store) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO agents (agent_id, name, created_at) VALUES (?, ?, ?)",
            ("a1", "first", "2026-01-01T00:00:00+00:00"),
        )
        first = conn.execute(
            "INSERT INTO messages (agent_id, role, message_type, content, text, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            ("a1", "user", "user", "[]", "hello", "2026-01-01T00:00:01+00:00"),
        ).lastrowid
        second = conn.execute(
            "INSERT INTO messages (agent_id, role, message_type, content, text, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            ("a1", "user", "user", "[]", "again", "2026-01-01T00:00:02+00:00"),
        ).lastrowid
        assert isinstance(first, int) and isinstance(second, int) and second > first
        changed = conn.execute("UPDATE messages SET text = ? WHERE agent_id = ?", ("x", "a1"))
        assert changed.rowcount == 2
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)", [("m1", "one"), ("m2", "two")]
        )
    with store.reading() as conn:
        row = conn.execute(
            "SELECT message_id, text FROM messages WHERE message_id = ?", (second,)
        ).fetchone()
        assert row["message_id"] == row[0] == second and row["text"] == row[1] == "x"
        assert list(row.keys()) == ["message_id", "text"]
        none = conn.execute("SELECT value FROM meta WHERE key = ?", ("absent",)).fetchone()
        assert none is None
        values = [r[0] for r in conn.execute("SELECT value FROM meta WHERE key LIKE 'm_'")]
        assert sorted(values) == ["one", "two"]
        assert len(conn.execute("SELECT * FROM messages").fetchall()) == 2


def test_a_closed_store_refuses_use(tmp_path: Path) -> None:
    db = _open(tmp_path / "store")
    db.close()
    with pytest.raises(Exception, match="(?i)closed"), db.reading() as conn:
        conn.execute("SELECT 1").fetchone()
