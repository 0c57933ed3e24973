"""Broken storage is named, never silently replaced; `doctor` reports it and `--repair` rebuilds
what SQLite is the truth for.

Each test builds one broken environment for real (bytes written over the database, a database
emptied beside its vectors, a read-only or full file system on a small tmpfs when this machine
lets us mount one, garbage in Chroma's own database) and checks the one-line error, the doctor's
report and, where there is one, the repair.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result
from robustness_helpers import HashEmbedding, cli_run, one_line_error, state_of

from memory_agent import MemoryManager, StorageError
from memory_agent.archival import ArchivalMemory, VectorConfig
from memory_agent.maintenance import health
from memory_agent.store import passage_fts
from memory_agent.store.snapshot import store_snapshot

PAGE = 4096


def run(storage: Path, *args: str) -> Result:
    return cli_run("--storage-dir", str(storage), *args)


def checks(result: Result) -> dict[str, dict[str, str]]:
    return {check["name"]: check for check in json.loads(result.stdout)["checks"]}


PASSAGES = ("The tide tables for May", "Ada prefers tea to coffee", "The boat is called Marlin")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A storage dir with an agent, messages and three passages with their vectors (hashing
    embedding: these tests are about storage)."""
    storage = tmp_path / "store"
    assert run(storage, "--agent", "ada", "init").exit_code == 0
    with MemoryManager(storage, agent_id="ada", embedding_function=HashEmbedding()) as memory:
        memory.archival_memory_insert_many(list(PASSAGES))
        for n in range(30):
            memory.store_message("user", f"message number {n} " + "filler " * 40)
    return storage


@pytest.fixture
def store_with_model(tmp_path: Path, backend: str) -> Path:
    """The same passages written by the CLI, so with the default embedding model, as doctor uses
    (on either backend: the vectors beside the store are the same kind)."""
    storage = tmp_path / "store"
    assert run(storage, "--agent", "ada", "init").exit_code == 0
    for text in PASSAGES:
        assert run(storage, "remember", text).exit_code == 0
    return storage


