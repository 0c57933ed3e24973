"""One MemoryManager shared by many threads (a service's agent workers): nothing lost or mixed up.

Both stores hold one connection per manager and serialise its use with a lock: a write
transaction keeps the connection until it commits, so another thread's statements can never land
inside it (they would otherwise run in its transaction, and its COMMIT or ROLLBACK would decide
their fate too; on SQLite a nested BEGIN is refused outright). Here eight threads append to one
shared block, store messages and read at once, each as an agent of its own, through one manager.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from concurrency_helpers import run_in_threads

from memory_agent import MemoryManager, Settings
from memory_agent.core.blocks import append_text

THREADS = 8
EDITS = 40

pytestmark = pytest.mark.usefixtures("backend")


def test_eight_threads_share_one_manager_without_losing_or_mixing_anything(
    settings: Settings,
) -> None:
    start = threading.Barrier(THREADS)
    with MemoryManager(agent_id="service", settings=settings) as memory:
        memory.create_block("ledger", "", limit=100_000, is_shared=True)
        agents = [f"worker{n}" for n in range(THREADS)]
        for agent in agents:
            memory.ensure_agent(agent)
            memory.join_shared_block("ledger", agent_id=agent)

        def work(agent: str) -> None:
            start.wait(timeout=60)
            for number in range(EDITS):
                memory.core_memory_append("ledger", f"{agent}:{number}", agent_id=agent)
                memory.store_message("user", f"{agent} says {number}", agent_id=agent)
                assert f"{agent}:{number}" in memory.get_block("ledger", agent_id=agent).value
                assert memory.count_messages(agent_id=agent) == number + 1

        run_in_threads(work, agents)

        ledger = memory.get_block("ledger")
        assert Counter(ledger.value.splitlines()) == Counter(
            f"{a}:{n}" for a in agents for n in range(EDITS)
        )
        assert ledger.version == 1 + THREADS * EDITS
        history = memory.block_history("ledger")
        for previous, version in zip(history, history[1:]):  # each version is one whole append
            added = version.value.removeprefix(previous.value).lstrip("\n")
            assert version.value == append_text(previous.value, added) and added.startswith(
                f"{version.agent_id}:"
            )
        for agent in agents:
            texts = [m.content for m in memory.get_recent_messages(limit=EDITS * 2, agent_id=agent)]
            assert texts == [f"{agent} says {n}" for n in range(EDITS)]
