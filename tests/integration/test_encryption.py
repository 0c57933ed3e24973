"""Encryption at rest: an encrypted memory.db, the key never shown, refusals that change nothing,
rekey, and a vector store that holds no text (issue 26, item 3; docs/encryption.md)."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import struct
import sys
import traceback
from pathlib import Path

import pytest
from backends import backend_environ
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_agent import EncryptionKeyError, MemoryManager, Settings
from memory_agent.errors import ConfigurationError, MemoryAgentError, StorageError
from memory_agent.maintenance.admin import reencrypt_storage
from memory_agent.privacy.encryption_key import EncryptionKey, parse_key
from memory_agent.store import cipher
from memory_agent.store.database import DATABASE_FILENAME, Database
from memory_agent.store.snapshot import store_snapshot

pytest.importorskip(
    "sqlcipher3", reason="the encryption extra is not installed (pip install -e '.[encryption]')"
)

KEY = "correct horse battery staple"
OTHER = "another long passphrase"
MARKER = "ZQXMARKER-7731-unique"

ENCRYPTED = pytest.mark.sqlite_only(
    reason="SQLCipher encrypts the SQLite file; a PostgreSQL server encrypts "
    "its data at rest itself (docs/encryption.md)"
)


def settings_for(directory: Path, key: str | None = KEY) -> Settings:
    environ = {"PERSIST_DIRECTORY": str(directory)}
    if key is not None:
        environ["MEMORY_ENCRYPTION_KEY"] = key
    return Settings.from_env(backend_environ(environ), env_file=None)


def fill(directory: Path, key: str | None = KEY) -> None:
    """A store holding the marker in a block, a message and a passage."""
    with MemoryManager(settings=settings_for(directory, key)) as memory:
        memory.core_memory_append("human", f"The user's code word is {MARKER}.")
        memory.store_message("user", f"remember {MARKER} please")
        memory.archival_memory_insert(f"A note about {MARKER} for later.")


def files_of(directory: Path) -> dict[str, str]:
    """Every file under the directory and the hash of its bytes."""
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def holding(directory: Path, text: str) -> list[str]:
    return [
        str(path)
        for path in directory.rglob("*")
        if path.is_file() and text.encode() in path.read_bytes()
    ]


@ENCRYPTED
def test_no_file_of_an_encrypted_store_holds_the_text_written_to_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    memory = MemoryManager(settings=settings_for(store))
    memory.core_memory_append("human", f"The user's code word is {MARKER}.")
    memory.store_message("user", f"remember {MARKER} please")
    memory.archival_memory_insert(f"A note about {MARKER} for later.")
    assert (store / f"{DATABASE_FILENAME}-wal").is_file()  # written, not yet checkpointed
    assert holding(store, MARKER) == []  # while open: the WAL is encrypted too
    assert MARKER in memory.archival_memory_search("note for later")[0].passage.content
    memory.close()
    assert cipher.store_kind(store / DATABASE_FILENAME) == "encrypted"
    assert holding(store, MARKER) == []
    # Not even the schema's words are readable in the database's files. (Not asked of chroma/: its
    # HNSW files are binary vectors in which any short byte string may turn up.)
    assert [
        name
        for name in holding(store, "CREATE TABLE") + holding(store, "human")
        if "chroma" not in name
    ] == []
    with MemoryManager(settings=settings_for(store)) as again:
        assert MARKER in again.get_block("human").value


@ENCRYPTED
def test_a_plain_store_does_hold_the_text_so_the_grep_above_can_fail(tmp_path: Path) -> None:
    fill(tmp_path / "store", key=None)
    found = holding(tmp_path / "store", MARKER)
    assert any(DATABASE_FILENAME in name for name in found)
    assert not any("chroma" in name for name in found)  # the vector store never holds text


@pytest.mark.usefixtures("backend")
def test_with_a_key_the_vector_store_holds_ids_and_vectors_only(tmp_path: Path) -> None:
    """On PostgreSQL the key encrypts nothing of the server's, and Chroma still gets no text."""
    store = tmp_path / "store"
    with MemoryManager(settings=settings_for(store)) as memory:
        memory.archival_memory_insert(f"A note about {MARKER} for later.", tags=["notes"])
        hits = memory.archival_memory_search(f"{MARKER} note")
        assert hits and MARKER in hits[0].passage.content  # the text comes back from the database
        assert memory.reconcile_archival().still_pending == 0
    chroma = store / "chroma"
    assert chroma.is_dir() and any(chroma.rglob("*"))
    assert holding(chroma, MARKER) == []
    assert holding(chroma, "A note about") == []


