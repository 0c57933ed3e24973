"""MemoryAwareAgent end to end: the real SDK, its bundled CLI and in-process memory tools."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    CLINotFoundError,
    HookMatcher,
    ResultMessage,
    TextBlock,
    create_sdk_mcp_server,
    tool,
)

from compaction import reported_input_tokens
from memory_agent import MemoryAwareAgent, MemoryManager, Settings
from memory_agent.testing import (
    ScriptedMessagesServer,
    text_response,
    tool_use_response,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

APPEND = "mcp__memory__core_memory_append"


def _tool_results(request: Any) -> list[dict[str, Any]]:
    return request.tool_results


async def test_a_tool_edit_is_stored_and_shown_in_the_next_system_prompt(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    server.enqueue(tool_use_response(APPEND, {"label": "human", "content": "Name: Ada Lovelace"}))
    server.enqueue(text_response("Nice to meet you, Ada."))
    server.enqueue(text_response("You are Ada."))
    async with MemoryAwareAgent(options, memory=agent_memory, prompt_refresh="live") as agent:
        first = await agent.process_turn("Hi, I am Ada Lovelace.")
        assert first.text == "Nice to meet you, Ada."
        assert [call.name for call in first.tool_calls] == [APPEND]
        assert agent_memory.get_block("human").value.endswith("Name: Ada Lovelace")
        second = await agent.process_turn("Who am I?")
        assert second.text == "You are Ada."

    turns = server.message_requests()
    assert "Name: Ada Lovelace" not in turns[0].system_text
    assert "You are a careful assistant." in turns[0].system_text
    assert "<memory_blocks>" in turns[0].system_text
    # Inside the turn the tool result carries the updated block at once.
    result = _tool_results(turns[1])[-1]
    assert not result.get("is_error") and "Name: Ada Lovelace" in str(result["content"])
    # The next turn's system prompt carries the new value, and the conversation so far.
    assert "Name: Ada Lovelace" in turns[2].system_text
    assert "Hi, I am Ada Lovelace." in str(turns[2].messages)

    stored = agent_memory.recall.all_messages("e2e-agent")
    kinds = [(m.role, m.message_type) for m in stored if m.in_context]
    assert kinds == [
        ("user", "user"),
        ("assistant", "assistant"),
        ("user", "tool_result"),
        ("assistant", "assistant"),
        ("user", "user"),
        ("assistant", "assistant"),
    ]
    results = [m for m in stored if m.message_type == "result"]
    assert len(results) == 2 and reported_input_tokens(results[0].metadata["usage"]) > 0
    assert all(m.token_count for m in stored if m.in_context)
    assert len({m.metadata.get("message_id") for m in stored if m.role == "assistant"}) >= 2


async def test_an_edit_by_another_process_between_turns_shows_in_the_next_turn(
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    agent_memory: MemoryManager,
    storage_settings: Settings,
) -> None:
    async with MemoryAwareAgent(options, memory=agent_memory, prompt_refresh="deferred") as agent:
        await agent.process_turn("first")
        with MemoryManager(agent_id="e2e-agent", settings=storage_settings) as other:
            other.core_memory_append("human", "Edited elsewhere: likes Rust")
        await agent.process_turn("second")
        await agent.process_turn("third")
        # One process for the whole conversation: the edit reached it as a live refresh.
        assert (agent.reconnects, agent.live_refreshes) == (1, 1)
    turns = server.message_requests()
    assert "likes Rust" not in turns[0].system_text
    assert "likes Rust" in turns[1].system_text and "likes Rust" in turns[2].system_text
    assert "third" in str(turns[2].messages) and "first" in str(turns[2].messages)


async def test_reconnect_mode_resumes_the_session_with_the_new_prompt(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    async with MemoryAwareAgent(
        options, memory=agent_memory, refresh_mode="reconnect", prompt_refresh="live"
    ) as agent:
        await agent.process_turn("first")
        agent_memory.core_memory_append("human", "Prefers tea")
        await agent.process_turn("second")
        assert (agent.reconnects, agent.live_refreshes) == (2, 0)
    turns = server.message_requests()
    assert "Prefers tea" in turns[1].system_text and "first" in str(turns[1].messages)


async def test_memory_tools_are_loaded_even_with_the_default_tool_set(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    """The CLI defers MCP tools behind its tool search; the memory tools must not be deferred."""
    with_builtin_tools = dataclasses.replace(options, tools=None)
    async with MemoryAwareAgent(with_builtin_tools, memory=agent_memory) as agent:
        await agent.process_turn("hello")
    assert APPEND in server.message_requests()[0].tools


async def test_a_restart_continues_memory_and_conversation(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, storage_settings: Settings
) -> None:
    server.enqueue(text_response("The secret word is noted: marmalade."))
    with MemoryManager(agent_id="restarter", settings=storage_settings) as memory:
        async with MemoryAwareAgent(options, memory=memory) as agent:
            await agent.process_turn("Remember the secret word marmalade.")
            memory.core_memory_append("human", "Knows the secret word.")
            session = agent.session_id
    # The CLI's own copy of the transcript is gone: only our SessionStore (memory.db, or the
    # PostgreSQL database) can give the next process the session to resume.
    local_transcripts = Path.home() / ".claude" / "projects"
    assert any(local_transcripts.rglob(f"{session}.jsonl"))
    shutil.rmtree(local_transcripts)
    with MemoryManager(agent_id="restarter", settings=storage_settings) as memory:
        async with MemoryAwareAgent(options, memory=memory) as agent:
            await agent.process_turn("What was the secret word?")
            assert agent.session_id == session  # resumed, not a new session seeded from messages
    last = server.message_requests()[-1]
    assert "Remember the secret word marmalade." in str(last.messages)
    assert "The secret word is noted: marmalade." in str(last.messages)
    assert "Knows the secret word." in last.system_text


async def test_a_tool_error_reaches_the_model_and_leaves_memory_unchanged(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    agent_memory.create_block("tiny", "full", limit=5)
    agent_memory.create_block("rules", "Never lie.", read_only=True)
    server.enqueue(tool_use_response(APPEND, {"label": "tiny", "content": "overflowing text"}))
    server.enqueue(
        tool_use_response(
            "mcp__memory__core_memory_replace",
            {"label": "rules", "old_content": "Never", "new_content": "Always"},
        )
    )
    server.enqueue(tool_use_response(APPEND, {"label": "no_such_block", "content": "x"}))
    server.enqueue(text_response("I could not save that."))
    async with MemoryAwareAgent(options, memory=agent_memory) as agent:
        result = await agent.process_turn("Save a lot of text.")
    assert result.text == "I could not save that." and not result.is_error
    requests = server.message_requests()
    errors = [_tool_results(r)[-1] for r in requests[1:4]]
    assert all(error.get("is_error") for error in errors)
    assert "over its limit of 5" in str(errors[0]["content"])
    assert "read-only" in str(errors[1]["content"])
    assert "No block 'no_such_block'" in str(errors[2]["content"])
    assert agent_memory.get_block("tiny").value == "full"
    assert agent_memory.get_block("rules").value == "Never lie."


async def test_user_mcp_servers_hooks_and_allowed_tools_still_work(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    calls: list[dict[str, Any]] = []
    hook_events: list[str] = []

    @tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append(arguments)
        return {"content": [{"type": "text", "text": str(arguments["a"] + arguments["b"])}]}

    async def on_prompt(hook_input: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
        hook_events.append(hook_input["hook_event_name"])
        return {}

    user_options = dataclasses.replace(
        options,
        mcp_servers={"calc": create_sdk_mcp_server("calc", tools=[add])},
        allowed_tools=["mcp__calc__add"],
        hooks={"UserPromptSubmit": [HookMatcher(hooks=[on_prompt])]},
    )
    server.enqueue(tool_use_response("mcp__calc__add", {"a": 2, "b": 3}))
    server.enqueue(tool_use_response(APPEND, {"label": "human", "content": "Asked for 2 + 3."}))
    server.enqueue(text_response("5"))
    async with MemoryAwareAgent(user_options, memory=agent_memory) as agent:
        result = await agent.process_turn("What is 2 + 3?")
    assert result.text == "5"
    assert calls == [{"a": 2, "b": 3}]
    assert hook_events == ["UserPromptSubmit"]
    assert agent_memory.get_block("human").value.endswith("Asked for 2 + 3.")
    first = server.message_requests()[0]
    assert "mcp__calc__add" in first.tools and APPEND in first.tools
    assert user_options.mcp_servers.keys() == {"calc"}  # the user's options are not modified


async def test_drop_in_surface_query_and_receive_response(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    server.enqueue(text_response("pong"))
    agent = MemoryAwareAgent(options, memory=agent_memory)
    await agent.connect()
    try:
        await agent.query("ping")
        messages = [message async for message in agent.receive_response()]
    finally:
        await agent.disconnect()
    assert isinstance(messages[-1], ResultMessage)
    texts = [
        b.text
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, TextBlock)
    ]
    assert texts == ["pong"]
    stored = [m for m in agent_memory.recall.all_messages("e2e-agent") if m.role == "assistant"]
    assert stored[0].text == "pong"


async def test_sdk_errors_reach_the_caller_as_the_sdk_raises_them(
    options: ClaudeAgentOptions, agent_memory: MemoryManager, tmp_path
) -> None:
    broken = dataclasses.replace(options, cli_path=str(tmp_path / "no-such-cli"))
    with pytest.raises(CLINotFoundError):
        async with MemoryAwareAgent(broken, memory=agent_memory):
            pass


async def test_a_restart_from_another_directory_carries_the_conversation(
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    storage_settings: Settings,
    tmp_path,
) -> None:
    """The SDK finds stored sessions by cwd; elsewhere, a new session is seeded with the kept
    messages, which reach the model as real turns (not as text in the system prompt)."""
    server.enqueue(text_response("Noted: the meeting is at 10:30."))
    with MemoryManager(agent_id="mover", settings=storage_settings) as memory:
        async with MemoryAwareAgent(options, memory=memory) as agent:
            await agent.process_turn("The meeting is at 10:30.")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with MemoryManager(agent_id="mover", settings=storage_settings) as memory:
        async with MemoryAwareAgent(
            dataclasses.replace(options, cwd=str(elsewhere)), memory=memory
        ) as agent:
            await agent.process_turn("When is the meeting?")
    last = server.message_requests()[-1]
    assert conversation(last) == [
        ("user", "The meeting is at 10:30."),
        ("assistant", "Noted: the meeting is at 10:30."),
        ("user", "When is the meeting?"),
    ]
    assert "10:30" not in last.system_text


def conversation(request) -> list[tuple[str, str]]:
    """(role, text) of every user and assistant message a request carried, in order; the CLI's
    own system reminders and the memory layer's per-turn `<turn_context>` left out."""
    turns = []
    for message in request.messages:
        if message["role"] not in ("user", "assistant"):
            continue
        content = message["content"]
        text = (
            content
            if isinstance(content, str)
            else " ".join(
                str(block.get("text", ""))
                for block in content
                if block.get("type") == "text"
                and not str(block.get("text", "")).startswith("<turn_context>")
            )
        )
        if text.strip() and not text.lstrip().startswith("<system-reminder>"):
            turns.append((message["role"], text.strip()))
    return turns


