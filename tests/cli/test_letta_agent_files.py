"""Letta agent files both ways: what today's Letta writes imports faithfully, what we write Letta
accepts.

The files are built here for the purpose (path labels, an oversize block, an unattached block, a
system prompt, a group of two agents sharing blocks, tools and the rest) plus the two public
files in ../shared/data. Exports are checked against Letta 0.16.8's own rules (`letta_af_rules`).
Both backends: a second storage dir of a test is another deployment (`other_store_environ`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from backends import OtherEnviron, backend_environ
from chromadb import Documents, EmbeddingFunction, Embeddings
from click.testing import Result
from letta_af_rules import letta_errors

from memory_agent import MemoryManager, Settings
from memory_agent.portability import export_memory, import_file, parse_letta, to_letta

Run = Callable[..., Result]
TIME = "2025-06-01T10:00:00+00:00"
SYSTEM = "You are Sam, a Letta agent. Think before you speak."

pytestmark = pytest.mark.usefixtures("backend")


class _LetterCounts(EmbeddingFunction[Documents]):
    """A tiny offline embedding, so that this test does not load a model."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:
        return [[float(text.count(c)) + 1.0 for c in "aeiou"] for text in input]

    @staticmethod
    def name() -> str:
        return "test-letter-counts"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> _LetterCounts:
        return _LetterCounts()


def _letta_file() -> dict[str, Any]:
    """Two agents in a sleeptime group, as Letta Code exports them, with everything the importer
    must name."""
    blocks = [
        {"id": "block-0", "label": "system/human/family", "value": "Two sisters.", "limit": 5000},
        {
            "id": "block-1",
            "label": "/note_directory",
            "value": "notes/",
            "limit": 100,
            "read_only": True,
        },
        {
            "id": "block-2",
            "label": "system/active-issues",
            "value": "x" * 7000,
            "limit": 5000,
            "description": "Open issues",
        },
        {"id": "block-3", "label": "persona", "value": "I am Sam.", "limit": 2000},
        {"id": "block-4", "label": "reference/old-faq", "value": "Nobody names me.", "limit": 5000},
        {"id": "block-5", "label": "team/shared-plan", "value": "Ship on Friday.", "limit": 5000},
    ]
    messages = [
        {
            "id": "message-0",
            "role": "system",
            "content": [{"type": "text", "text": SYSTEM + "\n<memory_blocks>..."}],
            "created_at": TIME,
        },
        {
            "id": "message-1",
            "role": "user",
            "content": [{"type": "text", "text": "Hi Sam"}],
            "created_at": TIME,
        },
        {
            "id": "message-2",
            "role": "assistant",
            "created_at": TIME,
            "content": [
                {"type": "reasoning", "is_native": True, "reasoning": "greet", "signature": "s1"}
            ],
            "tool_calls": [
                {
                    "id": "call-1",
                    "type": "function",
                    "function": {"name": "send_message", "arguments": '{"message": "Hello"}'},
                }
            ],
        },
        {
            "id": "message-3",
            "role": "tool",
            "tool_call_id": "call-1",
            "created_at": TIME,
            "content": [{"type": "text", "text": "Sent"}],
            "tool_returns": [
                {"tool_call_id": "call-1", "status": "success", "func_response": "Sent"}
            ],
        },
    ]
    return {
        "agents": [
            {
                "id": "agent-0",
                "name": "Sam",
                "system": SYSTEM,
                "agent_type": "letta_v1_agent",
                "block_ids": ["block-0", "block-1", "block-2", "block-3"],
                "tool_ids": ["tool-0"],
                "tool_rules": [{"type": "exit_loop", "tool_name": "send_message"}],
                "group_ids": ["group-0"],
                "llm_config": {
                    "model": "claude-opus-4-5",
                    "model_endpoint_type": "anthropic",
                    "context_window": 200000,
                    "handle": "anthropic/claude-opus-4-5",
                },
                "messages": messages,
                "in_context_message_ids": ["message-0", "message-1", "message-2", "message-3"],
            },
            {
                "id": "agent-1",
                "name": "Sam-sleeptime",
                "system": "You tidy Sam's memory.",
                "block_ids": ["block-3"],
                "messages": [],
                "in_context_message_ids": [],
            },
        ],
        "groups": [
            {
                "id": "group-0",
                "agent_ids": ["agent-1"],
                "description": "Sam and its sleeptime agent",
                "shared_block_ids": ["block-5"],
                "manager_config": {
                    "manager_type": "sleeptime",
                    "manager_agent_id": "agent-0",
                    "sleeptime_agent_frequency": 5,
                },
            }
        ],
        "blocks": blocks,
        "tools": [
            {"id": "tool-0", "name": "send_message"},
            {"id": "tool-1", "name": "web_search"},
            {"id": "tool-2", "name": "conversation_search"},
        ],
        "skills": [{"name": "slack", "source_url": "letta:slack"}],
        "files": [{"id": "file-0", "file_name": "handbook.pdf", "source_id": "source-0"}],
        "sources": [{"id": "source-0", "name": "docs"}],
        "mcp_servers": [{"id": "mcp_server-0", "server_name": "github", "server_type": "sse"}],
        "metadata": {"revision_id": "abc"},
        "created_at": TIME,
    }