def unused_capacity(segment: Path) -> bytes:
    """The part of an HNSW segment's vector file past its live elements (hnswlib's header: a 4-byte
    version, then offsetLevel0, max_elements, cur_element_count, size_data_per_element as 8-byte
    little-endian integers)."""
    _, capacity, count, size = struct.unpack_from("<4Q", (segment / "header.bin").read_bytes(), 4)
    data = (segment / "data_level0.bin").read_bytes()
    assert len(data) == capacity * size  # the whole capacity is on disk, used or not
    return data[count * size :]


@pytest.mark.usefixtures("backend")
def test_the_unused_capacity_chroma_writes_is_zeros_not_stale_memory(tmp_path: Path) -> None:
    """hnswlib writes its whole preallocated capacity when it creates an index; the heap is
    zero-filled (privacy/heap_zeroing.py), so none of it is memory this process used before.
    With zero-filling turned off, 6 of 8 runs of this test (then with three stores per run instead
    of two) found stale heap bytes there."""
    for attempt in range(2):
        store = tmp_path / f"store{attempt}"
        with MemoryManager(settings=settings_for(store)) as memory:
            memory.core_memory_append("human", f"The user's code word is {MARKER}. " * 20)
            for n in range(4):
                memory.store_message("user", f"remember {MARKER} please, number {n}")
                memory.archival_memory_insert(f"A note about {MARKER} for later. " * (1 + 9 * n))
            assert memory.reconcile_archival().still_pending == 0
        segments = [path.parent for path in (store / "chroma").rglob("header.bin")]
        assert segments
        for segment in segments:
            tail = unused_capacity(segment)
            assert tail and tail.count(0) == len(tail), f"{segment} holds stale bytes"