async def test_an_interrupted_turn_keeps_what_was_stored_and_stores_nothing_twice(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    server.enqueue(text_response("This answer arrives too late.", delay=3.0))
    server.enqueue(text_response("Second turn answer."))
    async with MemoryAwareAgent(options, memory=agent_memory) as agent:
        await agent.query("Tell me a long story.")
        await server_wait(server, 1)
        await agent.interrupt()
        interrupted = [message async for message in agent.receive_response()]
        assert isinstance(interrupted[-1], ResultMessage)
        second = await agent.process_turn("Never mind.")
    assert second.text == "Second turn answer."
    stored = agent_memory.recall.all_messages("e2e-agent")
    prompts = [m.text for m in stored if m.message_type == "user"]
    # The CLI's own marker of the interruption is part of the conversation, so it is kept too.
    assert prompts == ["Tell me a long story.", "[Request interrupted by user]", "Never mind."]
    assert len([m for m in stored if m.message_type == "result"]) == 2
    assert "This answer arrives too late." not in str([m.text for m in stored])
    with agent_memory.db.reading() as conn:
        duplicates = conn.execute(
            "SELECT sdk_uuid, COUNT(*) FROM messages WHERE sdk_uuid IS NOT NULL GROUP BY sdk_uuid "
            "HAVING COUNT(*) > 1"
        ).fetchall()
    assert duplicates == []


async def server_wait(server: ScriptedMessagesServer, count: int) -> None:
    """Wait (without blocking the event loop) until the server has received `count` turn
    requests."""
    import asyncio

    for _ in range(200):
        if len(server.message_requests()) >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the CLI never sent the request")


async def test_archival_and_conversation_search_tools_through_the_agent(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    server.enqueue(
        tool_use_response(
            "mcp__memory__archival_memory_insert",
            {"content": "Ada's cat is called Pixel.", "tags": ["pets"]},
        )
    )
    server.enqueue(text_response("Saved."))
    server.enqueue(
        tool_use_response("mcp__memory__archival_memory_search", {"query": "name of the cat"})
    )
    server.enqueue(
        tool_use_response("mcp__memory__conversation_search", {"query": "cat", "roles": ["user"]})
    )
    server.enqueue(text_response("Your cat is Pixel."))
    async with MemoryAwareAgent(options, memory=agent_memory) as agent:
        await agent.process_turn("My cat is called Pixel.")
        result = await agent.process_turn("What is my cat called?")
    assert result.text == "Your cat is Pixel."
    requests = server.message_requests()
    found = str(requests[-2].tool_results[-1]["content"])
    assert "Pixel" in found and "pets" in found
    recalled = str(requests[-1].tool_results[-1]["content"])
    assert "My cat is called Pixel." in recalled
    hits = agent_memory.archival_memory_search("cat name", mode="vector")
    assert hits[0].content == "Ada's cat is called Pixel."


async def test_a_conversation_stored_without_a_session_is_carried_into_the_first_one(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    """Messages imported or stored through the manager reach the model in a new session."""
    agent_memory.store_message("user", "Imported: my favourite colour is teal.")
    agent_memory.store_message("assistant", "Imported: noted, teal.")
    async with MemoryAwareAgent(options, memory=agent_memory) as agent:
        await agent.process_turn("What is my favourite colour?")
    first = server.message_requests()[0]
    assert conversation(first) == [
        ("user", "Imported: my favourite colour is teal."),
        ("assistant", "Imported: noted, teal."),
        ("user", "What is my favourite colour?"),
    ]
