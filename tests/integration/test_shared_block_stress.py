"""Many processes, one shared block: no update is lost or doubled, and stale rewrites are refused.

Each worker is a process with its own MemoryManager (its own database connection), released
together from a barrier so that their writes contend for the lock; the workers of a run are
forked from one launcher (tests/forked_workers.py). On SQLite they share one storage dir; on
PostgreSQL (the `backend` fixture sets MEMORY_DATABASE_URL, which the launcher and its workers
inherit) each process has a storage dir
of its own, as processes on separate hosts would, and they share nothing but the database URL
(and, in the archival runs, a Chroma server).

The archival runs add what an Agent College writes besides its blocks: each worker stores
passages of its own, searches for them as it goes, and every worker stores the same passages for
one shared agent, which must each end up stored once. The vectors go to a real `chroma run`
server, embedded by the tests' hashing function (storage is under test here, not meaning).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections import Counter
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest
from backends import backend_environ
from forked_workers import run_workers

from memory_agent import MemoryManager, Settings, StaleBlockError
from memory_agent.archival import ChromaVectorStore, VectorConfig
from memory_agent.archival.config import collection_prefix_for
from memory_agent.core.blocks import append_text
from memory_agent.testing.chroma_server import ChromaServer

sys.path.insert(
    0, str(Path(__file__).resolve().parents[1] / "archival")
)  # spawned workers inherit it

from archival_helpers import HashEmbedding  # noqa: E402 - needs the path above

LIMIT = 100_000
HEADER = "## entries (newest first)"
REWRITES = 25
SPAWN = multiprocessing.get_context("spawn")
COLLEGE = "college"
"""The agent whose passages every worker stores (the same ones): each must be stored once."""
COMMON = [
    f"College rule {n}: every claim in a proof cites its lemma number {n}." for n in range(10)
]
SEARCH_EVERY = 5


pytestmark = pytest.mark.usefixtures("backend")


def _settings(storage: str, chroma_port: int | None = None) -> Settings:
    environ = {"PERSIST_DIRECTORY": storage}
    if chroma_port is not None:
        environ |= {"CHROMA_HOST": "127.0.0.1", "CHROMA_PORT": str(chroma_port)}
    return Settings.from_env(backend_environ(environ), env_file=None)


def _storage_of(tmp_path: Path, process: str) -> str:
    """One storage dir for every process on SQLite; a storage dir per process on PostgreSQL."""
    return str(tmp_path / process) if os.environ.get("MEMORY_DATABASE_URL") else str(tmp_path)


def _entry(writer: str, number: int) -> str:
    return f"{writer}:{number:03d}"


def _passage(writer: str, number: int) -> str:
    return f"Notes of {writer}, number {number}: the key word is {_keyword(writer, number)}."


def _keyword(writer: str, number: int) -> str:
    return f"kw{writer}x{number:03d}"


def _rewrite_with(memory: MemoryManager, label: str, value: str, entry: str) -> str:
    """Compare-and-set with memory_rethink: redo from the value a refusal shows until it lands."""
    while True:
        try:
            memory.memory_rethink(label, append_text(value, entry))
            return append_text(value, entry)
        except StaleBlockError as stale:
            value = stale.current_value


def _writer(
    tmp_path: Path,
    writer: str,
    edits: int,
    start: Barrier,
    passages: int = 0,
    chroma_port: int | None = None,
) -> None:
    """One process: `edits` appends and inserts (the first `passages` of them each with a passage
    of its own, a shared one, and every SEARCH_EVERY-th a search), then REWRITES rethinks."""
    with MemoryManager(
        agent_id=writer,
        settings=_settings(_storage_of(tmp_path, writer), chroma_port),
        embedding_function=HashEmbedding(),
    ) as memory:
        for label in ("appended", "inserted", "rewritten"):
            memory.join_shared_block(label)
        start.wait(timeout=240)
        for number in range(edits):
            memory.core_memory_append("appended", _entry(writer, number))
            memory.memory_insert("inserted", _entry(writer, number), insert_after=HEADER)
            if number < passages:
                _archive(memory, writer, number)
        memory.get_system_prompt_addition()  # the agent sees its blocks once, as before a turn
        value = memory.get_block("rewritten").value
        for number in range(REWRITES):
            value = _rewrite_with(memory, "rewritten", value, _entry(writer, number))


def _archive(memory: MemoryManager, writer: str, number: int) -> None:
    """A passage of the writer's own, a shared passage of the college's, and now and then
    searches that must find the writer's newest passage: hybrid by its key word, and vector
    (the Chroma server alone) by its text. Top 5, not top 1, for the vector search: the hashing
    embedding folds words into 64 dimensions, so a few passages share a vector."""
    passage_id = memory.archival_memory_insert(_passage(writer, number), tags=[writer])
    memory.archival_memory_insert(COMMON[number % len(COMMON)], agent_id=COLLEGE)
    if number % SEARCH_EVERY == 0:
        found = {
            mode: [
                hit.passage_id for hit in memory.archival_memory_search(query, limit=5, mode=mode)
            ]
            for mode, query in (
                ("hybrid", _keyword(writer, number)),
                ("vector", _passage(writer, number)),
            )
        }
        assert passage_id in found["hybrid"][:3] and passage_id in found["vector"]


def _append_once(tmp_path: Path, writer: str, label: str, text: str) -> None:
    with MemoryManager(
        agent_id=writer, settings=_settings(_storage_of(tmp_path, writer))
    ) as memory:
        memory.join_shared_block(label)
        memory.core_memory_append(label, text)


def _set_up(tmp_path: Path, blocks: dict[str, str]) -> None:
    with MemoryManager(
        agent_id="setup", settings=_settings(_storage_of(tmp_path, "setup"))
    ) as memory:
        memory.ensure_agent(COLLEGE)
        for label, value in blocks.items():
            memory.create_block(label, value, limit=LIMIT, is_shared=True)


def _check_passages(
    tmp_path: Path, chroma: ChromaServer, writers: list[str], passages: int
) -> None:
    """Each passage once in the database and its vector once on the Chroma server, all indexed,
    as the workers left them; then reconcile, comparing every id, finds nothing to do."""
    settings = _settings(_storage_of(tmp_path, "checker"), chroma.port)
    expected = {writer: Counter(_passage(writer, n) for n in range(passages)) for writer in writers}
    expected[COLLEGE] = Counter(COMMON[: min(passages, len(COMMON))])
    with MemoryManager(
        agent_id="checker", settings=settings, embedding_function=HashEmbedding()
    ) as memory:
        with memory.db.reading() as conn:
            rows = conn.execute(
                "SELECT agent_id, passage_id, content, vector_state FROM passages"
            ).fetchall()
        assert {row["vector_state"] for row in rows} == {"indexed"}
        vectors = ChromaVectorStore(
            VectorConfig.from_settings(settings), collection_prefix_for(HashEmbedding())
        )
        try:
            for agent, contents in expected.items():
                mine = [row for row in rows if row["agent_id"] == agent]
                assert Counter(row["content"] for row in mine) == contents
                assert vectors.ids(agent) == {row["passage_id"] for row in mine}
                assert vectors.count(agent) == len(mine)
        finally:
            vectors.close()
        assert len(rows) == sum(sum(contents.values()) for contents in expected.values())
        report = memory.reconcile_archival(full=True)
        assert (
            report.ok and report.compared_ids and not report.changed and report.missing_vectors == 0
        )


def _check_entries(lines: list[str], writers: list[str], count: int) -> None:
    """Every expected entry exactly once, and nothing else."""
    expected = Counter(_entry(w, n) for w in writers for n in range(count))
    assert Counter(lines) == expected


def _check_history_is_a_chain(memory: MemoryManager, label: str, writers: list[str]) -> None:
    """Each version is the previous one plus one entry, written by the entry's own author."""
    history = memory.block_history(label)
    assert [v.version for v in history] == list(range(1, len(history) + 1))
    for previous, version in zip(history, history[1:]):
        added = version.value.removeprefix(previous.value).lstrip("\n")
        assert version.value == append_text(previous.value, added)
        assert added.split(":")[0] == version.agent_id
    authors = Counter(v.agent_id for v in history[1:])
    assert set(authors) == set(writers) and len(set(authors.values())) == 1