@ENCRYPTED
@pytest.mark.parametrize("case", ["wrong key", "no key", "key for a plain store"])
def test_a_key_that_does_not_fit_is_one_error_and_changes_nothing(
    tmp_path: Path, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    fill(store, key=None if case == "key for a plain store" else KEY)
    before = files_of(store)
    given = {"wrong key": OTHER, "no key": None, "key for a plain store": KEY}[case]
    with caplog.at_level(logging.DEBUG), pytest.raises(EncryptionKeyError) as raised:
        MemoryManager(settings=settings_for(store, given))
    message = str(raised.value)
    assert "nothing was opened or changed" in message.lower()
    assert ("MEMORY_ENCRYPTION_KEY" in message) and KEY not in message and OTHER not in message
    assert KEY not in caplog.text and OTHER not in caplog.text
    assert files_of(store) == before  # same files (no -wal, no -shm created), same bytes
    with pytest.raises(EncryptionKeyError):
        Database(
            store / DATABASE_FILENAME,
            encryption_key=None if given is None else parse_key(given, "test"),
        )
    assert files_of(store) == before


@ENCRYPTED
def test_the_driver_missing_is_one_error_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sqlcipher3", None)
    with pytest.raises(ConfigurationError, match=r"memory-agent\[encryption\]"):
        MemoryManager(settings=settings_for(tmp_path / "store"))


@ENCRYPTED
def test_the_encrypted_connection_raises_sqlite3s_own_errors(tmp_path: Path) -> None:
    """The code above the store catches sqlite3's classes and reads their codes: SQLCipher's
    exceptions arrive translated, with the same codes, from execute, fetch and commit alike."""
    path = tmp_path / "plain.db"
    conn = cipher.connect(path, parse_key(KEY, "test"), timeout=1)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
    conn.execute("INSERT INTO t VALUES (1, 'a')")
    with pytest.raises(sqlite3.IntegrityError) as duplicate:
        conn.execute("INSERT INTO t VALUES (1, 'b')")
    # The driver reports primary result codes (the stdlib extended ones); the store compares primary
    # codes.
    assert duplicate.value.sqlite_errorcode & 0xFF == sqlite3.SQLITE_CONSTRAINT
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        conn.execute("SELECT * FROM missing")
    with pytest.raises(
        (sqlite3.ProgrammingError, sqlite3.InterfaceError), match="binding parameter"
    ):
        conn.execute(
            "SELECT ?", (object(),)
        )  # the driver's class is InterfaceError, the stdlib's Programming
    conn.row_factory = sqlite3.Row
    row = conn.execute("SELECT id, v FROM t").fetchone()
    assert (row["id"], row["v"], list(row.keys())) == (1, "a", ["id", "v"])
    conn.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


@ENCRYPTED
def test_the_store_translates_encrypted_failures_into_its_own_errors(tmp_path: Path) -> None:
    with Database(
        tmp_path / "store" / DATABASE_FILENAME, encryption_key=parse_key(KEY, "test")
    ) as db:
        with pytest.raises(StorageError, match="refused the operation"), db.transaction() as conn:
            conn.execute("INSERT INTO agents (agent_id, name, created_at) VALUES ('a', 'a', 'now')")
            conn.execute("INSERT INTO agents (agent_id, name, created_at) VALUES ('a', 'a', 'now')")
        with db.reading() as conn:
            assert conn.execute("SELECT count(*) FROM agents").fetchone()[0] == 0
        with (
            pytest.raises(ConfigurationError, match="type SQLite cannot store"),
            db.transaction() as conn,
        ):
            conn.execute(
                "INSERT INTO agents (agent_id, name, created_at) VALUES (?, 'a', 'now')",
                (object(),),
            )


@ENCRYPTED
def test_vacuum_and_checkpoint_work_on_an_encrypted_store(tmp_path: Path) -> None:
    """What a purge runs to leave no byte behind works on SQLCipher too."""
    store = tmp_path / "store"
    with Database(store / DATABASE_FILENAME, encryption_key=parse_key(KEY, "test")) as db:
        with db.transaction() as conn:
            conn.execute(
                "INSERT INTO agents (agent_id, name, created_at) VALUES ('a', ?, 'now')", (MARKER,)
            )
        with db.transaction() as conn:
            conn.execute("DELETE FROM agents WHERE agent_id = 'a'")
        with db.reading() as conn:
            conn.execute("PRAGMA secure_delete = ON")
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            conn.execute("VACUUM")
            assert busy == 0
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert cipher.store_kind(store / DATABASE_FILENAME) == "encrypted"
    assert holding(store, MARKER) == []


@ENCRYPTED
def test_rekey_rotates_the_key_and_keeps_every_row(tmp_path: Path) -> None:
    store = tmp_path / "store"
    fill(store)
    with Database(store / DATABASE_FILENAME, encryption_key=parse_key(KEY, "test")) as db:
        before = store_snapshot(db)
    assert reencrypt_storage(store, parse_key(KEY, "old"), parse_key(OTHER, "new")) == "rekeyed"
    assert sorted(path.name for path in store.iterdir()) == ["chroma", DATABASE_FILENAME]
    assert (
        store / DATABASE_FILENAME
    ).stat().st_mode & 0o777 == 0o600  # the new file is owner-only too
    with pytest.raises(EncryptionKeyError):
        MemoryManager(settings=settings_for(store, KEY))
    with MemoryManager(settings=settings_for(store, OTHER)) as memory:
        assert store_snapshot(memory.database) == before
        assert MARKER in memory.archival_memory_search("note for later")[0].passage.content
    assert holding(store, MARKER) == []


@ENCRYPTED
def test_rekey_encrypts_a_plain_store_and_decrypts_it_again(tmp_path: Path) -> None:
    store = tmp_path / "store"
    fill(store, key=None)
    with Database(store / DATABASE_FILENAME) as db:
        before = store_snapshot(db)
    assert reencrypt_storage(store, None, parse_key(KEY, "new")) == "encrypted"
    assert holding(store, MARKER) == []
    with MemoryManager(settings=settings_for(store, KEY)) as memory:
        assert store_snapshot(memory.database) == before
    assert reencrypt_storage(store, parse_key(KEY, "old"), None) == "decrypted"
    assert cipher.store_kind(store / DATABASE_FILENAME) == "plain"
    with MemoryManager(settings=settings_for(store, None)) as memory:
        assert store_snapshot(memory.database) == before


@ENCRYPTED
def test_rekey_refuses_a_wrong_key_a_store_in_use_and_postgresql_changing_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cipher, "BUSY_WAIT_S", 0.2)  # the reader below never lets go: no 2 s wait
    store = tmp_path / "store"
    fill(store)
    before = files_of(store)
    with pytest.raises(EncryptionKeyError):
        reencrypt_storage(store, parse_key(OTHER, "old"), parse_key("a third passphrase", "new"))
    with pytest.raises(ConfigurationError, match="already has"):
        reencrypt_storage(store, parse_key(KEY, "old"), parse_key(KEY, "new"))
    with pytest.raises(ConfigurationError, match="PostgreSQL|server"):
        reencrypt_storage(
            store, parse_key(KEY, "old"), parse_key(OTHER, "new"), database_url="postgresql://h/db"
        )
    assert files_of(store) == before
    reader = Database(store / DATABASE_FILENAME, encryption_key=parse_key(KEY, "test"))
    try:
        with reader.transaction() as conn:
            conn.execute("DELETE FROM messages WHERE 0")
            conn.execute("INSERT INTO agents (agent_id, name, created_at) VALUES ('x', 'x', 'now')")
        with reader.reading() as conn:
            conn.execute("BEGIN")
            conn.execute("SELECT count(*) FROM agents").fetchone()  # a reader holding a snapshot
            with pytest.raises(MemoryAgentError, match="in use"):
                reencrypt_storage(store, parse_key(KEY, "old"), parse_key(OTHER, "new"))
            conn.execute("COMMIT")
    finally:
        reader.close()
    assert cipher.store_kind(store / DATABASE_FILENAME) == "encrypted"
    with MemoryManager(settings=settings_for(store, KEY)) as memory:
        assert MARKER in memory.get_block("human").value