def _write(tmp_path: Path, document: Any, name: str = "sam.af") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _settings(storage: Path, environ: OtherEnviron = backend_environ) -> Settings:
    """Settings of a storage dir: the test's own store, or with `other_store_environ` its second
    one."""
    return Settings.from_env(environ({"PERSIST_DIRECTORY": str(storage)}), env_file=None)


def _export(
    storage: Path,
    agent_ids: list[str] | None = None,
    default: str | None = None,
    environ: OtherEnviron = backend_environ,
) -> dict[str, Any]:
    with MemoryManager(agent_id=default, settings=_settings(storage, environ)) as memory:
        return export_memory(memory, agent_ids=agent_ids or memory.list_agents(), format="af")


def _cli_export(run: Run, storage: Path, path: Path) -> dict[str, Any]:
    """`memory-agent export --all --format af` of a storage dir, as the CLI writes it."""
    assert (
        run("export", "--all", "--format", "af", "-o", str(path), storage_dir=storage).exit_code
        == 0
    )
    return json.loads(path.read_text(encoding="utf-8"))


def _without_time(document: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in document.items() if k != "created_at"}, sort_keys=True)


def test_a_current_letta_file_imports_whole_and_names_what_it_leaves(
    tmp_path: Path, run: Run, storage: Path
) -> None:
    result = run("--json", "import", str(_write(tmp_path, _letta_file())))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["agent_ids"] == ["Sam", "Sam-sleeptime"]
    assert report["limits_raised"] == [
        {"label": "system/active-issues", "limit": 5000, "raised_to": 7000}
    ]
    assert report["unattached_blocks"] == ["reference/old-faq"]
    assert report["system_prompts"] == 2
    assert report["tools_provided"] == ["conversation_search"]
    assert report["not_imported"] == {
        "group_managers": [
            "group-0: sleeptime manager of Sam, Sam-sleeptime (kept for export; not run here)"
        ],
        "tools": ["send_message", "web_search"],
        "skills": ["slack"],
        "files": ["handbook.pdf"],
        "sources": ["docs"],
        "mcp_servers": ["github"],
        "tool_rules": ["Sam: exit_loop on send_message"],
    }
    with MemoryManager(agent_id="Sam", settings=_settings(storage)) as memory:
        blocks = {b.label: b for b in memory.list_blocks()}
        assert set(blocks) == {
            "system/human/family",
            "note_directory",
            "system/active-issues",
            "persona",
            "team/shared-plan",
        }
        assert (
            blocks["system/active-issues"].value == "x" * 7000
            and blocks["system/active-issues"].limit == 7000
        )
        assert blocks["note_directory"].read_only
        helper = {b.label: b for b in memory.list_blocks(agent_id="Sam-sleeptime")}
        assert set(helper) == {
            "persona",
            "team/shared-plan",
        }  # its own block and the group's shared one
        assert (
            helper["persona"].block_id == blocks["persona"].block_id and blocks["persona"].is_shared
        )
        assert helper["team/shared-plan"].block_id == blocks["team/shared-plan"].block_id
        assert memory.get_base_system_prompt() == SYSTEM
        assert memory.get_base_system_prompt(agent_id="Sam-sleeptime") == "You tidy Sam's memory."
        with memory.db.reading() as conn:
            unattached = conn.execute(
                "SELECT owner_agent_id, value FROM blocks WHERE label = 'reference/old-faq'"
                " AND block_id NOT IN (SELECT block_id FROM agent_blocks)"
            ).fetchall()
        assert [tuple(row) for row in unattached] == [("Sam", "Nobody names me.")]
        stored = memory.recall.all_messages("Sam")
        assert [(m.role, m.in_context) for m in stored] == [
            ("system", False),
            ("user", True),
            ("assistant", True),
            ("user", True),
        ]
        assert stored[2].content[0] == {"type": "thinking", "thinking": "greet", "signature": "s1"}
    listed = json.loads(run("--json", "agents", "list").stdout)
    assert [(a["agent_id"], a["is_default"]) for a in listed] == [
        ("Sam", True),
        ("Sam-sleeptime", False),
    ]


