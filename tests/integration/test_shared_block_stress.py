"""Many processes, one shared block: no update is lost or doubled, and stale rewrites are refused.

Each worker is a spawned process with its own MemoryManager (its own database connection),
released together from a barrier so that their writes contend for the lock. On SQLite they share
one storage dir; on PostgreSQL (the `backend` fixture sets MEMORY_DATABASE_URL, which spawned
processes inherit) each process has a storage dir of its own, as processes on separate hosts
would, and they share nothing but the database URL.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest
from backends import backend_environ

from memory_agent import MemoryManager, Settings, StaleBlockError
from memory_agent.blocks import append_text

LIMIT = 100_000
HEADER = "## entries (newest first)"
REWRITES = 25
SPAWN = multiprocessing.get_context("spawn")


pytestmark = pytest.mark.usefixtures("backend")


def _settings(storage: str) -> Settings:
    return Settings.from_env(backend_environ({"PERSIST_DIRECTORY": storage}), env_file=None)


def _storage_of(tmp_path: Path, process: str) -> str:
    """One storage dir for every process on SQLite; a storage dir per process on PostgreSQL."""
    return str(tmp_path / process) if os.environ.get("MEMORY_DATABASE_URL") else str(tmp_path)


def _entry(writer: str, number: int) -> str:
    return f"{writer}:{number:03d}"


def _rewrite_with(memory: MemoryManager, label: str, value: str, entry: str) -> str:
    """Compare-and-set with memory_rethink: redo from the value a refusal shows until it lands."""
    while True:
        try:
            memory.memory_rethink(label, append_text(value, entry))
            return append_text(value, entry)
        except StaleBlockError as stale:
            value = stale.current_value


def _writer(tmp_path: Path, writer: str, edits: int, start: Barrier) -> None:
    """One process: `edits` appends and inserts, then REWRITES compare-and-set rethinks."""
    with MemoryManager(agent_id=writer, settings=_settings(_storage_of(tmp_path, writer))) as memory:
        for label in ("appended", "inserted", "rewritten"):
            memory.join_shared_block(label)
        start.wait(timeout=240)
        for number in range(edits):
            memory.core_memory_append("appended", _entry(writer, number))
            memory.memory_insert("inserted", _entry(writer, number), insert_after=HEADER)
        memory.get_system_prompt_addition()  # the agent sees its blocks once, as before a turn
        value = memory.get_block("rewritten").value
        for number in range(REWRITES):
            value = _rewrite_with(memory, "rewritten", value, _entry(writer, number))


def _append_once(tmp_path: Path, writer: str, label: str, text: str) -> None:
    with MemoryManager(agent_id=writer, settings=_settings(_storage_of(tmp_path, writer))) as memory:
        memory.join_shared_block(label)
        memory.core_memory_append(label, text)


def _run(target: object, argument_sets: list[tuple[object, ...]]) -> None:
    workers = [SPAWN.Process(target=target, args=args) for args in argument_sets]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    assert [worker.exitcode for worker in workers] == [0] * len(workers)


def _set_up(tmp_path: Path, blocks: dict[str, str]) -> None:
    with MemoryManager(agent_id="setup", settings=_settings(_storage_of(tmp_path, "setup"))) as memory:
        for label, value in blocks.items():
            memory.create_block(label, value, limit=LIMIT, is_shared=True)


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


def _check_journal(memory: MemoryManager, label: str, writers: list[str], action: str, count: int) -> None:
    block_id = memory.get_block(label).block_id
    for writer in writers:
        entries = [e for e in memory.journal(agent_id=writer, limit=100_000)
                   if e.target_id == block_id and e.action != "attach_block"]
        assert [e.action for e in entries] == [action] * count
        assert all(e.new_value and e.new_value.count(":") > (e.old_value or "").count(":") for e in entries)


def _stress(tmp_path: Path, writers_count: int, edits: int) -> None:
    _set_up(tmp_path, {"appended": "", "inserted": HEADER, "rewritten": ""})
    writers = [f"w{n}" for n in range(writers_count)]
    start = SPAWN.Barrier(writers_count)
    _run(_writer, [(tmp_path, writer, edits, start) for writer in writers])

    with MemoryManager(agent_id="setup", settings=_settings(_storage_of(tmp_path, "setup"))) as memory:
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


def test_eight_processes_edit_one_shared_block_200_times_each_without_loss(tmp_path: Path) -> None:
    """8 x 200 appends, 8 x 200 inserts and 8 x 25 compare-and-set rethinks, all contending.

    About 8 s on 2 idle cores (most of it is spawning and importing), 15-20 s on busy ones.
    """
    _stress(tmp_path, writers_count=8, edits=200)


def test_stale_rewrites_after_another_processs_edit_are_refused_with_the_current_value(tmp_path: Path) -> None:
    _set_up(tmp_path, {"state": "Task: prove the lemma."})
    with MemoryManager(agent_id="reader", settings=_settings(_storage_of(tmp_path, "reader"))) as memory:
        memory.join_shared_block("state")
        for agent in ("rethinker", "replacer", "never_looked"):
            memory.ensure_agent(agent)
            memory.join_shared_block("state", agent_id=agent)
        memory.get_system_prompt_addition(agent_id="rethinker")  # both see version 1
        memory.get_system_prompt_addition(agent_id="replacer")

        _run(_append_once, [(tmp_path, "critic", "state", "Critic: step 2 divides by zero.")])
        current = "Task: prove the lemma.\nCritic: step 2 divides by zero."

        with pytest.raises(StaleBlockError) as stale:
            memory.memory_rethink("state", "Task: done.", agent_id="rethinker")
        assert stale.value.current_value == current and stale.value.version == 2
        assert "Critic: step 2 divides by zero." in str(stale.value)

        outcome = memory.execute_tool(
            "core_memory_replace", {"label": "state", "old_content": "prove", "new_content": "check"},
            agent_id="replacer")
        assert outcome.is_error and "changed by another agent" in outcome.text and current in outcome.text

        # An agent that never saw the block cannot blindly overwrite another's edit either.
        outcome = memory.execute_tool("memory_rethink", {"label": "state", "new_value": "Blank."},
                                      agent_id="never_looked")
        assert outcome.is_error and current in outcome.text

        assert memory.get_block("state").value == current
        assert memory.get_block("state").version == 2
        # Shown the current value by its refusal, the rethinker's redo goes through; the
        # replacer saw version 2, so it is refused once more and then redoes against version 3.
        memory.memory_rethink("state", current + "\nProfessor: divide by n+1.", agent_id="rethinker")
        with pytest.raises(StaleBlockError, match="Professor: divide by n"):
            memory.core_memory_replace("state", "prove", "check", agent_id="replacer")
        memory.core_memory_replace("state", "prove", "check", agent_id="replacer")
        assert memory.get_block("state").value == (
            "Task: check the lemma.\nCritic: step 2 divides by zero.\nProfessor: divide by n+1.")
        assert [v.agent_id for v in memory.block_history("state")] == ["setup", "critic", "rethinker", "replacer"]