@ENCRYPTED
def test_a_process_holding_the_old_file_is_refused_its_next_write_after_rekey(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    fill(store)
    stale = Database(store / DATABASE_FILENAME, encryption_key=parse_key(KEY, "test"))
    try:
        reencrypt_storage(store, parse_key(KEY, "old"), parse_key(OTHER, "new"))
        with pytest.raises(StorageError, match="replaced"), stale.transaction() as conn:
            conn.execute("DELETE FROM messages")
    finally:
        stale.close()
    with MemoryManager(settings=settings_for(store, OTHER)) as memory:
        assert memory.get_recent_messages()


@ENCRYPTED
def test_migrations_run_on_an_encrypted_store(tmp_path: Path) -> None:
    """A new encrypted store is created at the latest schema, like a plain one."""
    key = parse_key(KEY, "test")
    with (
        Database(tmp_path / "a" / DATABASE_FILENAME, encryption_key=key) as encrypted,
        Database(tmp_path / "b" / DATABASE_FILENAME) as plain,
    ):
        with encrypted.reading() as one, plain.reading() as two:
            assert (
                one.execute("PRAGMA user_version").fetchone()[0]
                == two.execute("PRAGMA user_version").fetchone()[0]
            )
            schema = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
            assert [tuple(r) for r in one.execute(schema)] == [
                tuple(r) for r in two.execute(schema)
            ]


@ENCRYPTED
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    old=st.one_of(st.none(), st.just(KEY), st.text(max_size=30)),
    new=st.one_of(st.none(), st.just(KEY), st.text(max_size=30)),
)
def test_rekey_with_any_keys_raises_only_the_projects_errors_and_changes_nothing_on_refusal(
    tmp_path_factory: pytest.TempPathFactory, old: str | None, new: str | None
) -> None:
    store = tmp_path_factory.mktemp("rekey") / "store"
    with Database(store / DATABASE_FILENAME, encryption_key=parse_key(KEY, "test")) as db:
        with db.transaction() as conn:
            conn.execute(
                "INSERT INTO agents (agent_id, name, created_at) VALUES ('a', ?, 'now')", (MARKER,)
            )
    before = files_of(store)
    try:
        old_key = None if old is None else parse_key(old, "old")
        new_key = None if new is None else parse_key(new, "new")
        done = reencrypt_storage(store, old_key, new_key)
    except MemoryAgentError as error:
        assert files_of(store) == before
        for text in (old, new, KEY):
            assert not text or len(text) < 8 or text not in str(error)
        return
    assert old == KEY and done in ("rekeyed", "decrypted")
    with Database(store / DATABASE_FILENAME, encryption_key=new_key) as db, db.reading() as conn:
        assert conn.execute("SELECT name FROM agents").fetchone()[0] == MARKER


