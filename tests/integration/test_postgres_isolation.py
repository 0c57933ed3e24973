"""Concurrent writers are right whatever isolation level the server defaults to.

A server (or database, or role) may default to REPEATABLE READ or SERIALIZABLE. A transaction's
snapshot is then taken by its first statement, the advisory lock, before the lock is granted, so
a writer that waited would read the block as it was before the previous holder's commit; the
server refuses its update ("could not serialize access"), and 31 of 200 appends were refused
before write transactions named READ COMMITTED themselves. Migrations take their lock the same
way, so two processes opening a new database at once are checked too.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest
from concurrency_helpers import run_in_threads

from memory_agent import MemoryManager

pytestmark = pytest.mark.postgres

WRITERS = 4
APPENDS = 30


@pytest.mark.parametrize("level", ["repeatable read", "serializable"])
def test_writers_and_first_opens_are_right_under_a_stricter_default_isolation(
    level: str, postgres_url: str, tmp_path: Path
) -> None:
    # the driver is an optional extra; the postgres_url fixture says if it is missing
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(
            f"ALTER DATABASE {postgres_url.rsplit('/', 1)[1]} SET default_transaction_isolation = "
            f"'{level}'"
        )
    writers = [f"w{n}" for n in range(WRITERS)]
    start = threading.Barrier(WRITERS)

    def work(writer: str) -> None:
        start.wait(timeout=30)  # all open the new database at once: one migrates, all see it
        with MemoryManager(tmp_path / writer, agent_id=writer, database_url=postgres_url) as memory:
            memory.join_shared_block("ledger")
            for number in range(APPENDS):
                memory.core_memory_append("ledger", f"{writer}:{number}")

    run_in_threads(work, writers)
    with MemoryManager(tmp_path / "check", agent_id="check", database_url=postgres_url) as memory:
        memory.join_shared_block("ledger")
        ledger = memory.get_block("ledger")
    assert Counter(ledger.value.splitlines()) == Counter(
        f"{w}:{n}" for w in writers for n in range(APPENDS)
    )
    assert ledger.version == 1 + WRITERS * APPENDS
