"""A new SQLite store is put in place whole from the migrated image (store/new_store_image.py):
it is the same database that migrating in place makes, it never replaces a file that is there,
processes creating one store at once all end up in it, and any failure migrates in place."""

from __future__ import annotations

import errno
import os
import re
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from forked_workers import run_workers

from memory_agent import MemoryManager, Settings
from memory_agent.privacy.file_modes import private_file
from memory_agent.store import new_store_image, whole_file
from memory_agent.store.database import DATABASE_FILENAME, Database
from memory_agent.store.migrations import SCHEMA_VERSION

pytestmark = pytest.mark.sqlite_only(
    reason="the image is of a SQLite file; a PostgreSQL store is migrated in its database "
    "(tests/integration/test_migrations.py)"
)


FTS5_SHADOW_ROW = re.compile(r'INSERT INTO "\w+_fts_(config|data|idx|docsize)" VALUES')


def _made_from_image(directory: Path) -> Path:
    directory.mkdir()
    path = directory / DATABASE_FILENAME
    Database(path).close()
    return path


def _migrated_in_place(directory: Path) -> Path:
    """A store made the ordinary way: a 0-byte file is there already (as when another process
    has just created it), so the image is not put and every migration runs on the file."""
    directory.mkdir()
    path = directory / DATABASE_FILENAME
    private_file(path)
    assert not new_store_image.place_new_store(path)
    Database(path).close()
    return path


def _described(path: Path) -> dict[str, object]:
    conn = sqlite3.connect(path)
    try:
        pragmas = {
            name: conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in (
                "user_version",
                "application_id",
                "page_size",
                "auto_vacuum",
                "encoding",
                "journal_mode",
                "integrity_check",
            )
        }
        return {**pragmas, "dump": list(conn.iterdump())}
    finally:
        conn.close()


def test_a_store_put_from_the_image_is_the_store_migrating_in_place_makes(tmp_path: Path) -> None:
    placed = _made_from_image(tmp_path / "placed")
    migrated = _migrated_in_place(tmp_path / "migrated")
    described = _described(placed)
    assert described == _described(migrated)
    assert described["user_version"] == SCHEMA_VERSION and described["journal_mode"] == "wal"
    assert described["integrity_check"] == "ok"
    # Schema only: no table of a new store holds a row but FTS5's own structure records (nothing
    # one store's image could share with another, such as a salt or an id, is in it).
    dump = described["dump"]
    assert isinstance(dump, list) and any(line.startswith("CREATE TABLE") for line in dump)
    rows = [  # (a dump writes a virtual table's schema row into sqlite_master: schema, not a row)
        line
        for line in dump
        if line.startswith("INSERT INTO") and not line.startswith("INSERT INTO sqlite_master")
    ]
    assert rows and all(FTS5_SHADOW_ROW.match(line) for line in rows), rows
    assert stat.S_IMODE(placed.stat().st_mode) == 0o600
    assert placed.stat().st_nlink == 1  # no second name: written unnamed, then linked
    assert sorted(p.name for p in placed.parent.iterdir() if ".new-" in p.name) == []


def test_a_store_put_from_the_image_works_as_any_other(tmp_path: Path) -> None:
    settings = Settings.from_env({"PERSIST_DIRECTORY": str(tmp_path / "store")}, env_file=None)
    with MemoryManager(agent_id="ada", settings=settings) as memory:
        memory.core_memory_append("human", "Ada keeps bees")
        memory.store_message("user", "the hives are on the roof")
        assert memory.search_messages("hives")
    with MemoryManager(agent_id="ada", settings=settings) as memory:
        assert "Ada keeps bees" in memory.get_system_prompt_addition()


def test_nothing_is_put_where_a_file_or_a_log_is(tmp_path: Path) -> None:
    path = tmp_path / DATABASE_FILENAME
    private_file(path)
    assert not new_store_image.place_new_store(path)
    assert path.stat().st_size == 0
    path.unlink()
    for suffix in ("-wal", "-journal"):  # SQLite would replay it into a new file
        log = tmp_path / f"{DATABASE_FILENAME}{suffix}"
        log.write_bytes(b"a log left by a store that is gone")
        assert not new_store_image.place_new_store(path)
        assert not path.exists() and log.read_bytes() == b"a log left by a store that is gone"
        log.unlink()
    path.symlink_to(tmp_path / "elsewhere")  # a dangling link is something there too
    assert not new_store_image.place_new_store(path)
    assert not (tmp_path / "elsewhere").exists()


def test_a_file_that_cannot_be_linked_into_place_is_migrated_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(source: object, target: object, **options: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(whole_file.os, "link", refused)
    path = tmp_path / DATABASE_FILENAME
    assert not new_store_image.place_new_store(path)
    assert sorted(tmp_path.iterdir()) == []  # the staged copy is gone too
    Database(path).close()
    monkeypatch.undo()
    assert _described(path) == _described(_made_from_image(tmp_path / "placed"))


def test_another_process_making_the_store_first_keeps_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / DATABASE_FILENAME
    link = os.link

    def theirs_first(source: str, target: str, **options: Any) -> None:
        private_file(path)  # the other process's open: SQLite's file, empty as yet
        Database(path).close()  # its store, made the ordinary way, meanwhile
        with sqlite3.connect(path) as conn:
            conn.execute("INSERT INTO agents (agent_id, created_at) VALUES ('theirs', 'now')")
        link(source, target, **options)

    monkeypatch.setattr(whole_file.os, "link", theirs_first)
    assert not new_store_image.place_new_store(path)
    monkeypatch.undo()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT agent_id FROM agents").fetchall() == [("theirs",)]
    assert [p.name for p in tmp_path.iterdir() if ".new-" in p.name] == []


def _open_and_write(storage: str, gate: str, count: int, number: int) -> None:
    Path(gate, str(number)).touch()
    while len(os.listdir(gate)) < count:
        time.sleep(0.001)
    settings = Settings.from_env({"PERSIST_DIRECTORY": storage}, env_file=None)
    with MemoryManager(agent_id=f"agent-{number}", settings=settings) as memory:
        memory.core_memory_append("human", f"written by process {number}")


def test_processes_creating_one_store_at_once_all_write_into_it(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    storage = tmp_path / "store"
    run_workers(_open_and_write, [(str(storage), str(gate), 6, n) for n in range(6)])
    with sqlite3.connect(storage / DATABASE_FILENAME) as conn:
        agents = conn.execute("SELECT agent_id FROM agents ORDER BY agent_id").fetchall()
    assert agents == [(f"agent-{n}",) for n in range(6)]
    assert [p.name for p in storage.iterdir() if ".new-" in p.name] == []


def test_an_encrypted_store_is_migrated_in_place(tmp_path: Path) -> None:
    pytest.importorskip("sqlcipher3")
    from memory_agent.privacy.encryption_key import parse_key
    from memory_agent.store import cipher

    path = tmp_path / DATABASE_FILENAME
    Database(path, encryption_key=parse_key("correct horse battery staple", "test")).close()
    assert cipher.store_kind(path) == "encrypted"


def test_opening_a_store_that_is_there_makes_no_image(tmp_path: Path) -> None:
    """Most opens are of an existing store: they pay nothing for the image."""
    path = _migrated_in_place(tmp_path / "there")
    new_store_image.migrated_image.cache_clear()
    Database(path).close()
    assert new_store_image.migrated_image.cache_info().misses == 0