# ----- the database file itself --------------------------------------------------------------


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _garbage_header(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.write(b"this is not SQLite" * 8)


def _garbage_middle(path: Path) -> None:
    size = path.stat().st_size
    with path.open("r+b") as handle:
        for page in range(2, size // PAGE, 3):  # every third page after the schema
            handle.seek(page * PAGE + 100)
            handle.write(os.urandom(512))


def _checkpointed(storage: Path) -> Path:
    """The database with its WAL folded in, so that the damage lands on the data itself."""
    with MemoryManager(storage, agent_id="ada") as memory, memory.db.reading() as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return storage / "memory.db"


@pytest.mark.sqlite_only(
    reason="bytes written over the SQLite file itself; PostgreSQL keeps its files on the server "
    "(see test_broken_postgres.py for a server's failures)"
)
@pytest.mark.parametrize("damage", [_truncate, _garbage_header, _garbage_middle])
def test_a_damaged_database_is_named_reported_and_left_alone(
    store: Path, damage: Callable[[Path], None]
) -> None:
    path = _checkpointed(store)
    damage(path)

    commands = (
        ["blocks", "list"],
        ["blocks", "append", "human", "more"],
        ["messages"],
        ["blocks", "show", "human"],
    )
    for command in commands:
        result = run(store, *command)
        if result.exit_code != 0:  # garbage in the middle may spare the pages a command reads
            error = one_line_error(result)
            assert str(path) in error and ("damaged" in error or "doctor" in error), error
    with (
        pytest.raises(StorageError, match="memory.db"),
        MemoryManager(store, agent_id="ada") as memory,
    ):
        memory.get_recent_messages(100)
        memory.search_messages("filler", limit=50)

    report = run(store, "--json", "doctor")
    assert report.exit_code == 1
    integrity = checks(report)["sqlite integrity"]
    assert integrity["status"] == "fail" and "--repair cannot rebuild it" in integrity["detail"]
    assert "restore memory.db from a backup" in integrity["detail"].lower()
    damaged = path.read_bytes()
    assert run(store, "doctor", "--repair").exit_code == 1
    assert path.read_bytes() == damaged  # nothing was "repaired" into a fresh, empty store


@pytest.mark.sqlite_only(
    reason="a SQLite file lost beside the embedded vectors; with PostgreSQL the storage dir "
    "holds no database to lose"
)
@pytest.mark.parametrize("loss", ["empty", "missing"])
def test_a_lost_database_beside_vectors_is_not_a_new_store(store: Path, loss: str) -> None:
    path = store / "memory.db"
    for leftover in (path, store / "memory.db-wal", store / "memory.db-shm"):
        leftover.unlink(missing_ok=True)
    if loss == "empty":
        path.write_bytes(b"")
    chroma_files = sorted(p.relative_to(store / "chroma") for p in (store / "chroma").rglob("*"))

    for command in (["blocks", "list"], ["init"], ["remember", "x"], ["doctor"]):
        result = run(store, "--json", *command)
        assert result.exit_code == 1
        if command != ["doctor"]:
            assert "holds archival vectors" in one_line_error(result)
    with pytest.raises(StorageError, match="not a new one"):
        MemoryManager(store, agent_id="ada")
    assert (
        sorted(p.relative_to(store / "chroma") for p in (store / "chroma").rglob("*"))
        == chroma_files
    )
    assert not path.exists() or path.stat().st_size == 0

    report = checks(run(store, "--json", "doctor"))["sqlite integrity"]
    assert report["status"] == "fail" and "--repair moves the vectors aside" in report["detail"]
    repaired = run(store, "doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    backups = list(store.glob("chroma.backup-*"))
    assert (
        len(backups) == 1
        and sorted(p.relative_to(backups[0]) for p in backups[0].rglob("*")) == chroma_files
    )
    assert run(store, "--agent", "bea", "init").exit_code == 0


@pytest.mark.sqlite_only(reason="what SQLite makes of an empty file")
def test_a_zero_byte_database_alone_is_a_new_store(tmp_path: Path) -> None:
    """Without vectors beside it, an empty file is what SQLite makes of a store being created."""
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "memory.db").write_bytes(b"")
    with MemoryManager(tmp_path / "store", agent_id="ada") as memory:
        assert memory.get_block("human").value


# ----- read-only and full file systems --------------------------------------------------------


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (needs root and a kernel that lets us mount)."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.sqlite_only(
    reason="a read-only file system under the SQLite file; PostgreSQL's read-only server "
    "and role are in test_broken_postgres.py"
)
def test_a_read_only_storage_dir_is_named(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "ro", "4m") as mount:
        storage = mount / "store"
        assert run(storage, "--agent", "ada", "init").exit_code == 0
        before = state_of(storage)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        reading = run(
            storage, "blocks", "list"
        )  # SQLite may read a WAL database on a read-only mount
        assert reading.exit_code == 0 or "read-only" in one_line_error(reading)
        error = one_line_error(run(storage, "blocks", "append", "human", "x"))
        assert "read-only" in error and str(storage / "memory.db") in error
        report = run(storage, "--json", "doctor")
        assert report.exit_code == 1
        assert any(
            c["status"] == "fail" and "read-only" in c["detail"] for c in checks(report).values()
        )
        subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
        assert state_of(storage) == before


@pytest.mark.sqlite_only(
    reason="the SQLite file on a full tmpfs; PostgreSQL's full disk (a tablespace on a "
    "full tmpfs) is in test_broken_postgres.py"
)
def test_a_full_disk_says_disk_full_and_recovers_when_space_returns(tmp_path: Path) -> None:
    with (
        small_tmpfs(tmp_path / "full", "3m") as mount,
        MemoryManager(mount / "store", agent_id="ada") as memory,
    ):
        memory.create_block("big", "", limit=10**7)
        before = store_snapshot(memory.db)
        filler = mount / "filler"
        with contextlib.suppress(OSError), filler.open("wb") as handle:
            while True:
                handle.write(b"x" * 65536)
                handle.flush()
        with pytest.raises(StorageError, match="disk full"):
            memory.update_block("big", value="y" * 500_000)
        assert store_snapshot(memory.db) == before
        filler.unlink()
        assert memory.update_block("big", value="y" * 500_000).version == 2


@pytest.mark.sqlite_only(reason="SQLITE_FULL through PRAGMA max_page_count, a SQLite setting")
def test_sqlite_full_is_disk_full_too(tmp_path: Path) -> None:
    """The same on any machine: SQLITE_FULL simulated with PRAGMA max_page_count."""
    with MemoryManager(tmp_path / "store", agent_id="ada") as memory:
        memory.create_block("big", "", limit=10**7)
        before = store_snapshot(memory.db)
        with memory.db.reading() as conn:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages + 2}")
        with pytest.raises(StorageError, match="disk full"):
            memory.update_block("big", value="y" * 200_000)
        outcome = memory.execute_tool(
            "core_memory_append", {"label": "big", "content": "z" * 200_000}
        )
        assert outcome.is_error and "disk full" in outcome.text
        assert store_snapshot(memory.db) == before
        with memory.db.reading() as conn:
            conn.execute("PRAGMA max_page_count = 1073741823")
        assert memory.update_block("big", value="y" * 200_000).version == 2


