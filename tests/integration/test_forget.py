"""Forget for real (issue 26, item 2): after a forget, no byte of the item is left in the store's
files.

The grep tests read every file under the storage dir as bytes (memory.db, its -wal and -shm, the
whole chroma dir) and, on PostgreSQL, the database's data files under the cluster's base/ after a
CHECKPOINT, and count a unique marker. Their only input is a mapping of settings
(`STORE_VARIANTS`): a variant of the store (an encrypted SQLite file, say) is one more entry.

On PostgreSQL they run beside the suite's template copies (`TemplateCopies`: a CREATE DATABASE
holds a transaction id, which keeps the forgotten row versions in VACUUM FULL's output): the
forget waits for such transactions (`store.scrub`), and the tests at the end of the module hold
one open on purpose.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from backends import backend_environ
from click.testing import CliRunner

from compaction import CompactionSettings
from memory_agent import MemoryManager, Settings
from memory_agent.archival import embeddings
from memory_agent.cli import cli
from memory_agent.errors import MemoryAgentError
from memory_agent.integrations.session_store import SQLiteSessionStore
from memory_agent.store import journal
from memory_agent.testing import ScriptedMessagesServer, text_response

pytestmark = pytest.mark.usefixtures("backend")

STORE_VARIANTS: dict[str, Mapping[str, str]] = {
    "plain": {},
    # SQLCipher (docs/encryption.md); a raw key skips the passphrase stretching, which costs ~0.5 s
    # per open.
    "encrypted": {"MEMORY_ENCRYPTION_KEY": "x'" + "5a" * 32 + "'"},
}
"""Settings added to every grep test's store, by name."""

FAST_RETRIES = {"retry_initial_wait": 0.01, "retry_max_wait": 0.02, "max_attempts": 1}

ONLY_POSTGRES = pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


@pytest.fixture(params=sorted(STORE_VARIANTS))
def variant(request: pytest.FixtureRequest) -> Mapping[str, str]:
    return STORE_VARIANTS[request.param]


@pytest.fixture
def marker() -> str:
    return "ZQX" + uuid.uuid4().hex.upper()


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with ScriptedMessagesServer() as running:
        yield running


PATIENT = {"MEMORY_FORGET_WAIT_SECONDS": "60"}
"""The grep tests' forgets wait for a concurrent template copy however slow the loaded machine
makes it (the default, 5 s, is for people; the tests at the end of the module try shorter)."""


def _settings(tmp_path: Path, variant: Mapping[str, str], **extra: str) -> Settings:
    return Settings.from_env(
        backend_environ(
            {"PERSIST_DIRECTORY": str(tmp_path / "store"), **PATIENT, **variant, **extra}
        ),
        env_file=None,
    )


def _manager(settings: Settings, agent_id: str = "agent-a") -> MemoryManager:
    return MemoryManager(
        agent_id=agent_id, settings=settings, compaction_settings=CompactionSettings(**FAST_RETRIES)
    )  # type: ignore[arg-type]  # floats and ints by name


