"""SQLiteSessionStore: the SDK's own conformance suite, plus sharing between connections and
durability, on both backends (the name is historical: on PostgreSQL the same class keeps transcripts
on the
server)."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from claude_agent_sdk import (
    SessionKey,
    SessionStoreEntry,
    fold_session_summary,
    get_session_messages_from_store,
    list_sessions_from_store,
    project_key_for_directory,
)
from claude_agent_sdk.testing import run_session_store_conformance
from old_schemas import sqlite_schema_at

import memory_agent.integrations.session_store as session_store_module
from memory_agent.errors import ConfigurationError, StorageError
from memory_agent.integrations.session_store import SQLiteSessionStore
from memory_agent.store.backend import open_store
from memory_agent.store.database import Database
from memory_agent.store.migrations import SCHEMA_VERSION, schema_version

KEY: SessionKey = {"project_key": "proj", "session_id": "sess"}


def entry(**fields: object) -> SessionStoreEntry:
    return {"type": "x", **fields}  # type: ignore[return-value, typeddict-item]


def _open(directory: Path) -> Database:
    """One more connection to the test's store: the storage dir's file, or PostgreSQL's database
    when the `backend` fixture set MEMORY_DATABASE_URL (what another process or host would open)."""
    return open_store(directory, os.environ.get("MEMORY_DATABASE_URL"))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "memory.db"


@pytest.fixture
def store(db_path: Path, backend: str) -> Iterator[SQLiteSessionStore]:
    """The store on each backend (PostgreSQL's URL is set by `backend`)."""
    with SQLiteSessionStore.open(db_path.parent, os.environ.get("MEMORY_DATABASE_URL")) as opened:
        yield opened


def test_public_names() -> None:
    assert session_store_module.__all__ == ["DATABASE_FILENAME", "SQLiteSessionStore"]


@pytest.fixture
def fresh_store_url(
    backend: str, request: pytest.FixtureRequest
) -> Iterator[Callable[[], str | None]]:
    """A new database per call on PostgreSQL (dropped afterwards); None on SQLite, where a new
    directory is the new store. The conformance suite wants a fresh store per contract.

    On PostgreSQL a copy of the migrated template (made ahead by a thread), as the `backend`
    fixture gives: migrating an empty database per contract was most of these tests' time (about
    30 per test), and the first open of an empty database has tests of its own
    (test_migrations.py)."""
    made: list[str] = []

    def fresh() -> str | None:
        if backend != "postgres":
            return None
        made.append(request.getfixturevalue("postgres_template_copies").take())
        return made[-1]

    yield fresh
    for url in made:
        request.getfixturevalue("postgres_template_copies").release(url)


async def test_passes_the_sdk_conformance_suite(
    tmp_path: Path, fresh_store_url: Callable[[], str | None]
) -> None:
    # Every contract gets a fresh store; every optional method is implemented, none skipped.
    counter = itertools.count()
    opened: list[SQLiteSessionStore] = []

    def make_store() -> SQLiteSessionStore:
        opened.append(SQLiteSessionStore.open(tmp_path / f"db{next(counter)}", fresh_store_url()))
        return opened[-1]

    try:
        await run_session_store_conformance(make_store)
    finally:
        for each in opened:
            each.close()
    assert len(opened) >= 14


async def test_passes_the_conformance_suite_across_two_connections(
    tmp_path: Path, fresh_store_url: Callable[[], str | None]
) -> None:
    # Each contract gets its own file or database; writes go through one connection, reads through
    # another.
    counter = itertools.count()
    dbs: list[Database] = []

    def make_store() -> SQLiteSessionStore:
        url = fresh_store_url()
        directory = tmp_path / f"db{next(counter)}"
        dbs.extend([open_store(directory, url), open_store(directory, url)])
        writer, reader = SQLiteSessionStore(dbs[-2]), SQLiteSessionStore(dbs[-1])
        return _SplitStore(writer, reader)

    try:
        await run_session_store_conformance(make_store)
    finally:
        for db in dbs:
            db.close()
    assert len(dbs) >= 28


class _SplitStore(SQLiteSessionStore):
    """Writes through one connection, reads through another: what two processes would see."""

    def __init__(self, writer: SQLiteSessionStore, reader: SQLiteSessionStore) -> None:
        super().__init__(writer.db)
        self._reader = reader

    async def load(self, key):  # type: ignore[no-untyped-def, override]
        return await self._reader.load(key)

    async def list_sessions(self, project_key):  # type: ignore[no-untyped-def, override]
        return await self._reader.list_sessions(project_key)

    async def list_session_summaries(self, project_key):  # type: ignore[no-untyped-def, override]
        return await self._reader.list_session_summaries(project_key)

    async def list_subkeys(self, key):  # type: ignore[no-untyped-def, override]
        return await self._reader.list_subkeys(key)


@pytest.mark.usefixtures("backend")
async def test_two_connections_see_each_others_appends(db_path: Path) -> None:
    with _open(db_path.parent) as first_db, _open(db_path.parent) as second_db:
        first, second = SQLiteSessionStore(first_db), SQLiteSessionStore(second_db)
        await first.append(KEY, [entry(uuid="u1", n=1)])
        await second.append(KEY, [entry(uuid="u2", n=2)])
        await first.append({**KEY, "subpath": "subagents/agent-1"}, [entry(n=3)])

        expected = [entry(uuid="u1", n=1), entry(uuid="u2", n=2)]
        assert await first.load(KEY) == expected
        assert await second.load(KEY) == expected
        assert await second.list_subkeys(KEY) == ["subagents/agent-1"]
        assert [s["session_id"] for s in await second.list_sessions("proj")] == ["sess"]
        # The sidecar folded both processes' batches, whichever connection wrote them.
        summaries = await first.list_session_summaries("proj")
        assert summaries == await second.list_session_summaries("proj")
        await second.delete(KEY)
        assert await first.load(KEY) is None
        assert await first.list_subkeys(KEY) == []


@pytest.mark.usefixtures("backend")
def test_concurrent_writers_on_separate_connections_lose_nothing(db_path: Path) -> None:
    _open(db_path.parent).close()  # migrate once, up front
    per_writer, writers = 25, 4

    def write(writer: int) -> None:
        with _open(db_path.parent) as db:
            store = SQLiteSessionStore(db)
            for n in range(per_writer):
                anyio.run(store.append, KEY, [entry(uuid=f"{writer}-{n}", writer=writer, n=n)])

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    with _open(db_path.parent) as db:
        loaded = anyio.run(SQLiteSessionStore(db).load, KEY)
    assert loaded is not None and len(loaded) == per_writer * writers
    for writer in range(writers):
        # Each writer's own appends stay in its call order.
        assert [e["n"] for e in loaded if e["writer"] == writer] == list(range(per_writer))


@pytest.mark.usefixtures("backend")
async def test_summaries_are_persisted_verbatim(db_path: Path) -> None:
    batches = [
        [
            entry(
                type="user",
                timestamp="2024-05-01T10:00:00.000Z",
                cwd="/repo",
                message={"role": "user", "content": "Plan the trip to Lisbon"},
                gitBranch="main",
            ),
            entry(type="assistant", timestamp="2024-05-01T10:00:01.000Z", uuid="a1"),
        ],
        [
            entry(
                type="custom-title",
                customTitle="Lisbon ✈ trip",
                timestamp="2024-05-01T10:00:02.000Z",
            )
        ],
        [entry(type="tag", tag="travel")],
    ]
    expected = None
    with _open(db_path.parent) as db:
        store = SQLiteSessionStore(db)
        for batch in batches:
            await store.append(KEY, batch)
            expected = fold_session_summary(expected, KEY, batch)
        await store.append({**KEY, "subpath": "subagents/agent-1"}, [entry(customTitle="not me")])
        [summary] = await store.list_session_summaries("proj")
        [listed] = await store.list_sessions("proj")

    assert expected is not None
    assert summary["session_id"] == "sess"
    assert summary["data"] == expected["data"]
    assert summary["data"]["custom_title"] == "Lisbon ✈ trip"
    # Stamped with the storage clock, the same one list_sessions uses.
    assert summary["mtime"] == listed["mtime"]

    # Reopened (a new process): the very same document, and the stored text is its JSON.
    with _open(db_path.parent) as db:
        assert await SQLiteSessionStore(db).list_session_summaries("proj") == [summary]
        with db.reading() as conn:
            [(raw,)] = conn.execute("SELECT data FROM session_summaries").fetchall()
    assert json.loads(raw) == expected["data"]


async def test_entries_round_trip_unchanged(store: SQLiteSessionStore) -> None:
    odd = entry(
        uuid="u1",
        text="naïve “quotes” \u0000 and \U0001f600",
        nested={"list": [1, 2.5, None, True, {"deep": []}], "empty": {}},
        big=2**62,
    )
    await store.append(KEY, [odd])
    assert await store.load(KEY) == [odd]


async def test_uuid_is_an_idempotency_key(store: SQLiteSessionStore) -> None:
    await store.append(KEY, [entry(uuid="a", v=1), entry(uuid="b", v=1)])
    # A retried batch overlapping the first: the line keeps its place, the last write wins.
    await store.append(KEY, [entry(uuid="a", v=2), entry(uuid="c", v=1)])
    assert await store.load(KEY) == [
        entry(uuid="a", v=2),
        entry(uuid="b", v=1),
        entry(uuid="c", v=1),
    ]


async def test_entries_without_uuid_are_never_deduplicated(store: SQLiteSessionStore) -> None:
    await store.append(KEY, [entry(tag="x"), entry(tag="x")])
    await store.append(KEY, [entry(tag="x")])
    assert await store.load(KEY) == [entry(tag="x")] * 3


async def test_the_same_uuid_in_different_transcripts_is_kept_apart(
    store: SQLiteSessionStore,
) -> None:
    sub: SessionKey = {**KEY, "subpath": "subagents/agent-1"}
    await store.append(KEY, [entry(uuid="same", where="main")])
    await store.append(sub, [entry(uuid="same", where="sub")])
    assert await store.load(KEY) == [entry(uuid="same", where="main")]
    assert await store.load(sub) == [entry(uuid="same", where="sub")]


async def test_empty_append_creates_nothing(store: SQLiteSessionStore) -> None:
    await store.append(KEY, [])
    assert await store.load(KEY) is None
    assert await store.list_sessions("proj") == []
    assert await store.list_session_summaries("proj") == []


@pytest.mark.usefixtures("backend")
async def test_mtime_strictly_increases_across_sessions_and_connections(db_path: Path) -> None:
    with _open(db_path.parent) as first_db, _open(db_path.parent) as second_db:
        stores = [SQLiteSessionStore(first_db), SQLiteSessionStore(second_db)]
        seen = []
        for n in range(20):
            key: SessionKey = {"project_key": "proj", "session_id": f"s{n}"}
            await stores[n % 2].append(key, [entry(n=n)])
            [listed] = [
                s for s in await stores[0].list_sessions("proj") if s["session_id"] == f"s{n}"
            ]
            seen.append(listed["mtime"])
    assert seen == sorted(set(seen))
    assert seen[0] > 10**12  # epoch milliseconds


async def test_empty_subpath_is_refused(store: SQLiteSessionStore) -> None:
    with pytest.raises(ConfigurationError, match="omit 'subpath'"):
        await store.append({**KEY, "subpath": ""}, [entry(n=1)])


async def test_the_sdks_store_readers_work_on_it(store: SQLiteSessionStore, tmp_path: Path) -> None:
    session_id = "6f1c2a7e-9c1b-4f7a-8a39-0c5a3f1e2d4b"
    key: SessionKey = {"project_key": project_key_for_directory(tmp_path), "session_id": session_id}
    user_uuid, assistant_uuid = (
        "1b0b7a52-6a55-4f0b-9d44-6b3f7c1e0a01",
        "1b0b7a52-6a55-4f0b-9d44-6b3f7c1e0a02",
    )
    await store.append(
        key,
        [
            entry(
                type="user",
                uuid=user_uuid,
                parentUuid=None,
                sessionId=session_id,
                timestamp="2024-05-01T10:00:00.000Z",
                message={"role": "user", "content": "Hello there"},
            ),
            entry(
                type="assistant",
                uuid=assistant_uuid,
                parentUuid=user_uuid,
                sessionId=session_id,
                timestamp="2024-05-01T10:00:01.000Z",
                message={"role": "assistant", "content": [{"type": "text", "text": "Hi!"}]},
            ),
        ],
    )
    [info] = await list_sessions_from_store(store, directory=str(tmp_path))
    assert (info.session_id, info.summary) == (session_id, "Hello there")
    messages = await get_session_messages_from_store(store, session_id, directory=str(tmp_path))
    assert [m.uuid for m in messages] == [user_uuid, assistant_uuid]


@pytest.mark.usefixtures("backend")
def test_open_owns_its_database_and_a_passed_database_stays_open(tmp_path: Path) -> None:
    with SQLiteSessionStore.open(tmp_path / "dir", os.environ.get("MEMORY_DATABASE_URL")) as opened:
        assert opened.db.path.parent == tmp_path / "dir"
        anyio.run(opened.append, KEY, [entry(n=1)])
    # Using a closed store is a defect: SQLite's own error, or ours on PostgreSQL (never a quiet
    # reconnect).
    with pytest.raises((sqlite3.ProgrammingError, StorageError)), opened.db.reading() as conn:
        conn.execute("SELECT 1")

    with _open(tmp_path / "other") as db:
        SQLiteSessionStore(db).close()
        with db.reading() as conn:
            assert conn.execute("SELECT 1").fetchone()[0] == 1


@pytest.mark.sqlite_only(
    reason="upgrades a version-2 SQLite file built by hand; PostgreSQL's schema "
    "(store/pg_schema.py) began at SQLite's version 5, so it has no version 2 to upgrade"
)
def test_migration_upgrades_a_version_2_database(db_path: Path) -> None:
    # Build a database as the release before m003 left it: migrations 1 and 2 only, version 2.
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("BEGIN")
    sqlite_schema_at(conn, 2)
    conn.execute("COMMIT")
    conn.close()

    with Database(db_path) as db:
        with db.reading() as conn:
            assert schema_version(conn) == SCHEMA_VERSION
        anyio.run(SQLiteSessionStore(db).append, KEY, [entry(n=1)])
        assert anyio.run(SQLiteSessionStore(db).load, KEY) == [entry(n=1)]