def test_the_text_report_says_the_same(tmp_path: Path, run: Run) -> None:
    result = run("import", str(_write(tmp_path, _letta_file())))
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "Block 'system/active-issues' holds 7000 characters, over its limit of 5000" in out
    assert "imported unattached: reference/old-faq" in out
    assert "Kept the system prompt of 2 agent(s)" in out
    assert "Tools the memory tools provide here: conversation_search." in out
    for line in (
        "tools: send_message, web_search",
        "tool rules: Sam: exit_loop on send_message",
        "skills: slack",
        "files: handbook.pdf",
        "sources: docs",
        "mcp servers: github",
        "group managers: group-0",
    ):
        assert f"Not imported (no counterpart here), {line}" in out


def test_the_export_passes_letta_rules_and_round_trips(
    tmp_path: Path, run: Run, storage: Path, other_store_environ: OtherEnviron
) -> None:
    assert run("import", str(_write(tmp_path, _letta_file()))).exit_code == 0
    first = _export(storage)
    assert letta_errors(first) == []
    sam, helper = first["agents"]
    assert (sam["id"], sam["name"], sam["system"]) == ("agent-0", "Sam", SYSTEM)
    assert (
        sam["llm_config"]["model"] == "claude-opus-4-5"
        and sam["model"] == "anthropic/claude-opus-4-5"
    )
    assert (
        helper["llm_config"]["model_endpoint_type"] == "anthropic"
        and helper["embedding_config"]["embedding_dim"]
    )
    assert sam["in_context_message_ids"] == ["message-0", "message-1", "message-2", "message-3"]
    assert (
        sam["messages"][0]["role"] == "system"
        and sam["messages"][2]["content"][0]["is_native"] is True
    )
    assert first["groups"] == [
        {
            "id": "group-0",
            "description": "Sam and its sleeptime agent",
            "agent_ids": ["agent-1"],
            "manager_config": {
                "manager_type": "sleeptime",
                "manager_agent_id": "agent-0",
                "sleeptime_agent_frequency": 5,
            },
            "shared_block_ids": [],
            "project_id": None,
            "hidden": None,
        }
    ]
    assert sam["group_ids"] == ["group-0"]
    labels = {b["id"]: b["label"] for b in first["blocks"]}
    assert "reference/old-faq" in labels.values()  # unattached, still carried
    assert "reference/old-faq" not in {labels[i] for a in first["agents"] for i in a["block_ids"]}
    again = tmp_path / "again"
    exported = tmp_path / "sam-export.af"
    exported.write_text(json.dumps(first), encoding="utf-8")
    report = import_file(exported, again, settings=_settings(again, other_store_environ))
    assert report.agent_ids == ["Sam", "Sam-sleeptime"] and report.limits_raised == []
    assert _without_time(_export(again, environ=other_store_environ)) == _without_time(first)


def test_our_own_agent_exports_to_letta_and_back_losslessly(
    tmp_path: Path, storage: Path, other_store_environ: OtherEnviron
) -> None:
    settings = _settings(storage)
    embedding = _LetterCounts()
    with MemoryManager(agent_id="ada", settings=settings, embedding_function=embedding) as memory:
        memory.create_block("/system/human/family", "Two sisters", limit=300, description="Family")
        memory.set_base_system_prompt("You are Ada's assistant.")
        memory.store_message("user", "Hi")
        memory.store_message(
            "assistant",
            [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "Let me note that."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "core_memory_append",
                    "input": {"label": "human", "content": "x"},
                },
            ],
        )
        memory.store_message(
            "user",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "no", "is_error": True}],
            message_type="tool_result",
        )
        memory.archival_memory_insert("Ada sails on Sundays.", tags=["hobby"])
    with MemoryManager(agent_id="bob", settings=settings) as memory:
        memory.store_message("user", "I am Bob")
    first = _export(storage, ["bob", "ada"], default="ada")
    assert letta_errors(first) == []
    assert [a["metadata"]["memory_agent_id"] for a in first["agents"]] == [
        "ada",
        "bob",
    ]  # the default first
    ada = first["agents"][0]
    assert ada["system"] == "You are Ada's assistant." and ada["messages"][0]["role"] == "system"
    assert ada["messages"][3]["tool_returns"] == [
        {"tool_call_id": "toolu_1", "status": "error", "func_response": "no"}
    ]
    assert [p["content"] for p in ada["metadata"]["memory_agent_passages"]] == [
        "Ada sails on Sundays."
    ]
    path = tmp_path / "two.af"
    path.write_text(json.dumps(first), encoding="utf-8")
    target = tmp_path / "target"
    report = import_file(
        path, target, settings=_settings(target, other_store_environ), embedding_function=embedding
    )
    assert (
        report.agent_ids == ["ada", "bob"] and report.passages == 1 and report.system_prompts == 1
    )
    # Compared before the search below, which counts an access to the passage (a change of its own).
    assert _without_time(
        _export(target, ["ada", "bob"], environ=other_store_environ)
    ) == _without_time(first)
    with MemoryManager(
        settings=_settings(target, other_store_environ), embedding_function=embedding
    ) as memory:
        assert memory.agent_id == "ada"  # the default is the same as before
        assert memory.get_base_system_prompt() == "You are Ada's assistant."
        assert [m.role for m in memory.recall.all_messages("ada")] == ["user", "assistant", "user"]
        hits = memory.archival_memory_search("sails", mode="keyword")
        assert [h.content for h in hits] == ["Ada sails on Sundays."]