# ----- the vector store ----------------------------------------------------------------------


def test_a_damaged_chroma_is_reported_searched_around_and_rebuilt(store_with_model: Path) -> None:
    store = store_with_model
    with (store / "chroma" / "chroma.sqlite3").open("r+b") as handle:
        handle.write(b"garbage!" * 16)

    found = run(store, "--json", "recall", "tea", "--mode", "vector")
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)
    assert hits and all(hit["degraded"] for hit in hits)
    assert "keywords only" in run(store, "recall", "tea").stdout
    with MemoryManager(store, agent_id="ada") as memory:
        text = memory.execute_tool("archival_memory_search", {"query": "tea"}).text
        assert "keywords only" in text

    report = run(store, "--json", "doctor")
    assert report.exit_code == 1
    store_check = checks(report)["vector store"]
    assert (
        store_check["status"] == "fail"
        and "--repair moves the vector store aside" in store_check["detail"]
    )
    assert "re-embeds all 3 passages" in store_check["detail"]

    repaired = run(store, "--json", "doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "re-embedded 3 passages" in checks(repaired)["vector store rebuild"]["detail"]
    backups = list(store.glob("chroma.backup-*"))
    assert len(backups) == 1 and (backups[0] / "chroma.sqlite3").read_bytes().startswith(
        b"garbage!"
    )
    assert run(store, "doctor").exit_code == 0
    hits = json.loads(run(store, "--json", "recall", "tea", "--mode", "vector").stdout)
    assert hits and not any(hit["degraded"] for hit in hits) and hits[0]["vector_rank"] == 1


@pytest.mark.sqlite_only(
    reason="FTS5 tables kept by the store can drift; PostgreSQL's tsvector columns are "
    "generated by the database itself"
)
def test_a_drifted_full_text_index_is_rebuilt(store: Path) -> None:
    with MemoryManager(store, agent_id="ada") as memory, memory.db.transaction() as conn:
        table = passage_fts.ensure_agent_index(conn, "ada")
        conn.execute(f"INSERT INTO {table}(rowid, content) VALUES (999, 'ghost passage')")
    failed = checks(run(store, "--json", "doctor"))["passages_fts index"]
    assert failed["status"] == "fail" and "--repair rebuilds it" in failed["detail"]
    assert run(store, "doctor", "--repair").exit_code == 0
    assert run(store, "doctor").exit_code == 0


@pytest.mark.sqlite_only(
    reason="the damage is to Chroma's HNSW files, the same beside either database; the "
    "PostgreSQL side of a damaged vector store is the damaged-Chroma test above, and 3,000 "
    "inserts on both backends would cost the default suite seconds for nothing new"
)
def test_a_damaged_hnsw_segment_is_found_and_rebuilt_with_the_managers_embedding(
    tmp_path: Path,
) -> None:
    """The state one kill -9 left behind in an earlier campaign: Chroma's HNSW files unreadable."""
    with MemoryManager(
        tmp_path / "store", agent_id="ada", embedding_function=HashEmbedding()
    ) as memory:
        memory.archival_memory_insert_many(
            [f"passage {n} about topic {n % 37}" for n in range(3000)]
        )
    segments = [p for p in (tmp_path / "store" / "chroma").iterdir() if p.is_dir()]
    assert segments, "Chroma wrote no HNSW segment to damage"
    for segment in segments:
        (segment / "header.bin").write_bytes(b"\0" * 10)
        (segment / "link_lists.bin").write_bytes(b"garbage")

    with MemoryManager(
        tmp_path / "store", agent_id="ada", embedding_function=HashEmbedding()
    ) as memory:
        hits = memory.archival_memory_search("topic 3", mode="vector", limit=3)
        assert hits and all(hit.degraded for hit in hits)
        checked = ArchivalMemory(
            memory.db, VectorConfig(path=tmp_path / "store" / "chroma"), HashEmbedding()
        )
        found = health.check_archival(checked)
        checked.close()
        assert found[0].status == "fail" and "re-embeds all 3000 passages" in found[0].detail
        report = memory.rebuild_archival_vectors()
        assert (
            report.reconcile.ok and report.reconcile.embedded == 3000 and report.backup is not None
        )
        hits = memory.archival_memory_search("topic 3", mode="vector", limit=3)
        assert hits and not any(hit.degraded for hit in hits) and hits[0].vector_rank == 1
        assert memory.archival.index.store.count("ada") == 3000


# ----- the file under a running store ---------------------------------------------------------

WRITES: dict[str, Callable[[MemoryManager], object]] = {
    "create_block": lambda m: m.create_block("fresh", "a new block"),
    "core_memory_append": lambda m: m.core_memory_append("human", "Likes tea."),
    "update_block": lambda m: m.update_block("persona", value="Rewritten."),
    "store_message": lambda m: m.store_message("user", "hello after the loss"),
    "archival_memory_insert": lambda m: m.archival_memory_insert("A passage after the loss"),
    "set_agent_state": lambda m: m.set_agent_state({"session": "s-1"}),
    "memory tool create": lambda m: m.execute_tool(
        "memory", {"command": "create", "path": "/memories/new.md", "file_text": "x"}
    ),
}


def _remove_storage_dir(storage: Path) -> None:
    for path in sorted(storage.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    storage.rmdir()


def _replace_database(storage: Path) -> None:
    replacement = storage.parent / "other" / "memory.db"
    with MemoryManager(storage.parent / "other", agent_id="someone-else"):
        pass
    for suffix in ("", "-wal", "-shm"):
        (storage / f"memory.db{suffix}").unlink(missing_ok=True)
    replacement.rename(storage / "memory.db")


@pytest.mark.sqlite_only(
    reason="the identity of the SQLite file in the storage dir; PostgreSQL keeps no database "
    "file there (a dropped database is in test_broken_postgres.py)"
)
@pytest.mark.parametrize(
    "loss", [_remove_storage_dir, _replace_database], ids=["dir removed", "file replaced"]
)
def test_no_write_is_acknowledged_into_a_file_that_is_gone(
    tmp_path: Path, loss: Callable[[Path], None]
) -> None:
    storage = tmp_path / "store"
    memory = MemoryManager(storage, agent_id="ada", embedding_function=HashEmbedding())
    memory.core_memory_append("human", "Before the loss.")
    loss(storage)
    for name, write in WRITES.items():
        if name == "memory tool create":
            outcome = write(memory)
            assert outcome.is_error and str(storage / "memory.db") in outcome.text, (name, outcome)  # type: ignore[attr-defined]
            continue
        with pytest.raises(StorageError, match="while this process had it open") as raised:
            write(memory)
        assert str(storage / "memory.db") in str(raised.value), name
    memory.close()
    if (storage / "memory.db").exists():  # replaced: the other store holds none of the writes
        with MemoryManager(storage, agent_id="someone-else") as other:
            assert other.list_agents() == ["someone-else"]
    else:
        assert not storage.exists()


@pytest.mark.sqlite_only(
    reason="a SQLite header (user_version) written by hand; PostgreSQL's newer schema is in "
    "tests/integration/test_postgres_store.py"
)
def test_a_newer_schema_version_names_the_file(store: Path) -> None:
    import sqlite3

    with contextlib.closing(sqlite3.connect(store / "memory.db")) as conn:
        conn.execute("PRAGMA user_version = 99")
        conn.commit()
    with pytest.raises(StorageError, match="schema version 99") as raised:
        MemoryManager(store, agent_id="ada")
    assert str(store / "memory.db") in str(raised.value)
    error = one_line_error(run(store, "blocks", "list"))
    assert str(store / "memory.db") in error and "Upgrade memory-agent" in error


def test_remember_into_a_damaged_chroma_names_the_repair(store_with_model: Path) -> None:
    store = store_with_model
    with (store / "chroma" / "chroma.sqlite3").open("wb") as handle:
        handle.write(
            os.urandom(4096)
        )  # not even SQLite's magic string: Chroma's Rust side fails to start
    result = run(store, "remember", "Passage after the damage")
    assert result.exit_code == 0, result.output
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1 and "memory-agent doctor --repair" in warning[0], result.stderr
    assert "AttributeError" not in warning[0] and "RustBindings" not in warning[0]
    assert run(store, "doctor", "--repair").exit_code == 0
    hits = json.loads(
        run(store, "--json", "recall", "Passage after the damage", "--mode", "vector").stdout
    )
    assert hits and not any(hit["degraded"] for hit in hits)
