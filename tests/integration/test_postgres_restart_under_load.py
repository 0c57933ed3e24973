"""The PostgreSQL server restarts while several processes write: they carry on, nothing doubled.

Processes on different hosts share one server; when it restarts, every connection is cut at
once, mid-write for some. A writer sees at most one failed call on its old connection (a
StorageError: nothing written; or, cut at COMMIT while the server stayed away longer than the
store's lookup waits, WriteOutcomeUnknownError, after which it looks before repeating) and
refused connections while the server is down; it retries, as a service would, the manager
reconnects, and the block ends with every entry exactly once.
(Single-connection failures, including a cut at the moment of COMMIT, are the robustness
tests'; this is the concurrent case.)
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from forked_workers import start_workers

from memory_agent import MemoryManager, StorageError, WriteOutcomeUnknownError
from memory_agent.testing.postgres_cluster import PostgresCluster

WRITERS = 4
APPENDS = 150
SPAWN = multiprocessing.get_context("spawn")

pytestmark = pytest.mark.postgres


@pytest.fixture
def cluster(postgres_cluster: PostgresCluster) -> Iterator[PostgresCluster]:
    """A server of this test's own: restarting the session's one would cut other tests'
    databases."""
    own = PostgresCluster().start()
    yield own
    own.stop()


def _append_retrying(
    storage: str, url: str, writer: str, failures: multiprocessing.Queue[int]
) -> None:
    failed = 0
    with MemoryManager(storage, agent_id=writer, database_url=url) as memory:
        memory.join_shared_block("ledger")
        for number in range(APPENDS):
            entry = f"{writer}:{number}"
            for _ in range(300):
                try:
                    memory.core_memory_append("ledger", entry)
                    break
                except WriteOutcomeUnknownError:
                    # Cut at COMMIT while the server stayed away: look before repeating, as advised.
                    failed += 1
                    if _landed(memory, entry):
                        break
                except StorageError:
                    failed += 1
                    time.sleep(0.05)
            else:
                raise SystemExit(f"{writer} could not write {number} for 15 s")
    failures.put(failed)


def _all_writing(ledger: str, writers: list[str]) -> bool:
    return all(f"\n{writer}:" in f"\n{ledger}" for writer in writers)


def _landed(memory: MemoryManager, entry: str) -> bool:
    """Whether `entry` is in the ledger, asked until the server answers again."""
    for _ in range(300):
        try:
            return entry in memory.get_block("ledger").value.splitlines()
        except StorageError:
            time.sleep(0.05)
    raise SystemExit(f"could not read the ledger to look for {entry} for 15 s")


def test_writers_survive_a_server_restart_and_every_entry_lands_once(
    cluster: PostgresCluster, tmp_path: Path
) -> None:
    url = cluster.database_url()
    with MemoryManager(tmp_path / "setup", agent_id="setup", database_url=url) as memory:
        memory.create_block("ledger", "", limit=100_000, is_shared=True)
    failures: multiprocessing.Queue[int] = SPAWN.Queue()
    writers = [f"w{n}" for n in range(WRITERS)]
    # Forked from one launcher (tests/forked_workers.py): each its own process and store.
    launcher = start_workers(
        _append_retrying, [(str(tmp_path / w), url, w, failures) for w in writers]
    )
    total = 1 + WRITERS * APPENDS
    with MemoryManager(tmp_path / "watch", agent_id="setup", database_url=url) as watcher:
        # Restart once every writer is writing (past opening its store) and a quarter is done.
        while True:
            seen = watcher.get_block("ledger")
            at_restart = seen.version
            if _all_writing(seen.value, writers) and at_restart >= total // 4:
                break
            time.sleep(0.05)
        cluster.stop_server("fast")
        time.sleep(0.5)
        cluster.start_server()
    launcher.join(timeout=120)
    assert launcher.exitcode == 0  # every writer exited with 0
    with MemoryManager(tmp_path / "check", agent_id="setup", database_url=url) as memory:
        ledger = memory.get_block("ledger")
    assert at_restart < total  # the restart came while they were writing
    assert sum(failures.get(timeout=5) for _ in writers) > 0  # and they felt it
    assert Counter(ledger.value.splitlines()) == Counter(
        f"{w}:{n}" for w in writers for n in range(APPENDS)
    )
    assert ledger.version == total
