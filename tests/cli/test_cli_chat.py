"""`chat` end to end: the real SDK and its CLI against the scripted Messages API server."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from memory_agent.testing import (
    ScriptedMessagesServer,
    error_response,
    text_response,
    tool_use_response,
)

Run = Callable[..., Result]

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture(autouse=True)
def _own_working_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK keys sessions by working dir, and settings read ./.env: keep both to the test."""
    monkeypatch.chdir(tmp_path)


@pytest.mark.e2e
def test_chat_replies_shows_memory_and_quits(initialised: Run) -> None:
    cli_home = Path.home() / ".claude"  # what the SDK's CLI makes when it starts
    with ScriptedMessagesServer() as server:
        # No message sent, no CLI started: commands and leaving do without one.
        quiet = initialised("chat", input="/help\n/memory\n/quit\n", env=server.env())
        assert quiet.exit_code == 0 and "/memory  show" in quiet.stdout, quiet.output
        assert not cli_home.exists()
        server.enqueue(
            tool_use_response(
                "mcp__memory__core_memory_append", {"label": "human", "content": "Name: Ada"}
            )
        )
        server.enqueue(text_response("Nice to meet you, Ada."))
        result = initialised(
            "chat", input="Hi, I am Ada.\n/memory\n/help\n/nonsense\n/quit\n", env=server.env()
        )
        requests = server.message_requests()
    assert result.exit_code == 0, result.output
    assert cli_home.is_dir()  # the control: the first message started the CLI
    out = result.stdout
    assert "agent> Nice to meet you, Ada." in out
    assert "(memory: core_memory_append)" in out
    assert out.index("agent> Nice") < out.index("Name: Ada") < out.index("/memory  show")
    assert "persona" in out and "Unknown command /nonsense" in out
    assert "<memory_blocks>" in requests[0].system_text
    stored = json.loads(initialised("--json", "messages", "--search", "Ada").stdout)
    assert any(m["text"] == "Hi, I am Ada." for m in stored)
    # The model's edit through the SDK's MCP tool, in a CLI process run by a person, is the model's.
    edit = json.loads(initialised("--json", "journal", "--limit", "1").stdout)[0]
    assert (edit["action"], edit["author_kind"], edit["author"]) == (
        "core_memory_append",
        "model",
        "ada",
    )


def _read_until(stream: int, marker: bytes, timeout: float) -> bytes:
    """Read until `marker` shows (a poll, not select(): in a long run descriptors pass 1024)."""
    seen = b""
    deadline = time.monotonic() + timeout
    poller = select.poll()
    poller.register(stream, select.POLLIN)
    while marker not in seen:
        ready = poller.poll(max(0.0, deadline - time.monotonic()) * 1000)
        chunk = os.read(stream, 4096) if ready else b""
        if not chunk:
            raise AssertionError(f"no {marker!r} on stdout; got {seen!r}")
        seen += chunk
    return seen


@pytest.mark.e2e
@pytest.mark.parametrize("leave", ["ctrl-d", "ctrl-c"])
def test_leaving_chat_at_the_prompt_ends_the_line(
    leave: str, initialised: Run, storage: Path
) -> None:
    """A real process at its prompt: end of input (Ctrl-D, at the first prompt) or SIGINT
    (Ctrl-C, at the prompt after a turn) leaves with exit status 0 and the prompt's line ended.
    (The Ctrl-D case is also the test of chat ending at the end of its input: a test of that
    through CliRunner checked the same two things.)"""
    command = [
        sys.executable,
        "-c",
        "from memory_agent.cli import main; main()",
        "--storage-dir",
        str(storage),
        "chat",
    ]
    with ScriptedMessagesServer() as server:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **server.env()},
        )
        try:
            assert process.stdout is not None and process.stdin is not None
            shown = _read_until(process.stdout.fileno(), b"you> ", timeout=120)
            if leave == "ctrl-d":  # at the first prompt: no CLI has started yet
                process.stdin.close()
            else:  # stdin stays open: only the signal can end the read
                # After a turn, so the CLI runs and the SDK's threads exist: the signal may
                # reach any thread of the process while chat waits for the next line.
                process.stdin.write(b"hello\n")
                process.stdin.flush()
                shown += _read_until(process.stdout.fileno(), b"you> ", timeout=120)
                assert b"agent> " in shown, shown
                process.send_signal(signal.SIGINT)
            process.wait(timeout=120)
            rest = process.stdout.read()
            errors = process.stderr.read() if process.stderr else b""
        finally:
            process.kill()
    assert process.returncode == 0, errors.decode()
    assert (shown + rest).endswith(b"you> \n"), shown + rest


