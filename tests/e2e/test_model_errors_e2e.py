"""The model API without credentials, or refusing them: one clear error, nothing of the CLI's
"Not logged in" / "Failed to authenticate" reply stored as the agent's answer or kept in context.

The refused-key tests run on SQLite alone: what they pin is decided before anything is stored
(the failed turn is dropped by the recorder, which is the same code on either backend and is run
on PostgreSQL by test_agent_e2e.py). First use, which creates the store, runs on both."""

from __future__ import annotations

from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import MemoryAwareAgent, MemoryManager, ModelAuthenticationError
from memory_agent.testing import ScriptedMessagesServer, error_response, text_response

pytestmark = pytest.mark.e2e

_CLI_WORDING = ("Not logged in", "Failed to authenticate", "Please run /login")


def _assert_nothing_of_it_kept(memory: MemoryManager, agent_id: str) -> None:
    stored = memory.recall.all_messages(agent_id)
    assert not [m for m in stored if m.role == "assistant"], [m.content for m in stored]
    in_context = " ".join(str(m.content) for m in stored if m.in_context)
    assert not any(phrase in in_context for phrase in _CLI_WORDING)


@pytest.mark.sqlite_only(
    reason="a refused key is decided by the model server before any answer is stored; "
    "the recorder that stores answers runs on PostgreSQL in test_agent_e2e"
)
@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_raises_one_clear_error_and_stores_no_answer(
    status: int,
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    agent_memory: MemoryManager,
) -> None:
    server.enqueue(error_response(status, should_retry=False))
    server.enqueue(text_response("Hello again."))
    async with MemoryAwareAgent(options, memory=agent_memory) as agent:
        with pytest.raises(ModelAuthenticationError) as raised:
            await agent.process_turn("Hi, I am Ada.")
        assert raised.value.status == status
        assert "ANTHROPIC_API_KEY" in str(raised.value) and "\n" not in str(raised.value)
        _assert_nothing_of_it_kept(agent_memory, agent.agent_id)

        # With the key working again, the next request carries none of the failed reply.
        second = await agent.process_turn("Are you there?")
        assert second.text == "Hello again."
    last = server.message_requests()[-1]
    assert not any(phrase in str(last.messages) + last.system_text for phrase in _CLI_WORDING)


@pytest.mark.sqlite_only(reason="the CLI refuses to start without a key, before anything is stored")
async def test_no_key_at_all_is_not_logged_in_and_names_the_variable(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    """ANTHROPIC_BASE_URL without a key: the CLI answers "Not logged in" without a request."""
    no_key = ClaudeAgentOptions(
        env={**server.env(), "ANTHROPIC_API_KEY": ""}, tools=[], cwd=options.cwd
    )
    async with MemoryAwareAgent(no_key, memory=agent_memory) as agent:
        with pytest.raises(
            ModelAuthenticationError, match="not logged in.*Set ANTHROPIC_API_KEY"
        ) as raised:
            await agent.process_turn("Hello?")
    assert raised.value.status is None
    _assert_nothing_of_it_kept(agent_memory, "e2e-agent")
    assert server.turn_requests() == []


@pytest.mark.usefixtures("backend")
async def test_the_agent_creates_its_storage_dir_and_agent_on_first_use(
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    """No init step: a MemoryAwareAgent in a fresh home creates ~/.memory_agent and its agent
    (on PostgreSQL, the schema and the agent in the database of MEMORY_DATABASE_URL)."""
    home = tmp_path / "fresh-home"
    monkeypatch.setenv("HOME", str(home))
    server.enqueue(text_response("Hi."))
    async with MemoryAwareAgent(options) as agent:
        assert (await agent.process_turn("Hello")).text == "Hi."
        storage = agent.memory.storage_dir
    assert storage == home / ".memory_agent"
    assert (storage / "memory.db").is_file() == (
        backend == "sqlite"
    )  # nothing in SQLite on PostgreSQL
    with MemoryManager(storage) as reopened:
        assert reopened.agent_id == agent.agent_id  # the default agent, reused by the next run
        assert [m.role for m in reopened.recall.all_messages(agent.agent_id) if m.in_context] == [
            "user",
            "assistant",
        ]
