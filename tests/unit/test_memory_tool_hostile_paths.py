"""Hostile paths: every one gets a clear tool error and leaves the database exactly as it was.

Each path is tried with every command (and as both ends of a rename), through the three ways in:
`MemoryFiles` (raises a `MemoryAgentError`, nothing else), `execute_tool` (the MCP tool: an error
outcome) and the `anthropic` adapter (a `ToolError`, which the tool runner sends with `is_error`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_agent import MemoryManager, Settings
from memory_agent.core.labels import validate_label
from memory_agent.core.memory_paths import memory_path, parse_memory_path
from memory_agent.errors import MemoryAgentError, MemoryToolError
from memory_agent.integrations.anthropic_memory import ManagedMemoryTool
from memory_agent.tools.memory_tool import MemoryFiles

HOSTILE_PATHS: dict[str, object] = {
    "absolute outside": "/etc/passwd",
    "relative": "memories/notes.md",
    "root prefix trick": "/memoriesX/notes.md",
    "root prefix trick 2": "/memories-backup/x",
    "dot dot": "/memories/../etc/passwd",
    "dot dot deep": "/memories/a/../../etc",
    "dot dot alone": "/memories/..",
    "dot dot trailing slash": "/memories/../",
    "encoded dot dot": "/memories/%2e%2e/etc",
    "encoded dot dot upper": "/memories/%2E%2E/%2E%2E/etc",
    "encoded slash": "/memories/..%2f..%2fetc",
    "double encoded": "/memories/%252e%252e/x",
    "encoded nul": "/memories/a%00.md",
    "nul inside": "/memories/notes\x00.md",
    "nul alone": "/memories/\x00",
    "nul before root": "\x00/memories/x",
    "newline": "/memories/a\nb",
    "carriage return": "/memories/a\rb",
    "tab": "/memories/\t",
    "escape char": "/memories/\x1b[31mred",
    "delete char": "/memories/a\x7f",
    "very long": "/memories/" + "a" * 5000,
    "too many segments": "/memories/" + "/".join(["a"] * 17),
    "segment too long": "/memories/" + "x" * 65,
    "label too long": "/memories/" + "/".join(["abcdefghij"] * 10),
    "backslashes": "\\memories\\notes.md",
    "backslash traversal": "/memories\\..\\etc",
    "backslash inside": "/memories/a\\b",
    "empty": "",
    "slash only": "/",
    "home": "~/memories/x",
    "space": "/memories/ notes.md",
    "unicode": "/memories/café.md",
    "angle brackets": "/memories/a<b>.md",
    "quote": '/memories/a"b',
    "shell": "/memories/$(rm -rf ~)",
    "url": "file:///memories/x",
    "rtl override": "/memories/\u202enotes",
    "lone surrogate": "/memories/\ud800",
    "upper case root": "/MEMORIES/x",
    "double slash root": "//memories/x",
    "integer": 12345,
    "list": ["/memories/x"],
    "object": {"path": "/memories/x"},
}


def _snapshot(memory: MemoryManager) -> dict[str, list[tuple[Any, ...]]]:
    with memory.db.reading() as conn:
        return {
            table: [tuple(row) for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")]
            for table in ("blocks", "agent_blocks", "block_history", "journal")
        }


def _calls(path: object) -> list[dict[str, Any]]:
    return [
        {"command": "view", "path": path},
        {"command": "create", "path": path, "file_text": "x"},
        {"command": "str_replace", "path": path, "old_str": "Nothing", "new_str": "x"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "x"},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": path, "new_path": "/memories/moved"},
        {"command": "rename", "old_path": "/memories/human", "new_path": path},
    ]


@pytest.fixture
def seeded(memory: MemoryManager) -> MemoryManager:
    memory.create_block("project/notes.md", "Nothing here yet.", in_prompt=False)
    return memory


@pytest.mark.sqlite_only(
    reason="each path is refused while it is parsed, before the store is read or written; "
    "the store's own refusals run on both backends in test_a_refused_operation_changes_nothing"
)
@pytest.mark.parametrize("path", list(HOSTILE_PATHS.values()), ids=list(HOSTILE_PATHS))
def test_a_hostile_path_is_refused_cleanly_with_nothing_changed(
    seeded: MemoryManager, path: object
) -> None:
    before = _snapshot(seeded)
    files = MemoryFiles(seeded)
    tool = ManagedMemoryTool(seeded)
    for arguments in _calls(path):
        with pytest.raises(MemoryAgentError) as raised:
            files.run(arguments)
        message = str(raised.value)
        assert message and "\x00" not in message and len(message) < 600, message
        outcome = seeded.execute_tool("memory", arguments)
        assert outcome.is_error and outcome.text.startswith("Error: "), outcome
        with pytest.raises(ToolError):
            tool.call(arguments)
    assert _snapshot(seeded) == before


RISKY_OPERATIONS: dict[str, dict[str, Any]] = {
    "rename onto an existing file": {
        "command": "rename",
        "old_path": "/memories/persona",
        "new_path": "/memories/human",
    },
    "rename onto an existing directory": {
        "command": "rename",
        "old_path": "/memories/persona",
        "new_path": "/memories/project",
    },
    "rename onto the root": {
        "command": "rename",
        "old_path": "/memories/persona",
        "new_path": "/memories",
    },
    "rename the root": {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
    "rename a directory into itself": {
        "command": "rename",
        "old_path": "/memories/project",
        "new_path": "/memories/project/inner",
    },
    "rename below a file": {
        "command": "rename",
        "old_path": "/memories/persona",
        "new_path": "/memories/human/persona",
    },
    "delete the root": {"command": "delete", "path": "/memories"},
    "delete the root with a slash": {"command": "delete", "path": "/memories/"},
    "delete the root spelled with a dot": {"command": "delete", "path": "/memories/."},
    "delete the root spelled with dot dot": {"command": "delete", "path": "/memories/project/.."},
    "rename the root spelled with dot dot": {
        "command": "rename",
        "old_path": "/memories/sub/..",
        "new_path": "/memories/x",
    },
    "create the root": {"command": "create", "path": "/memories", "file_text": "x"},
    "create over a file": {"command": "create", "path": "/memories/human", "file_text": "x"},
    "create over a directory": {"command": "create", "path": "/memories/project", "file_text": "x"},
    "create below a file": {"command": "create", "path": "/memories/human/x.md", "file_text": "x"},
    "str_replace a directory": {
        "command": "str_replace",
        "path": "/memories/project",
        "old_str": "a",
        "new_str": "b",
    },
    "insert past the end": {
        "command": "insert",
        "path": "/memories/human",
        "insert_line": 99,
        "insert_text": "x",
    },
    "insert before the start": {
        "command": "insert",
        "path": "/memories/human",
        "insert_line": -1,
        "insert_text": "x",
    },
    "insert a huge line number": {
        "command": "insert",
        "path": "/memories/human",
        "insert_line": 2**70,
        "insert_text": "x",
    },
    "create with a lone surrogate": {
        "command": "create",
        "path": "/memories/s.md",
        "file_text": "\ud800",
    },
}


@pytest.fixture(scope="module")
def seeded_once(module_store: dict[str, str]) -> Iterator[MemoryManager]:
    """`seeded` once per module and backend: every case below is refused and asserts that it
    changed nothing, so they share the store (`module_store`)."""
    settings = Settings.from_env(module_store, env_file=None)
    with MemoryManager(agent_id="agent-a", settings=settings) as memory:
        memory.create_block("project/notes.md", "Nothing here yet.", in_prompt=False)
        yield memory


@pytest.mark.parametrize("arguments", list(RISKY_OPERATIONS.values()), ids=list(RISKY_OPERATIONS))
def test_a_refused_operation_changes_nothing(
    seeded_once: MemoryManager, arguments: dict[str, Any]
) -> None:
    seeded = seeded_once
    before = _snapshot(seeded)
    with pytest.raises(MemoryAgentError):
        MemoryFiles(seeded).run(arguments)
    assert seeded.execute_tool("memory", arguments).is_error
    assert _snapshot(seeded) == before


_PATH_TEXT = st.text(alphabet=st.sampled_from(list("/.%2eE\\\x00\n ab-_~é")), max_size=24)


@settings(max_examples=200, deadline=None)
@given(
    tail=_PATH_TEXT,
    prefix=st.sampled_from(["/memories", "/memories/", "", "/", "memories/", "/memoriesX"]),
)
def test_any_path_is_refused_cleanly_or_names_a_label_that_maps_back(
    prefix: str, tail: str
) -> None:
    path = prefix + tail
    try:
        parsed = parse_memory_path(path)
    except MemoryToolError as error:
        assert "\x00" not in str(error) and "\n" not in str(error)
        return
    assert path.startswith("/memories")
    if parsed.is_root:
        return
    assert validate_label(parsed.label) == parsed.label
    assert (
        ".." not in parsed.label.split("/") and "%" not in parsed.label and "\\" not in parsed.label
    )
    assert parse_memory_path(memory_path(parsed.label)).label == parsed.label


_SEGMENTS = st.lists(st.sampled_from(["a", "b", "notes.md", ".", "..", "", "..."]), max_size=8)


@settings(max_examples=300, deadline=None)
@given(_SEGMENTS)
def test_dot_segments_resolve_as_a_filesystem_resolves_them(segments: list[str]) -> None:
    """The label a path names is what `os.path.normpath` makes of it under /memories (Anthropic's
    tool resolves the path on disk); a path whose `..` climbs above the root is refused."""
    path = "/".join(["/memories", *segments])
    depth, climbs = 0, False
    for segment in segments:
        if segment == "..":
            climbs = climbs or depth == 0
            depth = max(depth - 1, 0)
        elif segment not in ("", "."):
            depth += 1
    if climbs:
        with pytest.raises(MemoryToolError, match="would escape /memories directory"):
            parse_memory_path(path)
        return
    resolved = posixpath.normpath(path)
    assert parse_memory_path(path).label == resolved.removeprefix("/memories").strip("/")