@ENCRYPTED
def test_a_wrong_key_leaves_a_live_wal_untouched(tmp_path: Path) -> None:
    """A store whose log still holds frames (another process is writing, or died) is not touched."""
    store = tmp_path / "store"
    writer = MemoryManager(settings=settings_for(store))
    try:
        writer.core_memory_append("human", f"code {MARKER}")
        assert (store / f"{DATABASE_FILENAME}-wal").stat().st_size > 0
        before = files_of(store)
        for given in (OTHER, None):
            with pytest.raises(EncryptionKeyError):
                Database(
                    store / DATABASE_FILENAME,
                    encryption_key=None if given is None else parse_key(given, "t"),
                )
        assert files_of(store) == before
        assert MARKER in writer.get_block("human").value
    finally:
        writer.close()


@ENCRYPTED
@pytest.mark.slow  # about 15 stores, each opened with a key derivation
async def test_the_sdk_session_store_passes_its_conformance_suite_on_an_encrypted_store(
    tmp_path: Path,
) -> None:
    from claude_agent_sdk.testing import run_session_store_conformance

    from memory_agent import SQLiteSessionStore

    key = parse_key(KEY, "test")
    opened: list[SQLiteSessionStore] = []

    def make_store() -> SQLiteSessionStore:
        opened.append(SQLiteSessionStore.open(tmp_path / f"db{len(opened)}", encryption_key=key))
        return opened[-1]

    try:
        await run_session_store_conformance(make_store)
    finally:
        for each in opened:
            each.close()
    assert opened and all(
        cipher.store_kind(tmp_path / f"db{n}" / DATABASE_FILENAME) == "encrypted"
        for n in range(len(opened))
    )


@ENCRYPTED
def test_a_raw_key_opens_without_key_derivation_and_a_different_one_is_refused(
    tmp_path: Path,
) -> None:
    raw = "x'" + "3a" * 32 + "'"
    store = tmp_path / "store"
    fill(store, key=raw)
    assert holding(store, MARKER) == []
    with MemoryManager(settings=settings_for(store, raw)) as memory:
        assert MARKER in memory.get_block("human").value
    with pytest.raises(EncryptionKeyError):
        MemoryManager(settings=settings_for(store, "x'" + "3b" * 32 + "'"))
    with pytest.raises(EncryptionKeyError):  # the same text is a passphrase once the form is broken
        MemoryManager(settings=settings_for(store, "x'" + "3a" * 32))


@pytest.fixture
def encrypted_file(tmp_path: Path) -> Path:
    """An encrypted file holding one row, made with SQLCipher's own key derivation."""
    path = tmp_path / DATABASE_FILENAME
    conn = cipher.connect(path, parse_key(KEY, "test"), timeout=1.0)
    conn.execute("CREATE TABLE t (x TEXT)")
    conn.execute("INSERT INTO t VALUES ('kept')")
    conn.close()
    return path


