"""`messages`, `summary` and `compact` on stored conversations."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import Result

from memory_agent import MemoryManager
from memory_agent.testing import ScriptedMessagesServer, text_response

Run = Callable[..., Result]

pytestmark = pytest.mark.usefixtures("backend")


def _conversation(memory: MemoryManager, turns: int) -> None:
    for number in range(turns):
        memory.store_message("user", f"Question {number} about sailing boats")
        memory.store_message(
            "assistant", [{"type": "text", "text": f"Answer {number} about knots"}]
        )


def test_messages_lists_the_newest_and_searches_all(
    initialised: Run, open_store: Callable[[str], MemoryManager]
) -> None:
    with open_store("ada") as memory:
        _conversation(memory, 3)
        memory.store_message("user", "Something about [red]markup[/red] and trains")
    newest = json.loads(initialised("--json", "messages", "--limit", "2").stdout)
    assert [m["text"] for m in newest] == [
        "Answer 2 about knots",
        "Something about [red]markup[/red] and trains",
    ]
    table = initialised("messages").stdout
    assert "Question 0 about sailing boats" in table and "[red]markup[/red]" in table
    found = json.loads(initialised("--json", "messages", "--search", "trains").stdout)
    assert [m["role"] for m in found] == ["user"] and "trains" in found[0]["text"]
    assert json.loads(initialised("--json", "messages", "--search", '"NEAR(*').stdout) == []


def test_summary_before_and_after_compact(
    initialised: Run, open_store: Callable[[str], MemoryManager]
) -> None:
    assert "No summary yet" in initialised("summary").stdout
    assert json.loads(initialised("--json", "summary").stdout) is None
    with open_store("ada") as memory:
        _conversation(memory, 10)
    with ScriptedMessagesServer() as server:
        server.enqueue(
            text_response("Ada asked about sailing boats; the answers were about knots.")
        )
        result = initialised("compact", env=server.env())
    assert result.exit_code == 0, result.output
    assert "Compaction compacted" in result.stdout
    summary = json.loads(initialised("--json", "summary").stdout)
    assert summary["summary"] == "Ada asked about sailing boats; the answers were about knots."
    assert "knots" in initialised("summary").stdout
    evicted = json.loads(initialised("--json", "messages", "--limit", "100").stdout)
    assert any(not m["in_context"] for m in evicted) and len(evicted) == 20


def test_compact_with_little_to_do_says_so(initialised: Run) -> None:
    result = initialised("--json", "compact")
    assert result.exit_code == 0 and json.loads(result.stdout)["status"] == "skipped"


def test_empty_states_explain_themselves(
    initialised: Run, open_store: Callable[[str], MemoryManager]
) -> None:
    assert "No messages yet" in initialised("messages").stdout
    assert (
        "No stored message matches 'trains'" in initialised("messages", "--search", "trains").stdout
    )
    assert json.loads(initialised("--json", "messages").stdout) == []
    with open_store("ada") as memory:
        _conversation(memory, 1)
    result = initialised("compact")
    assert result.exit_code == 0
    assert (
        "Nothing to compact: 2 message(s) in context" in result.stdout
        and "newest 4" in result.stdout
    )


def test_compact_without_a_model_says_which_variable_to_set(
    initialised: Run, open_store: Callable[[str], MemoryManager]
) -> None:
    with open_store("ada") as memory:
        _conversation(memory, 10)
    result = initialised("compact")
    assert result.exit_code == 1 and "ANTHROPIC_API_KEY" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert json.loads(initialised("--json", "summary").stdout) is None
