"""Two processes' worth of agents edit one shared memory file at once through the memory tool.

Each agent has its own `MemoryManager` (its own database connection) on one store, as two
processes would. Every edit is a `view` then an `insert` by line number; an insert against a
version the agent has not seen is refused (stale), so no edit is lost or applied to the wrong
line, and the file holds exactly the inserts that were accepted.

A refused agent redoes its insert against the file the refusal showed it, as the refusal tells
the model to. It must not view again first and hope: on PostgreSQL the write lock (an advisory
lock) grants waiters in arrival order, and two agents looping view-then-insert settle into a
lockstep (a views, b views, a inserts, b is refused, a views, b views, ...) in which the same
agent is refused at every try, a correct refusal each time, since the other's insert always
lands between its view and its insert. Redoing from the refusal breaks the lockstep, and each
refusal needs one more of the other agent's inserts to have landed, which bounds the tries.
"""

from __future__ import annotations

import pytest
from concurrency_helpers import run_in_threads

from memory_agent import MemoryManager, Settings
from memory_agent.errors import StaleBlockError
from memory_agent.tools.memory_tool import MemoryFiles

PLAN = "/memories/team/plan.md"
LINES = 25
AGENTS = ("a", "b")

pytestmark = pytest.mark.usefixtures("backend")


def _insert_until_it_lands(files: MemoryFiles, line: str, refusals: list[int]) -> None:
    """One line: view, insert; on a refusal, redo the insert (the refusal showed the current file).

    Each refusal means the other agent's insert landed since this agent last saw the file, and the
    other agent has LINES inserts in all, so LINES + 1 tries always suffice."""
    files.view(PLAN)
    for _ in range(LINES + 1):
        try:
            files.insert(PLAN, 1, line)
            return
        except StaleBlockError as stale:
            refusals.append(stale.version)
    raise AssertionError(f"{line} was refused {LINES + 1} times")


def test_concurrent_inserts_lose_nothing_and_every_agent_gets_through(settings: Settings) -> None:
    with MemoryManager(agent_id="a", settings=settings) as first:
        first.ensure_agent("b")
        block = first.create_block("team/plan.md", "start\n", is_shared=True, in_prompt=False)
        first.attach_block("b", block.block_id)
    refusals: dict[str, list[int]] = {agent: [] for agent in AGENTS}

    def work(agent: str) -> None:
        with MemoryManager(agent_id=agent, settings=settings) as memory:
            files = MemoryFiles(memory)
            for number in range(LINES):
                _insert_until_it_lands(files, f"{agent}{number}", refusals[agent])

    run_in_threads(work, AGENTS)
    with MemoryManager(agent_id="a", settings=settings) as memory:
        lines = memory.get_block("team/plan.md").value.splitlines()
        history = memory.block_history("team/plan.md")

    assert lines[0] == "start"
    assert sorted(lines[1:]) == sorted(f"{agent}{n}" for agent in AGENTS for n in range(LINES))
    assert [v.version for v in history] == list(range(1, 2 + 2 * LINES))
    author = {v.version: v.agent_id for v in history}
    for agent, other in (("a", "b"), ("b", "a")):
        # A refusal only ever reports a version the other agent wrote, and never one this agent
        # was already shown: no refusal is spurious, no read saw an older commit than the last.
        assert all(author[version] == other for version in refusals[agent])
        assert refusals[agent] == sorted(set(refusals[agent]))
        assert sum(1 for v in history[1:] if v.agent_id == agent) == LINES