@ENCRYPTED
def test_a_process_derives_a_files_key_once_and_sqlcipher_takes_it_raw(
    encrypted_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = encrypted_file
    cipher._derived_key.cache_clear()
    given: list[bytes | None] = []
    keyed = cipher._keyed

    def recording(raw: object, key: EncryptionKey, salt: bytes | None) -> None:
        given.append(salt)
        keyed(raw, key, salt)

    monkeypatch.setattr(cipher, "_keyed", recording)
    key = parse_key(KEY, "test")
    for target, uri in ((str(path), False), (path.as_uri() + "?mode=ro", True), (str(path), False)):
        conn = cipher.connect(target, key, timeout=1.0, uri=uri)
        assert conn.execute("SELECT x FROM t").fetchall() == [("kept",)]
        conn.close()
    assert cipher._derived_key.cache_info().misses == 1
    assert given == [path.read_bytes()[: cipher.SALT_BYTES]] * 3  # the raw key each time


@ENCRYPTED
def test_a_raw_key_that_does_not_open_the_file_falls_back_to_the_passphrase(
    tmp_path: Path, encrypted_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As when another process re-encrypts the file between the read of its salt and the open."""
    path = encrypted_file
    monkeypatch.setattr(cipher, "_derived_key", lambda key, salt: bytes(32))
    conn = cipher.connect(path, parse_key(KEY, "test"), timeout=1.0)
    assert conn.execute("SELECT x FROM t").fetchall() == [("kept",)]
    conn.close()
    before = files_of(tmp_path)
    with pytest.raises(EncryptionKeyError):
        cipher.connect(path, parse_key(OTHER, "test"), timeout=1.0)
    assert files_of(tmp_path) == before


@ENCRYPTED
def test_a_raw_key_in_either_case_is_given_to_sqlcipher_as_it_is(tmp_path: Path) -> None:
    """SQLCipher takes x'...' and X'...' alike as a raw key: deriving from it would be wasted."""
    for n, prefix in enumerate("xX"):
        path = tmp_path / f"{n}.db"
        key = parse_key(prefix + "'" + "ab" * 32 + "'", "test")
        conn = cipher.connect(path, key, timeout=1.0)
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.close()
        cipher._derived_key.cache_clear()
        cipher.connect(path, key, timeout=1.0).close()
        assert cipher._derived_key.cache_info().misses == 0


@ENCRYPTED
def test_no_local_variable_on_a_wrong_keys_traceback_holds_a_key(encrypted_file: Path) -> None:
    """Error reporters (Sentry, rich, loguru, pytest -l) record each frame's locals."""
    path = encrypted_file
    cipher.connect(path, parse_key(KEY, "test"), timeout=1.0).close()  # a raw key derived
    typo = KEY[:-1] + "E"
    with pytest.raises(EncryptionKeyError) as caught:
        cipher.connect(path, parse_key(typo, "test"), timeout=1.0)
    error = caught.value
    assert error.__traceback__ is not None
    below_this_test = error.__traceback__.tb_next  # this frame holds the typo itself
    shown = "".join(
        traceback.TracebackException(
            type(error), error, below_this_test, capture_locals=True
        ).format()
    )
    assert "_keyed_and_proven" in shown
    salt = path.read_bytes()[: cipher.SALT_BYTES]
    for secret in (typo, cipher._derived_key(parse_key(typo, "test"), salt).hex()):
        assert secret not in shown


@ENCRYPTED
def test_a_file_gone_after_its_salt_was_read_is_made_again_with_a_new_salt(
    encrypted_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = encrypted_file
    old_salt = path.read_bytes()[: cipher.SALT_BYTES]
    salts_to_try = cipher._salts_to_try

    def then_deleted(key: EncryptionKey, file: Path) -> list[bytes | None]:
        found = salts_to_try(key, file)
        file.unlink()
        return found

    monkeypatch.setattr(cipher, "_salts_to_try", then_deleted)
    conn = cipher.connect(path, parse_key(KEY, "test"), timeout=1.0)
    conn.execute("CREATE TABLE t (x TEXT)")
    conn.close()
    assert cipher.store_kind(path) == "encrypted"
    assert path.read_bytes()[: cipher.SALT_BYTES] != old_salt


@ENCRYPTED
def test_a_rekey_leaves_no_derived_key_in_the_process(encrypted_file: Path) -> None:
    path = encrypted_file
    cipher.connect(path, parse_key(KEY, "test"), timeout=1.0).close()
    assert cipher._derived_key.cache_info().currsize >= 1
    cipher.reencrypt(path, parse_key(KEY, "test"), parse_key(OTHER, "test"))
    assert cipher._derived_key.cache_info().currsize == 0
    conn = cipher.connect(path, parse_key(OTHER, "test"), timeout=1.0)
    assert conn.execute("SELECT x FROM t").fetchall() == [("kept",)]
    conn.close()
