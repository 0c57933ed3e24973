"""Two processes, two MemoryManagers, one database: no append is lost."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from backends import backend_environ

from memory_agent import MemoryManager, Settings

APPENDS = 200

pytestmark = pytest.mark.usefixtures("backend")



def _append_many(storage: str, writer: str) -> None:
    settings = Settings.from_env(backend_environ({"PERSIST_DIRECTORY": storage}), env_file=None)
    with MemoryManager(agent_id=writer, settings=settings) as memory:
        block_id = memory.join_shared_block("ledger").block_id
        assert block_id
        for number in range(APPENDS):
            memory.core_memory_append("ledger", f"{writer}:{number}")


def test_two_processes_append_200_times_each_without_loss(tmp_path: Path) -> None:
    storage = str(tmp_path)
    environ = backend_environ({"PERSIST_DIRECTORY": storage, "MEMORY_CHARACTER_LIMITS": "ledger=100000"})
    settings = Settings.from_env(environ, env_file=None)
    with MemoryManager(agent_id="setup", settings=settings) as memory:
        memory.join_shared_block("ledger")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(storage, name)) for name in ("w1", "w2")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    with MemoryManager(agent_id="setup", settings=settings) as memory:
        lines = memory.get_block("ledger").value.splitlines()
        expected = {f"{w}:{n}" for w in ("w1", "w2") for n in range(APPENDS)}
        assert sorted(lines) == sorted(expected)
        assert memory.get_block("ledger").version == 2 * APPENDS + 1