def count_marker(settings: Settings, marker: str, request: pytest.FixtureRequest) -> dict[str, int]:
    """Where the marker's bytes are: every file of the storage dir, and on PostgreSQL the database's
    own data files after a CHECKPOINT (the WAL is the server operator's, see the docs)."""
    needle = marker.encode()
    found: dict[str, int] = {}
    roots = [settings.persist_directory]
    if settings.database_url:
        import psycopg

        with psycopg.connect(str(settings.database_url), autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            oid = conn.execute(
                "SELECT oid FROM pg_database WHERE datname = current_database()"
            ).fetchone()[0]
        roots.append(request.getfixturevalue("postgres_cluster").data / "base" / str(oid))
    for root in roots:
        for path in Path(root).rglob("*"):
            if path.is_file():
                hits = path.read_bytes().count(needle)
                if hits:
                    found[str(path)] = hits
    return found


def _chain_ok(memory: MemoryManager) -> journal.ChainReport:
    with memory.database.reading() as conn:
        return journal.verify_chain(conn)


def _mirror(settings: Settings, session_id: str, lines: list[dict[str, Any]]) -> None:
    with SQLiteSessionStore.open(
        settings.persist_directory, settings.database_url, encryption_key=settings.encryption_key
    ) as store:
        asyncio.run(store.append({"project_key": "p", "session_id": session_id}, lines))  # type: ignore[typeddict-item]  # a minimal key


def test_a_forgotten_passage_leaves_no_byte(
    tmp_path: Path, variant: Mapping[str, str], marker: str, request: pytest.FixtureRequest
) -> None:
    settings = _settings(tmp_path, variant)
    memory = _manager(settings)
    older = memory.archival_memory_insert(
        f"First note: the door code is {marker}-1", tags=[f"{marker}tag"]
    )
    target = memory.archival_memory_insert(
        f"The door code is {marker}", tags=[f"{marker}tag"], importance=0.9
    )
    memory.supersede_passage(older, target)  # its chain: the older version goes with it
    merged = memory.archival_memory_insert(
        f"Facts: The door code is {marker}; the cat is grey"
    )  # holds its text
    kept = memory.archival_memory_insert("The garden gate is painted green")
    memory.store_message(
        "assistant", f"I stored: The door code is {marker}"
    )  # a copy in the conversation
    memory.core_memory_append(
        "human", f"The door code is {marker}"
    )  # and in a block, with versions
    memory.core_memory_append("human", "Prefers tea")
    assert memory.archival_memory_search(marker, mode="hybrid")
    if not variant:  # the plain store shows the marker's bytes before: the grep can see it
        assert count_marker(settings, marker, request)

    report = memory.forget_passage(target)

    assert (
        report.passages == 3
        and report.journal_entries_redacted >= 3
        and report.copies_redacted >= 2
    )
    assert memory.archival_memory_get(older) is None and memory.archival_memory_get(merged) is None
    assert memory.archival_memory_get(kept) is not None
    assert _chain_ok(memory).ok
    forget_entry = memory.journal(limit=1)[0]
    assert (forget_entry.action, forget_entry.target_type, forget_entry.target_id) == (
        "forget",
        "passage",
        target,
    )
    assert (
        forget_entry.old_value is None
        and forget_entry.new_value is None
        and marker not in str(forget_entry)
    )
    memory.close()
    assert count_marker(settings, marker, request) == {}


def test_a_forget_drops_the_vectors_this_process_keeps_for_reuse(
    tmp_path: Path, marker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vector says something of its text, so the process's reuse cache
    (`embeddings.VECTOR_CACHE_ENTRIES`) goes with a forget: the forgotten text is embedded
    afresh if it comes again."""
    memory = _manager(_settings(tmp_path, {}))
    text = f"The door code is {marker}"
    passage = memory.archival_memory_insert(text)
    runs: list[int] = []
    real = embeddings._embed_ids

    def counting(model: Any, rows: list[list[int]]) -> Any:
        runs.append(len(rows))
        return real(model, rows)

    monkeypatch.setattr(embeddings, "_embed_ids", counting)
    assert memory.archival_memory_search(text, mode="hybrid")[0].passage_id == passage
    assert runs == []  # hybrid search embeds the query as written: the passage's kept vector
    memory.forget_passage(passage)
    assert memory.archival_memory_search(text, mode="hybrid") == []
    assert runs == [1]
    memory.close()


class _NotedLock:
    """A lock that notes when a second thread has to wait for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waited = threading.Event()

    def __enter__(self) -> _NotedLock:
        if not self._lock.acquire(blocking=False):
            self.waited.set()
            self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_a_message_forgotten_while_its_vectors_are_written_keeps_no_vector(
    tmp_path: Path, marker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's background indexing read the message before the forget's commit and is
    embedding it: its vectors must not be stored after the forget removed them."""
    memory = _manager(_settings(tmp_path, {}))
    message = memory.store_message("user", f"My bank PIN is {marker}")
    assert message is not None
    writing = _NotedLock()
    monkeypatch.setattr(memory._message_vectors, "_writing", writing)
    real = embeddings._embed_ids
    embedding, go_on = threading.Event(), threading.Event()

    def held(model: Any, rows: list[list[int]]) -> Any:
        embedding.set()
        assert go_on.wait(30)
        return real(model, rows)

    monkeypatch.setattr(embeddings, "_embed_ids", held)
    indexing = threading.Thread(target=memory.index_message_vectors)
    indexing.start()
    assert embedding.wait(30)
    forgetting = threading.Thread(target=memory.forget_message, args=(message.message_id,))
    forgetting.start()
    while forgetting.is_alive() and not writing.waited.wait(0.05):
        pass  # until the forget has finished, or waits for the batch being written
    go_on.set()
    indexing.join(30)
    forgetting.join(60)
    assert not indexing.is_alive() and not forgetting.is_alive()
    assert memory._message_vectors.store.ids("agent-a") == set()
    memory.close()


def test_a_forgotten_message_leaves_no_byte_and_its_summaries_are_rewritten_by_the_model(
    tmp_path: Path,
    variant: Mapping[str, str],
    marker: str,
    server: ScriptedMessagesServer,
    request: pytest.FixtureRequest,
) -> None:
    settings = _settings(tmp_path, variant, ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="k")
    memory = _manager(settings)
    sdk_uuid = str(uuid.uuid4())
    for number in range(12):
        memory.store_message("user", f"Ordinary message number {number} about the weekly plan")
        if number == 3:
            memory.store_message(
                "user", f"My passport number is {marker}", session_id="s1", sdk_uuid=sdk_uuid
            )
    long_prompt = (
        f"My passport number is {marker}. " + "and some long context " * 40
    )  # the sidecar clips it
    _mirror(
        settings,
        "s1",
        [
            {
                "type": "user",
                "uuid": sdk_uuid,
                "sessionId": "s1",
                "timestamp": "2026-01-01T00:00:00Z",
                "message": {"role": "user", "content": long_prompt},
            },
            {
                "type": "user",
                "uuid": str(uuid.uuid4()),
                "sessionId": "s1",
                "message": {"role": "user", "content": "A later, ordinary prompt"},
            },
        ],
    )
    server.enqueue(
        text_response(f"The user shared a passport number, {marker}, and a weekly plan."),
        model="haiku",
    )
    assert memory.compact_history().status == "compacted"
    assert marker in (memory.get_summary() or "")
    target = next(m for m in memory.all_messages() if marker in m.text)
    indexed = memory.archival_memory_insert(
        "Noted the travel documents", context=f"User: {target.text}"
    )
    kept = memory.archival_memory_insert(
        "Noted the weekly plan", context="User: Ordinary message number 2"
    )
    server.enqueue(text_response("The user discussed a weekly plan."), model="haiku")

    report = memory.forget_message(target.message_id)

    assert report.messages == 1 and report.summaries_rewritten == 1 and report.summariser == "model"
    assert memory.archival_memory_get(indexed) is None  # its context quoted the forgotten turn
    assert memory.archival_memory_get(kept) is not None
    assert memory.get_summary() == "The user discussed a weekly plan."
    request_text = str(server.message_requests(model="haiku")[-1].messages)
    assert marker not in request_text and "Ordinary message number 2" in request_text
    assert _chain_ok(memory).ok
    memory.close()
    assert count_marker(settings, marker, request) == {}


def test_without_a_model_the_rules_rewrite_the_summary_and_say_so(
    tmp_path: Path,
    variant: Mapping[str, str],
    marker: str,
    server: ScriptedMessagesServer,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with_model = _settings(tmp_path, variant, ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="k")
    memory = _manager(with_model)
    for number in range(10):
        memory.store_message(
            "user", f"Plain message {number}" if number != 2 else f"Secret {marker} here"
        )
    server.enqueue(text_response(f"Summary mentioning {marker}."), model="haiku")
    assert memory.compact_history().status == "compacted"
    memory.close()
    memory = _manager(_settings(tmp_path, variant))  # no model configured now
    target = next(m for m in memory.all_messages() if marker in m.text)

    report = memory.forget_message(target.message_id)

    assert report.summariser == "rules" and any(
        "no model is configured" in w for w in report.warnings
    )
    assert "no model is configured" in caplog.text
    record = memory.get_summary_record()
    assert record is not None and record.is_fallback and marker not in record.summary
    assert "Plain message 1" in record.summary
    memory.close()
    assert count_marker(_settings(tmp_path, variant), marker, request) == {}


def test_a_forgotten_block_leaves_no_byte(
    tmp_path: Path, variant: Mapping[str, str], marker: str, request: pytest.FixtureRequest
) -> None:
    settings = _settings(tmp_path, variant)
    memory = _manager(settings)
    memory.create_block("medical", f"Allergy: {marker}")
    memory.core_memory_append("medical", "Blood type O")
    memory.core_memory_replace("medical", "Blood type O", "Blood type A")
    memory.store_message("assistant", f"The block now reads: Allergy: {marker}")
    memory.core_memory_append("human", "Likes hiking")

    report = memory.forget_block("medical")

    assert report.blocks == 1 and report.block_versions >= 3
    assert "medical" not in [b.label for b in memory.list_blocks()]
    assert "Likes hiking" in memory.get_block("human").value
    assert _chain_ok(memory).ok
    memory.close()
    assert count_marker(settings, marker, request) == {}


def test_a_forgotten_agent_leaves_no_byte(
    tmp_path: Path, variant: Mapping[str, str], marker: str, request: pytest.FixtureRequest
) -> None:
    settings = _settings(tmp_path, variant)
    memory = _manager(settings, "keeper")
    memory.ensure_agent("leaver")
    memory.archival_memory_insert(f"Leaver's passage {marker}", agent_id="leaver")
    memory.store_message("user", f"Leaver said {marker}", agent_id="leaver", session_id="s-leaver")
    memory.core_memory_append("human", f"Leaver fact {marker}", agent_id="leaver")
    memory.archival_memory_insert("Keeper's own passage about sailing")
    _mirror(
        settings, "s-leaver", [{"type": "user", "uuid": str(uuid.uuid4()), "message": f"{marker}"}]
    )

    report = memory.forget_agent("leaver")

    assert report.passages == 1 and report.messages == 1 and report.session_rows == 1
    assert "leaver" not in memory.list_agents()
    assert [h.passage.content for h in memory.archival_memory_search("sailing", mode="hybrid")] == [
        "Keeper's own passage about sailing"
    ]
    assert _chain_ok(memory).ok
    memory.close()
    assert count_marker(settings, marker, request) == {}


def test_forgetting_a_block_takes_the_reasons_of_its_rewrites(
    tmp_path: Path, variant: Mapping[str, str], marker: str, request: pytest.FixtureRequest
) -> None:
    """memory_rethink keeps its reasoning as a passage: a derivative of the block, it goes with it
    (even after a rename), while the agent's other passages stay."""
    settings = _settings(tmp_path, variant)
    memory = _manager(settings)
    memory.create_block("medical", "Allergy: penicillin")
    memory.view_block("medical")
    memory.memory_rethink(
        "medical", "Allergy: none known", reasoning=f"the user said {marker} was a mistake"
    )
    memory.rename_block("medical", "health")
    kept = memory.archival_memory_insert("The user likes hiking in the hills.")

    report = memory.forget_block("health")

    assert report.passages == 1
    assert [p.passage_id for p in memory.archival_memory_list()] == [kept]
    assert _chain_ok(memory).ok
    memory.close()
    assert count_marker(settings, marker, request) == {}


def test_a_deleted_block_can_still_be_forgotten(
    tmp_path: Path, variant: Mapping[str, str], marker: str, request: pytest.FixtureRequest
) -> None:
    """Deleting keeps the value in the journal so that undo can bring it back; forgetting the
    deleted label must take that too (and undo then has nothing to restore)."""
    settings = _settings(tmp_path, variant)
    memory = _manager(settings)
    memory.create_block("medical", f"Allergy: {marker}", sensitivity="secret")
    memory.update_block("medical", value=f"Allergy: {marker} and latex", allow_secret=True)
    with memory.clearance(allow_secret=True):
        memory.delete_block("medical")
    memory.core_memory_append("human", "Likes hiking")

    report = memory.forget_block("medical")

    assert report.blocks == 1
    with pytest.raises(MemoryAgentError):
        memory.undo_block("medical")
    assert "Likes hiking" in memory.get_block("human").value
    assert _chain_ok(memory).ok
    memory.close()
    assert count_marker(settings, marker, request) == {}


def test_forgetting_never_touches_another_agents_memory(
    tmp_path: Path, variant: Mapping[str, str]
) -> None:
    """Copies are looked for in the memory of the agents that held the item: an agent that writes a
    text it knows another agent holds, then forgets it, must not erase that agent's block, messages,
    journal or transcript."""
    settings = _settings(tmp_path, variant)
    fact = "Bob's bank PIN hint is the year 1987"
    bob = _manager(settings, "bob")
    bob.core_memory_append("human", fact)
    bob.store_message("user", fact, session_id="s-bob")
    _mirror(settings, "s-bob", [{"type": "user", "uuid": str(uuid.uuid4()), "message": fact}])
    bob_entries = [(e.entry_id, e.new_value) for e in bob.journal(agent_id="bob", limit=100)]
    mallory = _manager(settings, "mallory")
    mallory.store_message("assistant", f"Noted: {fact}")
    passage = mallory.archival_memory_insert(fact)

    report = mallory.forget_passage(passage)

    assert report.passages == 1
    assert fact in bob.get_block("human").value
    assert [m.text for m in bob.all_messages()] == [fact]
    assert [
        (e.entry_id, e.new_value) for e in bob.journal(agent_id="bob", limit=100)
    ] == bob_entries
    with SQLiteSessionStore.open(
        settings.persist_directory, settings.database_url, encryption_key=settings.encryption_key
    ) as store:
        lines = asyncio.run(store.load({"project_key": "p", "session_id": "s-bob"}))  # type: ignore[typeddict-item]  # a minimal key
    assert fact in json.dumps(lines)
    assert fact not in mallory.all_messages()[0].text  # its own copy goes
    assert _chain_ok(mallory).ok
    mallory.close()
    bob.close()


# ----- PostgreSQL: a transaction older than the forget is still open --------------------------


def _hold_a_snapshot_here(request: pytest.FixtureRequest) -> Any:
    """A REPEATABLE READ transaction in the store's database that has read something (a long
    report, a pg_dump): its snapshot predates the forget. It reads no table of the store, so it
    holds no lock a VACUUM FULL would wait for."""
    import psycopg

    held = psycopg.connect(os.environ["MEMORY_DATABASE_URL"], application_name="long-report")
    held.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    held.execute("SELECT 1").fetchone()
    return held


def _hold_a_transaction_id_elsewhere(request: pytest.FixtureRequest) -> Any:
    """A transaction in another database of the server that has a transaction id (as a CREATE
    DATABASE has while it copies, or any writer): the rewrite's own snapshot counts it as running,
    so it holds back what VACUUM FULL may drop in every database. A snapshot alone there does
    not."""
    import psycopg

    cluster = request.getfixturevalue("postgres_cluster")
    held = psycopg.connect(cluster.url(), application_name="writer-elsewhere")
    held.execute("SELECT pg_current_xact_id()").fetchone()
    return held


def _hold_a_read_of_the_tables(request: pytest.FixtureRequest) -> Any:
    """A REPEATABLE READ transaction that has read the store's passages (as pg_dump does): besides
    its snapshot it holds a lock that VACUUM FULL of that table waits for."""
    held = _hold_a_snapshot_here(request)
    held.execute("SELECT count(*) FROM passages").fetchone()
    return held


HOLDERS: dict[str, Callable[[pytest.FixtureRequest], Any]] = {
    "lock-here": _hold_a_read_of_the_tables,
    "snapshot-here": _hold_a_snapshot_here,
    "xid-elsewhere": _hold_a_transaction_id_elsewhere,
}


def _doctor(settings: Settings, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--storage-dir", str(settings.persist_directory), *args])


@ONLY_POSTGRES
@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_a_forget_under_an_older_open_transaction_says_so_and_doctor_finishes_it(
    tmp_path: Path, marker: str, holder: str, request: pytest.FixtureRequest
) -> None:
    settings = _settings(tmp_path, {}, MEMORY_FORGET_WAIT_SECONDS="0.1")
    memory = _manager(settings)
    target = memory.archival_memory_insert(f"The door code is {marker}", tags=["door"])
    memory.store_message("assistant", f"I stored: The door code is {marker}")
    held = HOLDERS[holder](request)
    try:
        report = memory.forget_passage(target)

        warning = report.warnings[0] if report.warnings else ""
        assert f"pid {held.info.backend_pid}" in warning and "doctor --repair" in warning
        assert not report.complete
        assert f"'{held.info.parameter_status('application_name')}'" in warning
        assert count_marker(settings, marker, request)  # the warning is true: the bytes are there
        memory.close()
        doctor = _doctor(settings, "doctor")
        assert doctor.exit_code == 1 and "forgotten bytes" in doctor.output, doctor.output
    finally:
        held.close()

    repaired = _doctor(settings, "doctor", "--repair")

    assert repaired.exit_code == 0, repaired.output
    assert count_marker(settings, marker, request) == {}
    again = _doctor(settings, "doctor")
    assert again.exit_code == 0, again.output


class _EndWhenWaitedFor(logging.Handler):
    """Ends the held transaction a moment after the scrub says it waits for it."""

    def __init__(self, held: Any) -> None:
        super().__init__()
        self.held = held
        self.timer: threading.Timer | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.timer is None and f"pid {self.held.info.backend_pid}" in record.getMessage():
            self.timer = threading.Timer(0.2, self.held.close)
            self.timer.start()


@ONLY_POSTGRES
@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_a_forget_waits_for_an_older_transaction_that_ends(
    tmp_path: Path, marker: str, holder: str, request: pytest.FixtureRequest
) -> None:
    settings = _settings(tmp_path, {})
    memory = _manager(settings)
    target = memory.archival_memory_insert(f"The door code is {marker}")
    memory.store_message("assistant", f"I stored: The door code is {marker}")
    held = HOLDERS[holder](request)
    watcher = _EndWhenWaitedFor(held)
    scrub_log = logging.getLogger("memory_agent.store.scrub")
    level = scrub_log.level
    scrub_log.addHandler(watcher)
    scrub_log.setLevel(logging.INFO)
    try:
        report = memory.forget_passage(target)
    finally:
        scrub_log.removeHandler(watcher)
        scrub_log.setLevel(level)
        held.close()

    memory.close()
    assert count_marker(settings, marker, request) == {}
    assert watcher.timer is not None  # the scrub did wait for it
    watcher.timer.join()
    assert report.complete and report.warnings == (), report.warnings
