"""The `anthropic` SDK's tool runner drives our memory tool against the scripted Messages API
server, and our tool answers the same command script as the package's own local-filesystem memory
tool.

Both tools run under the real `client.beta.messages.tool_runner`: the scripted model calls
`memory` once per command, the runner runs the tool and sends the result back, and the server
records what came back. The comparison is of those recorded tool results (text and `is_error`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic.lib.tools import ToolError
from anthropic.tools import (
    BetaAsyncLocalFilesystemMemoryTool,
    BetaLocalFilesystemMemoryTool,
)
from backends import backend_environ

from memory_agent import MemoryManager, Settings
from memory_agent.integrations.anthropic_memory import AsyncManagedMemoryTool, ManagedMemoryTool
from memory_agent.testing import (
    DUMMY_API_KEY,
    ScriptedMessagesServer,
    text_response,
    tool_use_response,
)

NOTES = "/memories/project/notes.md"
MODEL = "claude-sonnet-5-5"  # any name: the scripted server answers every model

SCRIPT: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories"},
    {"command": "create", "path": NOTES, "file_text": "alpha\nbeta\nbeta\ngamma\n"},
    {"command": "create", "path": NOTES, "file_text": "again"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": NOTES},
    {"command": "view", "path": NOTES, "view_range": [2, 3]},
    {"command": "view", "path": NOTES, "view_range": [3, -1]},
    {"command": "str_replace", "path": NOTES, "old_str": "beta", "new_str": "BETA"},
    {"command": "str_replace", "path": NOTES, "old_str": "delta", "new_str": "DELTA"},
    {"command": "str_replace", "path": NOTES, "old_str": "gamma", "new_str": "GAMMA"},
    {"command": "insert", "path": NOTES, "insert_line": 9, "insert_text": "nine"},
    {"command": "insert", "path": NOTES, "insert_line": -1, "insert_text": "minus"},
    {"command": "insert", "path": NOTES, "insert_line": 0, "insert_text": "top\n"},
    {"command": "insert", "path": NOTES, "insert_line": 5, "insert_text": "bottom"},
    {"command": "view", "path": NOTES},
    {"command": "str_replace", "path": "/memories/project", "old_str": "a", "new_str": "b"},
    {"command": "str_replace", "path": "/memories/nope.md", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": "/memories/nope.md", "insert_line": 0, "insert_text": "x"},
    {"command": "view", "path": "/memories/missing"},
    {"command": "create", "path": "/memories/short.md", "file_text": "no newline"},
    {"command": "insert", "path": "/memories/short.md", "insert_line": 1, "insert_text": "second"},
    {"command": "view", "path": "/memories/short.md"},
    {"command": "create", "path": "/memories/.hidden", "file_text": "h"},
    {"command": "create", "path": "/memories/project/deep/er/est.md", "file_text": "three levels"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/memories/project"},
    {"command": "rename", "old_path": NOTES, "new_path": "/memories/human"},
    {"command": "rename", "old_path": "/memories/nope.md", "new_path": "/memories/other.md"},
    {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
    {"command": "rename", "old_path": "/memories/project", "new_path": "/memories/archive"},
    {"command": "view", "path": "/memories"},
    {"command": "rename", "old_path": "/memories/short.md", "new_path": "/memories/long.md"},
    {"command": "view", "path": "/memories/long.md"},
    {"command": "delete", "path": "/memories/archive"},
    {"command": "delete", "path": "/memories/archive"},
    {"command": "delete", "path": "/memories/long.md"},
    {"command": "delete", "path": "/memories"},
    {"command": "view", "path": "/memories/.hidden"},
    {"command": "view", "path": "/memories"},
    {"command": "view", "path": "/etc/passwd"},
]
"""Every command, its successes and the refusals both tools word alike."""

DOTTED = [
    {"command": "create", "path": "/memories/./dot.md", "file_text": "one\ntwo\n"},
    {"command": "view", "path": "/memories/dot.md"},
    {"command": "view", "path": "/memories/sub/../dot.md"},
    {"command": "view", "path": "/memories/."},
    {
        "command": "str_replace",
        "path": "/memories/x/y/../../dot.md",
        "old_str": "two",
        "new_str": "2",
    },
    {"command": "insert", "path": "/memories/./dot.md/", "insert_line": 0, "insert_text": "zero"},
    {
        "command": "rename",
        "old_path": "/memories/./dot.md",
        "new_path": "/memories/sub/../moved.md",
    },
    {"command": "view", "path": "/memories/moved.md"},
    *(
        {"command": "delete", "path": path}
        for path in ("/memories", "/memories/", "/memories/.", "/memories/sub/..")
    ),
    *(
        {"command": "rename", "old_path": path, "new_path": "/memories/elsewhere"}
        for path in (
            "/memories",
            "/memories/",
            "/memories/.",
            "/memories/sub/..",
            "/memories/a/b/../..",
        )
    ),
    {"command": "view", "path": "/memories/sub/.."},
    {"command": "delete", "path": "/memories/sub/../moved.md"},
    {"command": "view", "path": "/memories"},
]
"""`.` and `..` resolved as a filesystem resolves them: `/memories/.` and `/memories/sub/..` are the
root, which neither tool deletes or renames, and any other spelling names the file it resolves
to."""

EXTENDED = {
    "/memories/../etc": "Path /memories/../etc would escape /memories directory",
}
"""Paths the filesystem tool resolves and we refuse outright: our message starts with its
sentence."""

pytestmark = pytest.mark.usefixtures("backend")


def _script(server: ScriptedMessagesServer, script: list[dict[str, Any]]) -> int:
    """Script one `memory` call per command, then a final answer; the index of the run's first
    request."""
    server.clear()
    for arguments in script:
        server.enqueue(tool_use_response("memory", arguments))
    server.enqueue(text_response("Done."))
    return len(server.message_requests())


def _runner_arguments(tool: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 1024,
        "tools": [tool],
        "messages": [{"role": "user", "content": "Keep notes."}],
    }


def _run(
    server: ScriptedMessagesServer, tool: Any, script: list[dict[str, Any]]
) -> list[tuple[str, bool]]:
    """Drive `tool` through the real tool runner; the tool results the model received, in order."""
    first = _script(server, script)
    client = anthropic.Anthropic(base_url=server.url, api_key=DUMMY_API_KEY, max_retries=0)
    final = client.beta.messages.tool_runner(**_runner_arguments(tool)).until_done()
    assert final.content[0].text == "Done."
    # The first request carries Anthropic's memory tool type, not a custom tool.
    assert server.message_requests()[first].tool_definitions == [
        {"type": "memory_20250818", "name": "memory"}
    ]
    return _results(server.message_requests()[first + 1 :], len(script))


def _results(requests: list[Any], count: int) -> list[tuple[str, bool]]:
    results = []
    for request in requests[:count]:
        (result,) = request.tool_results
        content = result.get("content")
        text = content if isinstance(content, str) else "".join(block["text"] for block in content)
        results.append((text, bool(result.get("is_error"))))
    assert len(results) == count
    return results


_DIRECTORY_LINE = re.compile(r"^[0-9.]+[BKMG]\t(/memories[^\n]*/)$", re.MULTILINE)
_VIEWED_DIRECTORY = re.compile(r"(excluding hidden items:\n)[0-9.]+[BKMG]\t")


def _normalised(text: str) -> str:
    """A directory's own size differs (a filesystem shows its inode size, we the files' total)."""
    text = _VIEWED_DIRECTORY.sub(lambda match: f"{match.group(1)}<dir>\t", text)
    return _DIRECTORY_LINE.sub(lambda match: f"<dir>\t{match.group(1)}", text)


@pytest.fixture
def server() -> Any:
    with ScriptedMessagesServer() as running:
        yield running


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    settings = Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(tmp_path / "store")}), env_file=None
    )
    with MemoryManager(agent_id="api-user", settings=settings) as manager:
        yield manager


def _filesystem_like(memory: MemoryManager, root: Path) -> BetaLocalFilesystemMemoryTool:
    """The local-filesystem tool holding the same two files a new agent starts with."""
    tool = BetaLocalFilesystemMemoryTool(base_path=str(root))
    for block in memory.list_blocks():
        (tool.memory_root / block.label).write_text(block.value, encoding="utf-8")
    return tool


def test_the_tool_runner_gets_the_same_results_and_errors_from_both_tools(
    server: ScriptedMessagesServer, memory: MemoryManager, tmp_path: Path
) -> None:
    reference = _filesystem_like(memory, tmp_path / "fs")
    ours = _run(server, ManagedMemoryTool(memory), SCRIPT)
    theirs = _run(server, reference, SCRIPT)
    for arguments, mine, expected in zip(SCRIPT, ours, theirs):
        assert (_normalised(mine[0]), mine[1]) == (_normalised(expected[0]), expected[1]), arguments
    assert (
        sum(error for _, error in ours) >= 15
    )  # the script exercises the refusals, not only successes

    extended = [{"command": "view", "path": path} for path in EXTENDED]
    for (mine, my_error), (expected, their_error) in zip(
        _run(server, ManagedMemoryTool(memory), extended), _run(server, reference, extended)
    ):
        assert my_error and their_error and mine.startswith(expected)


def test_what_the_runner_did_is_stored_journalled_and_seen_by_the_next_process(
    server: ScriptedMessagesServer, memory: MemoryManager, tmp_path: Path
) -> None:
    _run(server, ManagedMemoryTool(memory), SCRIPT[:14])
    settings = Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(tmp_path / "store")}), env_file=None
    )
    with MemoryManager(agent_id="api-user", settings=settings) as reopened:
        block = reopened.get_block("project/notes.md")
        assert block.value == "top\nalpha\nbeta\nbeta\nGAMMA\nbottom\n" and not block.in_prompt
        assert [v.action for v in reopened.block_history("project/notes.md")] == [
            "create",
            "memory_str_replace",
            "memory_insert_line",
            "memory_insert_line",
        ]
        assert "/memories/project/notes.md" in reopened.get_system_prompt_addition()
        actions = [e.action for e in reopened.journal(agent_id="api-user", limit=4)]
        assert actions == [
            "memory_insert_line",
            "memory_insert_line",
            "memory_str_replace",
            "create_block",
        ]


def test_dotted_paths_resolve_and_the_root_is_refused_as_the_filesystem_tool_does(
    server: ScriptedMessagesServer, memory: MemoryManager, tmp_path: Path
) -> None:
    reference = _filesystem_like(memory, tmp_path / "fs")
    ours, theirs = _run(server, ManagedMemoryTool(memory), DOTTED), _run(server, reference, DOTTED)
    for arguments, mine, expected in zip(DOTTED, ours, theirs):
        assert (_normalised(mine[0]), mine[1]) == (_normalised(expected[0]), expected[1]), arguments
    refusals = [text for text, error in ours if error]
    assert refusals.count("Cannot delete the /memories directory itself") == 4
    assert refusals.count("Cannot rename the /memories directory itself") == 5
    assert sorted(memory.block_sizes()) == ["human", "persona"]  # the root survived every refusal


async def test_the_async_tools_resolve_dotted_paths_alike(
    server: ScriptedMessagesServer, memory: MemoryManager, tmp_path: Path
) -> None:
    reference = _filesystem_like(memory, tmp_path / "fs")
    memory.ensure_agent("async-agent")
    ours = await AsyncManagedMemoryTool(memory, agent_id="async-agent").call(DOTTED[0])
    assert ours == await BetaAsyncLocalFilesystemMemoryTool(
        base_path=str(reference.base_path)
    ).call(DOTTED[0])
    for arguments in DOTTED[1:]:
        mine = await _async_outcome(
            AsyncManagedMemoryTool(memory, agent_id="async-agent"), arguments
        )
        expected = await _async_outcome(
            BetaAsyncLocalFilesystemMemoryTool(base_path=str(reference.base_path)), arguments
        )
        assert (_normalised(mine[0]), mine[1]) == (_normalised(expected[0]), expected[1]), arguments


async def _async_outcome(tool: Any, arguments: dict[str, Any]) -> tuple[str, bool]:
    try:
        return str(await tool.call(arguments)), False
    except ToolError as error:
        return str(error), True


@pytest.mark.parametrize("lines", [999_999, 1_000_000])
def test_view_refuses_a_file_past_999999_lines_with_the_filesystem_tools_sentence(
    memory: MemoryManager, tmp_path: Path, lines: int
) -> None:
    text = "\n".join(["x"] * lines)
    memory.create_block("huge.txt", text, limit=len(text), in_prompt=False)
    reference = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path / "fs"))
    (reference.memory_root / "huge.txt").write_text(text, encoding="utf-8")
    for arguments in (
        {"command": "view", "path": "/memories/huge.txt"},
        {"command": "view", "path": "/memories/huge.txt", "view_range": [1, 2]},
    ):
        mine, theirs = (
            _sync_outcome(ManagedMemoryTool(memory), arguments),
            _sync_outcome(reference, arguments),
        )
        assert mine == theirs
        if lines > 999_999:
            assert mine == (
                "File /memories/huge.txt exceeds maximum line limit of 999,999 lines.",
                True,
            )
        else:
            assert not mine[1]


def _sync_outcome(tool: Any, arguments: dict[str, Any]) -> tuple[str, bool]:
    try:
        return str(tool.call(arguments)), False
    except ToolError as error:
        return str(error), True


async def test_the_async_tool_matches_the_async_filesystem_tool(
    server: ScriptedMessagesServer, memory: MemoryManager, tmp_path: Path
) -> None:
    reference = _filesystem_like(memory, tmp_path / "fs")
    script = SCRIPT[:12]

    async def drive(tool: Any) -> list[tuple[str, bool]]:
        first = _script(server, script)
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key=DUMMY_API_KEY, max_retries=0)
        final = await client.beta.messages.tool_runner(**_runner_arguments(tool)).until_done()
        assert final.content[0].text == "Done."
        return _results(server.message_requests()[first + 1 :], len(script))

    memory.ensure_agent("async-agent")
    ours = await drive(AsyncManagedMemoryTool(memory, agent_id="async-agent"))
    theirs = await drive(BetaAsyncLocalFilesystemMemoryTool(base_path=str(reference.base_path)))
    assert [(_normalised(t), e) for t, e in ours] == [(_normalised(t), e) for t, e in theirs]
    assert (
        memory.get_block("project/notes.md", agent_id="async-agent").value
        == "alpha\nbeta\nbeta\nGAMMA\n"
    )
