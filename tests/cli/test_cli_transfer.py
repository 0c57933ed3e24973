"""`export` and `import`: round trips through both formats, Letta's own files, and bad input."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from letta_af_rules import letta_errors

from memory_agent import MemoryManager
from memory_agent.cli import cli
from memory_agent.testing.postgres_cluster import PostgresCluster

Run = Callable[..., Result]
ErrorOf = Callable[[Result], str]
AGENT_FILES = ("memgpt_agent.af", "memgpt_agent_with_convo.af")

pytestmark = pytest.mark.usefixtures("backend")


def _memory_of(run: Run, storage: Path, agent: str | None = None) -> dict:
    """Blocks (label -> value, limit, description, read-only) and messages (role, type, text, in
    context)."""
    prefix = ("--agent", agent) if agent else ()
    shown = json.loads(run(*prefix, "--json", "agents", "show", storage_dir=storage).stdout)
    messages = json.loads(
        run(*prefix, "--json", "messages", "--limit", "1000", storage_dir=storage).stdout
    )
    return {
        "blocks": {
            b["label"]: (b["value"], b["limit"], b["description"], b["read_only"])
            for b in shown["blocks"]
        },
        "messages": [
            (m["role"], m["message_type"], m["text"], m["in_context"], m["created_at"])
            for m in messages
        ],
        "summary": shown["summary"],
    }


@pytest.fixture
def rich_agent(initialised: Run, open_store: Callable[[str], MemoryManager]) -> Run:
    """Agent 'ada' with edited, read-only and custom blocks, a tool-using conversation and a
    summary."""
    run = initialised
    run("blocks", "set", "human", "Name: Ada")
    run("blocks", "append", "human", "Likes sailing")
    run(
        "blocks",
        "create",
        "notes",
        "--value",
        "Ship on Friday",
        "--limit",
        "300",
        "--description",
        "Notes",
    )
    run("blocks", "set", "persona", "--read-only")
    with open_store("ada") as memory:
        memory.store_message("user", "Hi, I am Ada")
        memory.store_message(
            "assistant",
            [
                {"type": "text", "text": "Let me remember that."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "core_memory_append",
                    "input": {"label": "human", "content": "Name: Ada"},
                },
            ],
        )
        memory.store_message(
            "user",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Appended."}],
            message_type="tool_result",
        )
        memory.store_message("assistant", [{"type": "text", "text": "Nice to meet you, Ada."}])
        first = memory.recall.all_messages("ada")[0]
        memory.recall.add_summary(
            "ada",
            "Ada introduced herself.",
            first_message_id=first.message_id,
            last_message_id=first.message_id,
            model="test",
            tokens_before=10,
            tokens_after=5,
        )
    return run


def test_json_export_then_import_into_an_empty_storage_dir_gives_back_the_same_memory(
    rich_agent: Run, storage: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "ada.json"
    result = rich_agent("export", "-o", str(exported))
    assert result.exit_code == 0 and exported.is_file(), result.output
    document = json.loads(exported.read_text(encoding="utf-8"))
    assert document["format"] == "memory-agent" and [a["agent_id"] for a in document["agents"]] == [
        "ada"
    ]
    target = tmp_path / "elsewhere"
    imported = rich_agent("import", str(exported), storage_dir=target)
    assert imported.exit_code == 0, imported.output
    assert "3 blocks, 4 messages, 1 summaries" in imported.stdout
    assert _memory_of(rich_agent, target) == _memory_of(rich_agent, storage)
    history = json.loads(
        rich_agent("--json", "blocks", "history", "human", storage_dir=target).stdout
    )
    assert [v["action"] for v in history] == ["create", "update", "core_memory_append"]
    assert rich_agent("blocks", "undo", "human", storage_dir=target).exit_code == 0
    assert (
        "core_memory_append"
        in rich_agent("--json", "blocks", "history", "human", storage_dir=target).stdout
    )


def test_export_to_stdout_is_the_document(rich_agent: Run) -> None:
    document = json.loads(rich_agent("export").stdout)
    assert document["format"] == "memory-agent"
    assert {b["label"] for b in document["blocks"]} == {"persona", "human", "notes"}
    assert any(entry["action"] == "core_memory_append" for entry in document["journal"])


def test_import_under_another_agent_id_into_the_same_storage_dir(
    rich_agent: Run, storage: Path, tmp_path: Path, error_of: ErrorOf
) -> None:
    exported = tmp_path / "ada.json"
    rich_agent("export", "-o", str(exported))
    assert "already exists" in error_of(rich_agent("import", str(exported)))
    assert rich_agent("--agent", "ada-copy", "import", str(exported)).exit_code == 0
    assert _memory_of(rich_agent, storage, "ada-copy") == _memory_of(rich_agent, storage, "ada")
    rich_agent("blocks", "set", "notes", "Changed in the original")
    copy = _memory_of(rich_agent, storage, "ada-copy")["blocks"]["notes"][0]
    assert copy == "Ship on Friday"  # the copy's blocks are its own rows


def test_af_export_round_trip(rich_agent: Run, storage: Path, tmp_path: Path) -> None:
    exported = tmp_path / "ada.af"
    assert rich_agent("export", "--format", "af", "-o", str(exported)).exit_code == 0
    document = json.loads(exported.read_text(encoding="utf-8"))
    assert {b["label"]: b["limit"] for b in document["blocks"]} == {
        "persona": 5000,
        "human": 5000,
        "notes": 300,
    }
    assert letta_errors(document) == []
    roles = [m["role"] for m in document["agents"][0]["messages"]]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]  # the system message holds the base prompt
    assert (
        document["agents"][0]["messages"][2]["tool_calls"][0]["function"]["name"]
        == "core_memory_append"
    )
    target = tmp_path / "from-af"
    assert rich_agent("import", str(exported), storage_dir=target).exit_code == 0
    before, after = _memory_of(rich_agent, storage), _memory_of(rich_agent, target)
    assert after["blocks"] == before["blocks"]
    assert after["messages"] == before["messages"]


@pytest.mark.parametrize("name", AGENT_FILES)
def test_letta_agent_files_import_with_their_blocks_and_messages(
    name: str, shared_data: Path, run: Run
) -> None:
    source = shared_data / "agent-files" / name
    raw = json.loads(source.read_text(encoding="utf-8"))
    document = json.loads(raw) if isinstance(raw, str) else raw  # memgpt_agent.af is double-encoded
    result = run("import", str(source))
    assert result.exit_code == 0, result.output
    agent = document["agents"][0]
    blocks = json.loads(run("--json", "blocks", "list").stdout)
    expected = {
        b["label"]: (b["value"], b["limit"], b["description"])
        for b in document["blocks"]
        if b["id"] in agent["block_ids"]
    }
    assert {b["label"]: (b["value"], b["limit"], b["description"]) for b in blocks} == expected
    assert {b["limit"] for b in blocks} == {20000}
    messages = json.loads(run("--json", "messages", "--limit", "100").stdout)
    assert len(messages) == len(agent["messages"]) >= 1
    for stored, original in zip(messages, agent["messages"], strict=True):
        assert stored["role"] == original["role"]
        assert stored["text"] == "".join(
            p["text"] for p in original["content"] if p["type"] == "text"
        )
        assert stored["metadata"]["letta"]["id"] == original["id"]
    listed = json.loads(run("--json", "agents", "list").stdout)
    assert [(a["agent_id"], a["name"], a["is_default"]) for a in listed] == [
        (agent["name"], agent["name"], True)
    ]


def test_both_letta_files_into_one_storage_dir_need_distinct_ids(
    shared_data: Path, run: Run, error_of: ErrorOf
) -> None:
    first, second = (shared_data / "agent-files" / name for name in AGENT_FILES)
    assert run("import", str(first)).exit_code == 0
    assert "Agent 'memgpt_agent' already exists" in error_of(run("import", str(second)))
    assert run("--agent", "with-convo", "import", str(second)).exit_code == 0
    assert len(json.loads(run("--json", "agents", "list").stdout)) == 2


_PROJECT_BLOCK = (
    '{"format": "memory-agent", "version": 1, "agents": [{"agent_id": "a", "name": null, '
    '"created_at": '
    '"2025-01-01T00:00:00Z"}], "blocks": [{"block_id": "b", "label": "LABEL", "value": "toolong", '
    '"limit": 3, '
    '"description": null, "read_only": false, "is_shared": false, "owner_agent_id": "a", '
    '"version": 1, '
    '"created_at": "2025-01-01T00:00:00Z", "updated_at": "2025-01-01T00:00:00Z"}]}'
)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        ('"{\\"agents\\": ["', "is not valid JSON"),
        ('{"something": "else"}', "Not an export this memory-agent reads"),
        ('{"agents": []}', "no 'agents' list, or the list is empty"),
        (
            '{"agents": [{"name": "x", "block_ids": ["block-9"]}], "blocks": []}',
            "names block 'block-9'",
        ),
        (
            _PROJECT_BLOCK.replace("LABEL", "h"),
            "over its limit of 3",
        ),  # a Letta file's limit is raised instead
        (_PROJECT_BLOCK.replace("LABEL", "/h"), "write it as 'h'"),
        (
            '{"agents": [{"name": "x", "block_ids": ["b"]}],'
            ' "blocks": [{"id": "b", "label": "bad label", "value": ""}]}',
            "not a valid block label",
        ),
        (
            '{"agents": [{"name": "x", "messages": [{"role": "user", "created_at": '
            '"yesterday"}]}]}',
            "not an ISO-8601 time",
        ),
        ('{"format": "memory-agent", "version": 99}', "format version 99"),
        (
            '{"format": "memory-agent", "version": 1, "agents": [{"agent_id": "a"}]}',
            "agents[0] has no 'name' field",
        ),
        (
            '{"format": "memory-agent", "version": 1, "agents": [{"agent_id": 5, "name": null, '
            '"created_at": "x"}]}',
            "agents[0].agent_id must be str",
        ),
    ],
)
def test_malformed_files_are_refused_with_one_line_and_nothing_written(
    content: str, message: str, tmp_path: Path, run: Run, storage: Path, error_of: ErrorOf
) -> None:
    bad = tmp_path / "bad.af"
    bad.write_text(content, encoding="utf-8")
    assert message in error_of(run("import", str(bad)))
    assert (
        not (storage / "memory.db").exists()
        or json.loads(run("--json", "agents", "list").stdout) == []
    )


def test_a_conflict_midway_leaves_the_storage_dir_unchanged(
    rich_agent: Run, tmp_path: Path, storage: Path, error_of: ErrorOf
) -> None:
    document = json.loads(rich_agent("export").stdout)
    document["agents"].append({**document["agents"][0], "agent_id": "zed"})
    document["messages"].append({**document["messages"][0], "agent_id": "zed"})
    document["agents"][0] = {**document["agents"][0], "agent_id": "brand-new"}
    for section in ("attachments", "messages", "summaries"):
        for record in document[section]:
            if record["agent_id"] == "ada":
                record["agent_id"] = "brand-new"
    rich_agent("agents", "create", "zed")
    source = tmp_path / "two.json"
    source.write_text(json.dumps(document), encoding="utf-8")
    before = rich_agent("--json", "agents", "list").stdout
    assert "Agent 'zed' already exists" in error_of(rich_agent("import", str(source)))
    assert rich_agent("--json", "agents", "list").stdout == before


def test_unreadable_and_missing_files(tmp_path: Path, run: Run, error_of: ErrorOf) -> None:
    assert "No such file or directory" in error_of(run("import", str(tmp_path / "missing.af")))
    assert "is not a regular file (a directory" in error_of(run("import", str(tmp_path)))
    binary = tmp_path / "binary.af"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert "Cannot read" in error_of(run("import", str(binary)))
    locked = tmp_path / "locked.af"
    locked.write_text("{}", encoding="utf-8")
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("the rest needs a user who cannot read a mode-000 file (not root)")
        assert "Permission denied" in error_of(run("import", str(locked)))
    finally:
        locked.chmod(0o600)


def test_export_to_an_unwritable_place_is_one_error(
    rich_agent: Run, tmp_path: Path, error_of: ErrorOf
) -> None:
    assert "Cannot write the export" in error_of(
        rich_agent("export", "-o", str(tmp_path / "no" / "dir.json"))
    )
    assert not list(tmp_path.glob("**/*.tmp"))


def _portable(document: dict) -> dict:
    """An export without what an import renumbers or stamps anew (ids, export time)."""
    text = json.dumps(
        {k: v for k, v in document.items() if k not in ("exported_at", "source")}, sort_keys=True
    )
    return json.loads(text)


# both runs start the server: the other backend of the SQLite run is PostgreSQL
@pytest.mark.postgres
def test_export_into_the_other_backend_and_back_is_lossless(
    rich_agent: Run, storage: Path, tmp_path: Path, backend: str, postgres_cluster: PostgresCluster
) -> None:
    # From this test's backend into the other one and back: SQLite -> PostgreSQL -> SQLite, or
    # PostgreSQL -> SQLite -> PostgreSQL. Each hop is `export` then `import` into an empty store.
    other_url = postgres_cluster.database_url("hop") if backend == "sqlite" else ""
    home_url = os.environ.get("MEMORY_DATABASE_URL", "")
    for text, tag in (
        ("The launch moved to Friday", "plans"),
        ("Ada's boat is the Petrel", "people"),
    ):
        assert rich_agent("remember", text, "--tag", tag).exit_code == 0
    first = json.loads(rich_agent("export").stdout)
    assert len(first["passages"]) == 2
    back_url = home_url and postgres_cluster.database_url("back")
    hops = [(tmp_path / "other", other_url), (tmp_path / "home-again", back_url)]
    document = first
    for directory, url in hops:
        path = tmp_path / f"{directory.name}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        runner = CliRunner()
        base = ["--storage-dir", str(directory), *(["--database-url", url] if url else [])]
        env = {"MEMORY_DATABASE_URL": ""}  # the hop's backend is only what --database-url says
        imported = runner.invoke(cli, [*base, "import", str(path)], env=env)
        assert imported.exit_code == 0, imported.output
        assert (directory / "memory.db").is_file() == (not url)
        exported = runner.invoke(cli, [*base, "export"], env=env)
        assert exported.exit_code == 0, exported.output
        document = json.loads(exported.stdout)
    # Everything comes back as it was; each import journals itself, once per hop.
    after, before = _portable(document), _portable(first)
    added = after["journal"][len(before["journal"]) :]
    assert [entry["action"] for entry in added] == ["import_agent", "import_agent"]
    after["journal"] = after["journal"][: len(before["journal"])]
    assert after == before