def _check_journal(
    memory: MemoryManager, label: str, writers: list[str], action: str, count: int
) -> None:
    block_id = memory.get_block(label).block_id
    for writer in writers:
        entries = [
            e
            for e in memory.journal(agent_id=writer, limit=100_000)
            if e.target_id == block_id and e.action != "attach_block"
        ]
        assert [e.action for e in entries] == [action] * count
        assert all(
            e.new_value and e.new_value.count(":") > (e.old_value or "").count(":") for e in entries
        )


def _stress(
    tmp_path: Path,
    writers_count: int,
    edits: int,
    passages: int = 0,
    chroma: ChromaServer | None = None,
) -> None:
    _set_up(tmp_path, {"appended": "", "inserted": HEADER, "rewritten": ""})
    writers = [f"w{n}" for n in range(writers_count)]
    start = SPAWN.Barrier(writers_count)
    port = None if chroma is None else chroma.port
    run_workers(_writer, [(tmp_path, writer, edits, start, passages, port) for writer in writers])
    if chroma is not None:
        _check_passages(tmp_path, chroma, writers, passages)

    with MemoryManager(
        agent_id="setup", settings=_settings(_storage_of(tmp_path, "setup"))
    ) as memory:
        appended = memory.get_block("appended")
        _check_entries(appended.value.splitlines(), writers, edits)
        assert appended.version == 1 + writers_count * edits

        inserted = memory.get_block("inserted").value.splitlines()
        assert inserted[0] == HEADER
        _check_entries(inserted[1:], writers, edits)
        for writer in writers:  # each insert landed right after the header of the latest value
            own = [line for line in inserted if line.startswith(f"{writer}:")]
            assert own == sorted(own, reverse=True)

        rewritten = memory.get_block("rewritten")
        _check_entries(rewritten.value.splitlines(), writers, REWRITES)
        assert rewritten.version == 1 + writers_count * REWRITES

        for label in ("appended", "rewritten"):
            _check_history_is_a_chain(memory, label, writers)
        _check_journal(memory, "appended", writers, "core_memory_append", edits)
        _check_journal(memory, "inserted", writers, "memory_insert", edits)
        _check_journal(memory, "rewritten", writers, "memory_rethink", REWRITES)


