"""What an import refuses and what a round trip keeps.

Refused with the field named, and nothing written: two blocks with one id, a flag that is not a
JSON boolean (`"read_only": "false"` would read as true), a limit that is not positive, and an
agent holding labels `a` and `a/b` (`a` a file and a directory at once) - the last refused on every
way a label arrives (create, rename, a shared block renamed by another agent, attach, restore,
import). Kept: an export imported into a fresh store and exported again is the same document byte
for byte, but for what the format documents as volatile (`project_json.stable_form`); a Letta
`.af` round trip keeps the on-demand flag, versions and the SDK's result rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from backends import OtherEnviron, backend_environ
from click.testing import Result
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_agent import (
    BlockExistsError,
    ImportFormatError,
    LabelConflictError,
    MemoryAgentError,
    MemoryManager,
    Settings,
)
from memory_agent.portability import export_memory, import_file, parse_document, project_json
from memory_agent.store.backend import open_store as open_database
from memory_agent.store.snapshot import store_snapshot
from memory_agent.tools.memory_tool import MemoryFiles

Run = Callable[..., Result]
ErrorOf = Callable[[Result], str]

pytestmark = pytest.mark.usefixtures("backend")


def _letta(blocks: list[dict[str, Any]], block_ids: list[str] | None = None) -> dict[str, Any]:
    return {
        "agents": [
            {
                "id": "agent-0",
                "name": "sam",
                "system": "Be brief.",
                "block_ids": block_ids if block_ids is not None else [b["id"] for b in blocks],
                "messages": [],
            }
        ],
        "blocks": blocks,
    }


def _block(block_id: str, label: str, **fields: Any) -> dict[str, Any]:
    return {"id": block_id, "label": label, "value": f"value of {label}", "limit": 100, **fields}


def _target(tmp_path: Path, other_store_environ: OtherEnviron) -> Settings:
    return Settings.from_env(
        other_store_environ(backend_environ({"PERSIST_DIRECTORY": str(tmp_path / "target")})),
        env_file=None,
    )


def _rows(settings: Settings) -> Any:
    """Every row of the target store, or None while no store was created there."""
    if settings.database_url is None and not (settings.persist_directory / "memory.db").exists():
        return None
    try:
        db = open_database(settings.persist_directory, settings.database_url, create=False)
    except MemoryAgentError:
        return None
    with db:
        return store_snapshot(db)


def _refused(
    document: dict[str, Any], tmp_path: Path, other_store_environ: OtherEnviron, *expected: str
) -> None:
    """The import is refused with a message holding every `expected` text, and the target is
    untouched."""
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    settings = _target(tmp_path, other_store_environ)
    before = _rows(settings)
    with pytest.raises(ImportFormatError) as raised:
        import_file(source, settings.persist_directory, agent_id="copy", settings=settings)
    for text in expected:
        assert text in str(raised.value), (text, str(raised.value))
    assert _rows(settings) == before


# ----- Letta files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("blocks", "block_ids", "expected"),
    [
        (
            [_block("block-0", "human"), _block("block-0", "persona")],
            ["block-0"],
            ("blocks[1]", "'block-0'", "unique"),
        ),
        (
            [_block("block-0", "human", read_only="false")],
            None,
            ("'human'", "'read_only'", "'false'", "true or false"),
        ),
        ([_block("block-0", "human", read_only=0)], None, ("'read_only'", "true or false")),
        ([_block("block-0", "human", limit=-5)], None, ("'human'", "'limit'", "-5", "positive")),
        ([_block("block-0", "human", limit=0)], None, ("'limit'", "positive")),
        ([_block("block-0", "human", limit="100")], None, ("'limit'", "positive")),
        (
            [_block("block-0", "human", metadata={"memory_agent_in_prompt": "no"})],
            None,
            ("memory_agent_in_prompt",),
        ),
        (
            [_block("block-0", "human", metadata={"memory_agent_version": 0})],
            None,
            ("memory_agent_version",),
        ),
        (
            [_block("block-0", "notes"), _block("block-1", "notes/today")],
            None,
            ("'notes'", "'notes/today'", "file"),
        ),
    ],
)
def test_a_letta_file_is_refused_naming_the_field_and_nothing_is_written(
    tmp_path: Path,
    other_store_environ: OtherEnviron,
    blocks: list[dict[str, Any]],
    block_ids: list[str] | None,
    expected: tuple[str, ...],
) -> None:
    _refused(_letta(blocks, block_ids), tmp_path, other_store_environ, *expected)


def test_an_inline_block_may_not_reuse_a_file_block_id(
    tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    document = _letta([_block("block-0", "human")])
    document["agents"][0]["memory_blocks"] = [_block("block-0", "persona")]
    _refused(document, tmp_path, other_store_environ, "memory_blocks[0]", "'block-0'")


def test_a_letta_flag_written_as_a_boolean_or_left_out_is_read(
    tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    document = _letta(
        [
            _block("block-0", "human", read_only=True),
            _block("block-1", "persona", read_only=None),
            _block("block-2", "notes"),
        ]
    )
    source = tmp_path / "ok.af"
    source.write_text(json.dumps(document), encoding="utf-8")
    settings = _target(tmp_path, other_store_environ)
    import_file(source, settings.persist_directory, settings=settings)
    with MemoryManager(agent_id="sam", settings=settings) as memory:
        assert {b.label: b.read_only for b in memory.list_blocks()} == {
            "human": True,
            "persona": False,
            "notes": False,
        }


_ANY = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.integers(),
        st.floats(),
        st.sampled_from(["false", "true", "0", "1", "", "100"]),
    ),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)


@settings(max_examples=200, deadline=None)
@given(read_only=_ANY, limit=_ANY, in_prompt=_ANY, version=_ANY)
def test_a_letta_block_field_is_read_exactly_as_written_or_refused(
    read_only: Any, limit: Any, in_prompt: Any, version: Any
) -> None:
    metadata = {"memory_agent_in_prompt": in_prompt, "memory_agent_version": version}
    document = _letta(
        [
            {
                "id": "block-0",
                "label": "human",
                "value": "v",
                "read_only": read_only,
                "limit": limit,
                "metadata": metadata,
            }
        ]
    )
    try:
        (block,) = parse_document(document, default_limit=5000).blocks
    except ImportFormatError:
        return
    assert block.read_only is (False if read_only is None else read_only)
    assert (
        block.limit == (5000 if limit is None else limit)
        and type(block.limit) is int
        and block.limit > 0
    )
    assert block.in_prompt is (True if in_prompt is None else in_prompt)
    assert block.version == (1 if version is None else version) and type(block.version) is int


# ----- the project's JSON
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["blocks"].append(dict(d["blocks"][0])), ("two blocks with id",)),
        (
            lambda d: d["blocks"][0].update(read_only="false"),
            ("blocks[0].read_only", "bool", "str"),
        ),
        (lambda d: d["blocks"][0].update(in_prompt=1), ("blocks[0].in_prompt", "bool")),
        (
            lambda d: d["attachments"][0].update(read_only="true"),
            ("attachments[0].read_only", "bool"),
        ),
        (lambda d: d["messages"][0].update(in_context="yes"), ("messages[0].in_context", "bool")),
        (lambda d: d["blocks"][0].update(limit=-5), ("limit -5", "positive")),
        (lambda d: d["blocks"][0].update(limit=0), ("limit 0", "positive")),
        (lambda d: d["block_history"][0].update(limit=-1), ("limit -1", "positive")),
        (
            lambda d: d["attachments"].append(
                {**d["attachments"][0], "block_id": "block-extra", "label": "human/x"}
            ),
            ("names a block",),
        ),
    ],
)
def test_a_project_export_is_refused_naming_the_field_and_nothing_is_written(
    memory: MemoryManager,
    tmp_path: Path,
    other_store_environ: OtherEnviron,
    change: Callable[[dict[str, Any]], None],
    expected: tuple[str, ...],
) -> None:
    memory.store_message("user", "hello")
    document = export_memory(memory)
    change(document)
    _refused(document, tmp_path, other_store_environ, *expected)


def test_a_project_export_with_a_file_that_is_also_a_directory_is_refused(
    memory: MemoryManager, tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    document = export_memory(memory)
    human = next(b for b in document["blocks"] if b["label"] == "human")
    inside = {**human, "block_id": "block-inside", "label": "human/family"}
    document["blocks"].append(inside)
    link = next(a for a in document["attachments"] if a["block_id"] == human["block_id"])
    document["attachments"].append({**link, "block_id": "block-inside", "label": "human/family"})
    _refused(
        document, tmp_path, other_store_environ, "'human'", "'human/family'", "file and a directory"
    )


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    settings = Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(tmp_path / "store")}), env_file=None
    )
    with MemoryManager(agent_id="ada", settings=settings) as manager:
        yield manager


# ----- a file is not a directory
# --------------------------------------------------------------------


def test_a_label_cannot_be_a_file_and_a_directory_through_the_api(memory: MemoryManager) -> None:
    memory.create_block("notes", "a file")
    memory.create_block("project/plan", "inside a directory")
    before = store_snapshot(memory.database)
    with pytest.raises(LabelConflictError, match="'notes' would be a file and a directory"):
        memory.create_block("notes/today", "x")
    with pytest.raises(LabelConflictError, match="'project' would be a file and a directory"):
        memory.create_block("project", "x")
    with pytest.raises(LabelConflictError, match="'notes' would be"):
        memory.rename_block("project/plan", "notes/plan")
    with pytest.raises(LabelConflictError, match="'project' would be"):
        memory.rename_block("notes", "project")
    assert store_snapshot(memory.database) == before
    memory.delete_block("notes")
    memory.create_block("notes/today", "now a directory")
    with pytest.raises(LabelConflictError):
        memory.undo_block("notes")  # bring back the deleted file: now refused
    assert memory.get_block("notes/today").value == "now a directory"


def test_a_shared_block_renamed_by_another_agent_cannot_make_a_file_a_directory(
    memory: MemoryManager,
) -> None:
    memory.ensure_agent("bo")
    shared = memory.create_block("team", "shared notes", is_shared=True)
    memory.attach_block("bo", shared.block_id)
    memory.create_block("plans/q1", "bo's own", agent_id="bo")
    before = store_snapshot(memory.database)
    with pytest.raises(
        LabelConflictError,
        match="Agent 'bo' cannot hold both a block 'plans' and a block 'plans/q1'",
    ):
        memory.rename_block("team", "plans")  # ada renames; bo holds plans/q1
    with pytest.raises(LabelConflictError, match="Agent 'bo'"):
        memory.rename_block("team", "plans/q1/deeper")
    assert store_snapshot(memory.database) == before
    own = memory.create_block("solo", "ada's", is_shared=True)
    memory.rename_block("solo", "plans")  # ada alone holds it: no clash for ada
    with pytest.raises(LabelConflictError, match="'plans' would be a file and a directory"):
        memory.attach_block("bo", own.block_id)
    assert [b.label for b in memory.list_blocks(agent_id="bo")] == [
        "persona",
        "human",
        "team",
        "plans/q1",
    ]


def test_the_memory_tool_and_the_cli_refuse_it_too(
    memory: MemoryManager, run: Run, initialised: Run, error_of: ErrorOf
) -> None:
    files = MemoryFiles(memory)
    files.run({"command": "create", "path": "/memories/a", "file_text": "file"})
    with pytest.raises(MemoryAgentError, match="/memories/a is a file, not a directory"):
        files.run({"command": "create", "path": "/memories/a/b", "file_text": "x"})
    before = store_snapshot(memory.database)
    assert "'a' would be a file and a directory" in error_of(
        initialised("blocks", "create", "a/b", "x")
    )
    assert store_snapshot(memory.database) == before  # the CLI works on the same store and agent
    with pytest.raises(BlockExistsError):
        memory.create_block("a", "again")


# ----- round trips
# ----------------------------------------------------------------------------------


def _rich(memory: MemoryManager) -> None:
    """Everything a store holds: edits and history, an on-demand block, a result row, a summary,
    passages, the journal."""
    memory.update_block("human", value="Ada")
    memory.core_memory_append("human", "Likes sailing")
    memory.create_block("files/plan.md", "ship on Friday", in_prompt=False, description="the plan")
    memory.update_block("persona", read_only=True)
    first = memory.store_message(
        "user", "Hi, I am Ada", session_id="s1", turn_id="t1", sdk_uuid="u1"
    )
    memory.store_message("assistant", [{"type": "text", "text": "Hello Ada."}], token_count=12)
    memory.store_message("result", "done", message_type="result", metadata={"cost_usd": 0.01})
    memory.store_message("system", "", message_type="system:init", in_context=False)
    memory.store_message("user", "Still there?")
    assert first is not None
    memory.recall.add_summary(
        "ada",
        "Ada said hi.",
        first_message_id=first.message_id,
        last_message_id=first.message_id,
        model="m",
        tokens_before=10,
        tokens_after=4,
    )
    memory.archival_memory_insert("The Petrel is Ada's boat", tags=["people"])


def test_a_project_export_survives_import_and_export_byte_for_byte(
    memory: MemoryManager, tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    memory.ensure_agent("other")
    memory.store_message(
        "user", "an earlier message of another agent", agent_id="other"
    )  # ids will differ
    _rich(memory)
    first = export_memory(memory)
    assert {b["label"]: (b["in_prompt"], b["version"]) for b in first["blocks"]}[
        "files/plan.md"
    ] == (False, 1)
    assert {b["label"]: b["version"] for b in first["blocks"]}["human"] == 3
    assert [m["role"] for m in first["messages"]] == [
        "user",
        "assistant",
        "result",
        "system",
        "user",
    ]
    source = tmp_path / "ada.json"
    source.write_text(json.dumps(first), encoding="utf-8")
    settings = _target(tmp_path, other_store_environ)
    import_file(source, settings.persist_directory, settings=settings)
    with MemoryManager(agent_id="ada", settings=settings) as copy:
        second = export_memory(copy)
    assert (
        second["messages"][0]["message_id"] != first["messages"][0]["message_id"]
    )  # renumbered: volatile
    one, two = (
        json.dumps(project_json.stable_form(d), ensure_ascii=False, indent=2).encode()
        for d in (first, second)
    )
    assert one == two
    assert [e["action"] for e in second["journal"]][
        -1
    ] == "import_agent"  # what stable_form leaves out


def test_a_letta_round_trip_keeps_on_demand_flags_versions_and_result_rows(
    memory: MemoryManager, tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    _rich(memory)
    document = export_memory(memory, format="af")
    source = tmp_path / "ada.af"
    source.write_text(json.dumps(document), encoding="utf-8")
    settings = _target(tmp_path, other_store_environ)
    import_file(source, settings.persist_directory, settings=settings)
    with MemoryManager(agent_id="ada", settings=settings) as copy:
        again = export_memory(copy)
    first = export_memory(memory)

    def blocks(d: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
        return {
            b["label"]: (
                b["value"],
                b["limit"],
                b["description"],
                b["read_only"],
                b["in_prompt"],
                b["version"],
            )
            for b in d["blocks"]
        }

    def messages(d: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (m["role"], m["message_type"], m["content"], m["in_context"], m["created_at"])
            for m in d["messages"]
        ]

    assert blocks(again) == blocks(first)
    assert messages(again) == messages(first)
    result = next(m for m in again["messages"] if m["role"] == "result")
    assert result["metadata"] == {"cost_usd": 0.01}
    assert [p["content"] for p in again["passages"]] == ["The Petrel is Ada's boat"]