@pytest.mark.parametrize("name", ["memgpt_agent.af", "memgpt_agent_with_convo.af"])
def test_the_shared_letta_files_export_to_files_letta_accepts(
    name: str, shared_data: Path, tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    source = shared_data / "agent-files" / name
    report = import_file(source, tmp_path / "a", settings=_settings(tmp_path / "a"))
    assert report.system_prompts == 1 and report.not_imported["tools"]
    first = _export(tmp_path / "a")
    assert letta_errors(first) == []
    raw = json.loads(source.read_text(encoding="utf-8"))
    original = json.loads(raw) if isinstance(raw, str) else raw
    assert first["agents"][0]["system"] == original["agents"][0]["system"]
    assert first["agents"][0]["llm_config"] == original["agents"][0]["llm_config"]
    path = tmp_path / "x.af"
    path.write_text(json.dumps(first), encoding="utf-8")
    import_file(path, tmp_path / "b", settings=_settings(tmp_path / "b", other_store_environ))
    assert _without_time(_export(tmp_path / "b", environ=other_store_environ)) == _without_time(
        first
    )


def test_letta_files_as_letta_writes_them_pass_the_rule_checker_and_ours_used_to_fail(
    shared_data: Path,
) -> None:
    """The checker accepts Letta's own exports and refuses what the old exporter wrote."""
    raw = json.loads(
        (shared_data / "agent-files" / "memgpt_agent_with_convo.af").read_text(encoding="utf-8")
    )
    assert letta_errors(raw) == []
    old_style = to_letta(parse_letta(raw, default_limit=5000))
    old_style["agents"][0]["id"] = "memgpt_agent"
    old_style["blocks"][0]["id"] = "block-8e1e3ccdae95"
    message = old_style["agents"][0]["messages"][0]
    message["id"] = "message-3/0"
    message["content"] = [{"type": "reasoning", "reasoning": "no is_native"}]
    errors = letta_errors(old_style)
    assert any("should start with 'agent-'" in e for e in errors)
    assert any("'block-8e1e3ccdae95' should have an integer suffix" in e for e in errors)
    assert any("'message-3/0' should have an integer suffix" in e for e in errors)
    assert any("'is_native' is required" in e for e in errors)
    assert any("in_context_message_ids names 'message-0'" in e for e in errors)


def test_a_bad_path_label_in_a_letta_file_is_refused_with_the_block_named(
    tmp_path: Path, run: Run, error_of: Callable[[Result], str]
) -> None:
    document = _letta_file()
    document["blocks"][0]["label"] = "system/../persona"
    error = error_of(run("import", str(_write(tmp_path, document))))
    assert "Block 'block-0'" in error and "not a valid block label" in error


def test_the_projects_json_format_keeps_the_base_prompt_and_the_letta_details(
    tmp_path: Path, run: Run, storage: Path
) -> None:
    assert run("import", str(_write(tmp_path, _letta_file()))).exit_code == 0
    exported = tmp_path / "sam.json"
    assert run("export", "--all", "-o", str(exported)).exit_code == 0
    target = tmp_path / "from-json"
    assert run("import", str(exported), storage_dir=target).exit_code == 0
    again = _cli_export(run, target, tmp_path / "again.af")
    assert again["agents"][0]["system"] == SYSTEM
    assert _without_time(again) == _without_time(_cli_export(run, storage, tmp_path / "first.af"))