def test_chat_without_credentials_says_so_in_one_line(
    initialised: Run, error_of: Callable[[Result], str]
) -> None:
    line = error_of(initialised("chat", input="hello\n"))
    assert "ANTHROPIC_API_KEY" in line and "ANTHROPIC_BASE_URL" in line


@pytest.mark.e2e
def test_the_first_chat_creates_the_storage_dir_and_the_agent(run: Run, storage: Path) -> None:
    assert not storage.exists()
    with ScriptedMessagesServer() as server:
        server.enqueue(text_response("Hello."))
        result = run("--agent", "newbie", "chat", input="hi\n", env=server.env())
    assert result.exit_code == 0, result.output
    assert (
        f"Created agent 'newbie' in {storage}" in result.stdout and "agent> Hello." in result.stdout
    )
    listed = json.loads(run("--json", "agents", "list").stdout)
    assert [(a["agent_id"], a["is_default"], a["messages"] > 0) for a in listed] == [
        ("newbie", True, True)
    ]


@pytest.mark.e2e
def test_a_refused_key_ends_chat_with_one_line_and_stores_no_answer(
    initialised: Run, error_of: Callable[[Result], str]
) -> None:
    with ScriptedMessagesServer() as server:
        server.enqueue(error_response(401, should_retry=False))
        result = initialised("chat", input="hello\nanyone?\n", env=server.env())
    line = error_of(result)
    assert "HTTP 401" in line and "ANTHROPIC_API_KEY" in line
    stored = json.loads(initialised("--json", "messages").stdout)
    assert [m["role"] for m in stored if m["role"] == "assistant"] == []
    assert not any("Failed to authenticate" in str(m["text"]) and m["in_context"] for m in stored)


@pytest.mark.e2e
def test_the_offline_demo_needs_no_key_and_runs_the_memory_tools(run: Run, storage: Path) -> None:
    lines = "hello\n/memory\nsave something\nfind it\nanything else\n/quit\n"
    first = run("chat", "--offline-demo", input=lines)
    assert first.exit_code == 0, first.output
    out = first.stdout
    assert f"Created agent 'offline-demo' in {storage}" in out
    for tool in ("core_memory_append", "archival_memory_insert", "archival_memory_search"):
        assert f"(memory: {tool})" in out
    assert out.index("(memory: core_memory_append)") < out.index(
        "Tried memory-agent with the offline demo."
    )
    assert "agent> OK" in out  # past the script, the scripted model's default answer
    recalled = json.loads(
        run("--json", "--agent", "offline-demo", "recall", "demo", "--mode", "keyword").stdout
    )
    assert [hit["tags"] for hit in recalled] == [["demo"]]

    again = run("chat", "--offline-demo", input="hello again\n")
    assert again.exit_code == 0, again.output
    assert "already remember" in again.stdout and "(memory:" not in again.stdout
    human = json.loads(run("--json", "--agent", "offline-demo", "blocks", "show", "human").stdout)
    assert human["value"].count("Tried memory-agent with the offline demo.") == 1

    # The demo's agent is never the storage dir's default: a command naming no agent gets one of
    # its own, so the demo's memories and yours never mix.
    mine = run("blocks", "set", "human", "Name: Ada.")
    assert mine.exit_code == 0 and "Created agent 'agent-" in mine.stdout, mine.output
    agents = {a["agent_id"]: a for a in json.loads(run("--json", "agents", "list").stdout)}
    assert not agents["offline-demo"]["is_default"] and len(agents) == 2
    human = json.loads(run("--json", "--agent", "offline-demo", "blocks", "show", "human").stdout)
    assert "Name: Ada." not in human["value"]
