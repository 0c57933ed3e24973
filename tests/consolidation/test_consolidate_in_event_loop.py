"""`consolidate()` from inside a running event loop: a project error naming `aconsolidate`."""

from __future__ import annotations

import asyncio

import pytest

from memory_agent import ConsolidationError, MemoryAgentError, MemoryManager

pytestmark = pytest.mark.usefixtures("backend")


def test_sync_consolidate_inside_a_loop_says_to_await_aconsolidate(memory: MemoryManager) -> None:
    memory.create_block("notes", "Fact 1.\nFact 1.\nFact 2.", limit=400)
    before = memory.list_consolidations()

    async def inside() -> None:
        with pytest.raises(ConsolidationError, match="aconsolidate") as caught:
            memory.consolidate(consolidator="rules")
        assert isinstance(caught.value, MemoryAgentError)
        report = await memory.aconsolidate(consolidator="rules")  # the way it names works
        assert report.session_id

    asyncio.run(inside())
    assert len(memory.list_consolidations()) == len(before) + 1, (
        "the refused call recorded a session"
    )