def test_eight_processes_edit_one_shared_block_50_times_each_without_loss(tmp_path: Path) -> None:
    """8 x 50 appends, 8 x 50 inserts and 8 x 25 compare-and-set rethinks, all contending (released
    together from a barrier, so every edit races seven others); the 200-edit run with passages is
    the slow test below.
    """
    _stress(tmp_path, writers_count=8, edits=50)


def test_processes_write_blocks_and_passages_through_one_chroma_server_each_exactly_once(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    """The Agent College stress with archival memory, small: 4 x 25 edits, each with passages."""
    _stress(tmp_path, writers_count=4, edits=25, passages=25, chroma=chroma_server)


@pytest.mark.slow
def test_agent_college_stress_full_size_with_passages_through_a_chroma_server(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    """8 processes x (200 appends, 200 inserts, 200 passages of their own, 200 shared ones, 40
    searches) and 25 rethinks each, through one database and one Chroma server."""
    _stress(tmp_path, writers_count=8, edits=200, passages=200, chroma=chroma_server)


def test_stale_rewrites_after_another_processs_edit_are_refused_with_the_current_value(
    tmp_path: Path,
) -> None:
    _set_up(tmp_path, {"state": "Task: prove the lemma."})
    with MemoryManager(
        agent_id="reader", settings=_settings(_storage_of(tmp_path, "reader"))
    ) as memory:
        memory.join_shared_block("state")
        for agent in ("rethinker", "replacer", "never_looked"):
            memory.ensure_agent(agent)
            memory.join_shared_block("state", agent_id=agent)
        memory.get_system_prompt_addition(agent_id="rethinker")  # both see version 1
        memory.get_system_prompt_addition(agent_id="replacer")

        run_workers(
            _append_once, [(tmp_path, "critic", "state", "Critic: step 2 divides by zero.")]
        )
        current = "Task: prove the lemma.\nCritic: step 2 divides by zero."

        with pytest.raises(StaleBlockError) as stale:
            memory.memory_rethink("state", "Task: done.", agent_id="rethinker")
        assert stale.value.current_value == current and stale.value.version == 2
        assert "Critic: step 2 divides by zero." in str(stale.value)

        outcome = memory.execute_tool(
            "core_memory_replace",
            {"label": "state", "old_content": "prove", "new_content": "check"},
            agent_id="replacer",
        )
        assert (
            outcome.is_error
            and "changed by another agent" in outcome.text
            and current in outcome.text
        )

        # An agent that never saw the block cannot blindly overwrite another's edit either.
        outcome = memory.execute_tool(
            "memory_rethink", {"label": "state", "new_value": "Blank."}, agent_id="never_looked"
        )
        assert outcome.is_error and current in outcome.text

        assert memory.get_block("state").value == current
        assert memory.get_block("state").version == 2
        # Shown the current value by its refusal, the rethinker's redo goes through; the
        # replacer saw version 2, so it is refused once more and then redoes against version 3.
        memory.memory_rethink(
            "state", current + "\nProfessor: divide by n+1.", agent_id="rethinker"
        )
        with pytest.raises(StaleBlockError, match="Professor: divide by n"):
            memory.core_memory_replace("state", "prove", "check", agent_id="replacer")
        memory.core_memory_replace("state", "prove", "check", agent_id="replacer")
        assert memory.get_block("state").value == (
            "Task: check the lemma.\nCritic: step 2 divides by zero.\nProfessor: divide by n+1."
        )
        assert [v.agent_id for v in memory.block_history("state")] == [
            "setup",
            "critic",
            "rethinker",
            "replacer",
        ]
