"""Compaction through MemoryManager, against the scripted Messages API server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from backends import backend_environ

from compaction import CompactionSettings
from memory_agent import MemoryManager, Settings
from memory_agent.testing import ScriptedMessagesServer, error_response, text_response

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with ScriptedMessagesServer() as running:
        yield running


def _manager(tmp_path: Path, server: ScriptedMessagesServer, **compaction: object) -> MemoryManager:
    settings = Settings.from_env(
        backend_environ(
            {
                "PERSIST_DIRECTORY": str(tmp_path),
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "k",
            }
        ),
        env_file=None,
    )
    fast_retries = {"retry_initial_wait": 0.01, "retry_max_wait": 0.02, "max_attempts": 3}
    return MemoryManager(
        agent_id="planner",
        settings=settings,
        compaction_settings=CompactionSettings(**{**fast_retries, **compaction}),
    )


def _store_conversation(memory: MemoryManager, pairs: int) -> None:
    for number in range(pairs):
        memory.store_message("user", f"Message {2 * number}")
        memory.store_message("assistant", f"Message {2 * number + 1}")


def test_the_users_scenario_100_pairs_then_compact(
    tmp_path: Path, server: ScriptedMessagesServer
) -> None:
    memory = _manager(tmp_path, server)
    _store_conversation(memory, 100)
    before = [m.text for m in memory.get_recent_messages(200)]
    server.enqueue(text_response("The user sent numbered messages 0 onwards."), model="haiku")

    outcome = memory.compact_history()

    assert outcome.status == "compacted"
    summary_request = server.message_requests(model="haiku")[0]
    assert "Message 0" in str(summary_request.messages)
    assert memory.get_summary() == "The user sent numbered messages 0 onwards."
    recent = [m.text for m in memory.get_recent_messages(200)]
    assert recent == before[-len(recent) :] and recent[-1] == "Message 199"  # intact and verbatim
    assert len(recent) < 200
    everything = memory.recall.all_messages("planner")
    assert len(everything) == 200 and not everything[0].in_context  # evicted, not deleted
    assert memory.search_messages("Message 0")


def test_should_compact_follows_the_trigger(tmp_path: Path, server: ScriptedMessagesServer) -> None:
    memory = _manager(tmp_path, server, context_window=8000, trigger_threshold=0.5)
    assert not memory.should_compact()
    for number in range(150):
        memory.store_message(
            "user", f"A longer message number {number} about the quarterly plan and its budget"
        )
    assert memory.should_compact()


def test_an_unavailable_summariser_defers_and_loses_nothing(
    tmp_path: Path, server: ScriptedMessagesServer
) -> None:
    memory = _manager(tmp_path, server)
    _store_conversation(memory, 20)
    for _ in range(3):
        server.enqueue(error_response(500), model="haiku")

    outcome = memory.compact_history()

    assert outcome.status == "deferred"
    assert len(server.message_requests(model="haiku")) == 3
    assert memory.get_summary() is None
    assert all(m.in_context for m in memory.recall.all_messages("planner"))
    server.enqueue(text_response("Later summary."), model="haiku")
    assert memory.compact_history().status == "compacted"


def test_repeated_compactions_fold_the_previous_summary_in(
    tmp_path: Path, server: ScriptedMessagesServer
) -> None:
    memory = _manager(tmp_path, server)
    _store_conversation(memory, 30)
    server.enqueue(text_response("FIRST-SUMMARY"), model="haiku")
    memory.compact_history()
    _store_conversation(memory, 30)
    server.enqueue(text_response("SECOND-SUMMARY"), model="haiku")
    memory.compact_history()
    second_request = server.message_requests(model="haiku")[1]
    assert "FIRST-SUMMARY" in str(second_request.messages) + second_request.system_text
    assert [s.summary for s in memory.recall.summaries("planner")] == [
        "FIRST-SUMMARY",
        "SECOND-SUMMARY",
    ]
    assert "SECOND-SUMMARY" in memory.get_system_prompt_addition()


async def test_compact_history_inside_an_event_loop_points_to_the_async_method(
    tmp_path: Path, server: ScriptedMessagesServer
) -> None:
    memory = _manager(tmp_path, server)
    with pytest.raises(RuntimeError, match="acompact_history"):
        memory.compact_history()
    _store_conversation(memory, 10)
    server.enqueue(text_response("async summary"), model="haiku")
    assert (await memory.acompact_history()).status == "compacted"
