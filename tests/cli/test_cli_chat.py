"""`chat` end to end: the real SDK and its CLI against the scripted Messages API server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response

Run = Callable[..., Result]


@pytest.fixture(autouse=True)
def _own_working_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK keys sessions by working dir, and settings read ./.env: keep both to the test."""
    monkeypatch.chdir(tmp_path)


@pytest.mark.e2e
def test_chat_replies_shows_memory_and_quits(initialised: Run) -> None:
    with ScriptedMessagesServer() as server:
        server.enqueue(tool_use_response("mcp__memory__core_memory_append",
                                         {"label": "human", "content": "Name: Ada"}))
        server.enqueue(text_response("Nice to meet you, Ada."))
        result = initialised("chat", input="Hi, I am Ada.\n/memory\n/help\n/nonsense\n/quit\n",
                             env=server.env())
        requests = server.message_requests()
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "agent> Nice to meet you, Ada." in out
    assert "(memory: core_memory_append)" in out
    assert out.index("agent> Nice") < out.index("Name: Ada") < out.index("/memory  show")
    assert "persona" in out and "Unknown command /nonsense" in out
    assert "<memory_blocks>" in requests[0].system_text
    stored = json.loads(initialised("--json", "messages", "--search", "Ada").stdout)
    assert any(m["text"] == "Hi, I am Ada." for m in stored)


@pytest.mark.e2e
def test_chat_ends_at_end_of_input(initialised: Run) -> None:
    with ScriptedMessagesServer() as server:
        result = initialised("chat", input="", env=server.env())
    assert result.exit_code == 0, result.output


def test_chat_without_credentials_says_so_in_one_line(initialised: Run, error_of: Callable[[Result], str]) -> None:
    line = error_of(initialised("chat", input="hello\n"))
    assert "ANTHROPIC_API_KEY" in line and "ANTHROPIC_BASE_URL" in line


def test_chat_for_an_unknown_agent_fails_before_starting(initialised: Run,
                                                          error_of: Callable[[Result], str]) -> None:
    line = error_of(initialised("--agent", "nobody", "chat", env={"ANTHROPIC_API_KEY": "x"}))
    assert "No agent 'nobody'" in line
