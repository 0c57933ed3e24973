"""The portability library on its own: formats, validation, ids, and Python callers."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from backends import OtherEnviron, backend_environ

from memory_agent import ImportFormatError, MemoryManager, Settings
from memory_agent.maintenance.admin import open_agent
from memory_agent.portability import (
    decode_document,
    export_memory,
    import_file,
    import_snapshot,
    parse_document,
    parse_letta,
    project_json,
    records,
    to_letta,
)

pytestmark = pytest.mark.usefixtures("backend")


def test_every_record_field_type_is_checked_on_import() -> None:
    for record_type in (
        getattr(records, name)
        for name in records.__all__
        if name not in ("Snapshot", "ImportNotes")
    ):
        for spec in dataclasses.fields(record_type):
            assert str(spec.type) in project_json._CHECKS, (
                f"{record_type.__name__}.{spec.name}: {spec.type}"
            )


def test_double_encoded_json_is_decoded() -> None:
    document = {"agents": [{"name": "x"}]}
    assert decode_document(json.dumps(json.dumps(document))) == document
    assert decode_document(json.dumps(document)) == document


def test_letta_messages_map_to_ours_and_back() -> None:
    document = {
        "agents": [
            {
                "name": "sam",
                "in_context_message_ids": ["m1", "m2", "m3"],
                "messages": [
                    {
                        "id": "m1",
                        "role": "user",
                        "content": [{"type": "text", "text": "Hi"}],
                        "created_at": "2025-01-01T00:00:00Z",
                    },
                    {
                        "id": "m2",
                        "role": "assistant",
                        "content": [{"type": "reasoning", "reasoning": "think"}],
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {
                                    "name": "memory_insert",
                                    "arguments": '{"label": "human"}',
                                },
                            }
                        ],
                    },
                    {
                        "id": "m3",
                        "role": "tool",
                        "tool_call_id": "c1",
                        "content": [{"type": "text", "text": "ok"}],
                    },
                    {"id": "m4", "role": "user", "content": "evicted long ago"},
                ],
            }
        ]
    }
    snapshot = parse_letta(document, default_limit=5000)
    user, assistant, tool, old = snapshot.messages
    assert (user.role, user.content, user.created_at) == (
        "user",
        "Hi",
        "2025-01-01T00:00:00.000000+00:00",
    )
    assert assistant.content == [
        {"type": "thinking", "thinking": "think"},
        {"type": "tool_use", "id": "c1", "name": "memory_insert", "input": {"label": "human"}},
    ]
    assert (tool.role, tool.message_type) == ("user", "tool_result")
    assert tool.content == [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]
    assert [m.in_context for m in snapshot.messages] == [True, True, True, False]
    back = to_letta(snapshot)["agents"][0]
    assert [m["role"] for m in back["messages"]] == ["system", "user", "assistant", "tool", "user"]
    assert back["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"label": "human"}'
    assert back["messages"][2]["content"] == [
        {"type": "reasoning", "is_native": True, "reasoning": "think"}
    ]
    assert back["in_context_message_ids"] == ["message-0", "message-1", "message-2", "message-3"]


def test_a_block_named_by_two_letta_agents_is_one_shared_block(tmp_path: Path) -> None:
    document = {
        "blocks": [{"id": "b", "label": "team", "value": "v", "limit": 10}],
        "agents": [{"name": "a", "block_ids": ["b"]}, {"name": "b", "block_ids": ["b"]}],
    }
    settings = Settings.from_env(backend_environ({}), env_file=None)
    snapshot = parse_document(document, default_limit=5000)
    report = import_snapshot(snapshot, tmp_path, settings=settings)
    assert report.agent_ids == ["a", "b"]
    with open_agent(tmp_path, "a", settings=settings) as memory:
        memory.core_memory_append("team", "w")
        assert memory.get_block("team", agent_id="b").value == "v\nw"
        assert memory.get_block("team").is_shared


def test_python_callers_can_export_and_import(
    tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    settings = Settings.from_env(backend_environ({}), env_file=None)
    target_settings = Settings.from_env(other_store_environ({}), env_file=None)
    with MemoryManager(tmp_path / "a", agent_id="ada", settings=settings) as memory:
        memory.core_memory_append("human", "Name: Ada")
        document = export_memory(memory)
    path = tmp_path / "ada.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    report = import_file(path, tmp_path / "b", settings=target_settings)
    assert report.agent_ids == ["ada"] and report.blocks == 2
    with open_agent(tmp_path / "b", settings=target_settings) as copy:
        assert copy.get_block("human").value.endswith("Name: Ada")
    with pytest.raises(ImportFormatError):
        parse_document({"neither": True}, default_limit=5000)


class _LetterCounts:
    """A tiny deterministic embedding function (letter counts): enough to write and find vectors."""

    def __call__(self, input: list[str]) -> list[list[float]]:
        return [
            [text.lower().count(letter) + 0.01 for letter in "abcdefghijklmnop"] for text in input
        ]

    @staticmethod
    def name() -> str:
        return "letter_counts"


def test_passages_keep_ids_tags_and_times_and_get_their_vectors(
    tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    from memory_agent.archival import ArchivalMemory, VectorConfig

    settings = Settings.from_env(backend_environ({}), env_file=None)
    target_settings = Settings.from_env(other_store_environ({}), env_file=None)
    with MemoryManager(tmp_path / "a", agent_id="ada", settings=settings) as memory:
        source = ArchivalMemory(
            memory.db, VectorConfig(path=tmp_path / "a" / "chroma"), _LetterCounts()
        )
        source.insert(
            "ada",
            "The launch is on the fifth of May",
            tags=["plans"],
            created_at="2024-05-01T10:00:00Z",
        )
        source.insert("ada", "Ada prefers tea")
        document = json.loads(json.dumps(export_memory(memory)))
        before = source.list("ada")
    report = import_snapshot(
        parse_document(document, default_limit=5000),
        tmp_path / "b",
        settings=target_settings,
        embedding_function=_LetterCounts(),
    )
    assert (report.passages, report.vectors_pending) == (2, 0)
    with open_agent(tmp_path / "b", settings=target_settings) as copy:
        target = ArchivalMemory(
            copy.db, VectorConfig(path=tmp_path / "b" / "chroma"), _LetterCounts()
        )
        after = target.list("ada")
        assert [(p.passage_id, p.content, p.tags, p.created_at) for p in after] == [
            (p.passage_id, p.content, p.tags, p.created_at) for p in before
        ]
        assert {p.vector_state for p in after} == {"indexed"}
        assert target.index.store.count("ada") == 2
        assert target.search("ada", "launch", mode="keyword")[0].passage_id == before[1].passage_id


def test_public_names() -> None:
    import memory_agent.maintenance.admin
    import memory_agent.maintenance.health
    import memory_agent.portability as portability

    assert sorted(portability.__all__) == sorted(
        [
            "ExportFormat",
            "ImportReport",
            "Snapshot",
            "decode_document",
            "export_memory",
            "import_file",
            "import_snapshot",
            "load_document",
            "parse_document",
            "parse_letta",
            "parse_project",
            "to_letta",
            "to_project",
            "write_export",
        ]
    )
    for module in (portability, memory_agent.maintenance.admin, memory_agent.maintenance.health):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_every_module_of_the_cli_and_portability_declares_its_names() -> None:
    import importlib
    import pkgutil

    import memory_agent.cli
    import memory_agent.portability

    for package in (memory_agent.cli, memory_agent.portability):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            assert hasattr(module, "__all__"), f"{module.__name__} has no __all__"
            assert all(hasattr(module, name) for name in module.__all__), module.__name__


LIFECYCLE = (
    "passage_id",
    "content",
    "expires_at",
    "superseded_by",
    "importance",
    "access_count",
    "last_accessed_at",
    "provenance",
    "tags",
    "metadata",
    "created_at",
)


@pytest.mark.parametrize("export_format", ["json", "af"])
def test_passage_lifecycle_fields_survive_a_round_trip(
    tmp_path: Path, other_store_environ: OtherEnviron, export_format: str
) -> None:
    settings = Settings.from_env(backend_environ({}), env_file=None)
    target_settings = Settings.from_env(other_store_environ({}), env_file=None)
    with MemoryManager(
        tmp_path / "a", agent_id="ada", settings=settings, embedding_function=_LetterCounts()
    ) as memory:
        old = memory.archival_memory_insert(
            "Ada lives in Lisbon", importance=0.2, provenance={"block": "human", "messages": [1, 2]}
        )
        new = memory.archival_memory_insert(
            "Ada moved to Porto", ["moves"], importance=0.9, expires_at="2031-01-01T00:00:00+01:00"
        )
        memory.archival_memory_insert("A note that has expired", expires_at="2020-01-01T00:00:00Z")
        memory.supersede_passage(old, new)
        memory.archival_memory_search("Porto", mode="keyword")
        document = json.loads(json.dumps(export_memory(memory, format=export_format)))  # type: ignore[arg-type]
        before = sorted(memory.archival_memory_list(limit=10), key=lambda p: p.content)
    import_snapshot(
        parse_document(document, default_limit=5000),
        tmp_path / "b",
        settings=target_settings,
        embedding_function=_LetterCounts(),
    )
    with open_agent(tmp_path / "b", settings=target_settings) as copy:
        after = sorted(copy.archival_memory_list(limit=10), key=lambda p: p.content)
        assert [[getattr(p, f) for f in LIFECYCLE] for p in after] == [
            [getattr(p, f) for f in LIFECYCLE] for p in before
        ]
        assert {p.access_count for p in after} == {0, 1}
        assert [hit.passage_id for hit in copy.archival_memory_search("Ada", mode="keyword")] == [
            new
        ]


def test_an_import_whose_supersession_cannot_be_resolved_is_refused(tmp_path: Path) -> None:
    settings = Settings.from_env(backend_environ({}), env_file=None)
    base = {
        "passage_id": "p1",
        "agent_id": "ada",
        "content": "x",
        "tags": [],
        "metadata": {},
        "created_at": "2024-01-01T00:00:00Z",
    }
    for passages in (
        [{**base, "superseded_by": "p-missing"}],
        [
            {**base, "superseded_by": "p2"},
            {**base, "passage_id": "p2", "content": "y", "superseded_by": "p1"},
        ],
        [{**base, "importance": 3}],
        [{**base, "expires_at": "2031-01-01T00:00:00"}],
        [{**base, "access_count": -1}],
        # duplicates are stored as one passage: p1 -> p3 -> p2 closes into a cycle ...
        [
            {**base, "superseded_by": "p3"},
            {**base, "passage_id": "p2"},
            {**base, "passage_id": "p3", "content": "z", "superseded_by": "p2"},
        ],
        # ... and two copies of one text cannot name different successors
        [
            {**base, "superseded_by": "p3"},
            {**base, "passage_id": "p2", "superseded_by": "p4"},
            {**base, "passage_id": "p3", "content": "z"},
            {**base, "passage_id": "p4", "content": "w"},
        ],
    ):
        document = {
            "format": "memory-agent",
            "version": 1,
            "agents": [
                {
                    "agent_id": "ada",
                    "name": None,
                    "created_at": "2024-01-01T00:00:00Z",
                    "metadata": {},
                }
            ],
            "passages": passages,
        }
        with pytest.raises(ImportFormatError):
            import_snapshot(
                parse_document(document, default_limit=5000),
                tmp_path / "b",
                settings=settings,
                embedding_function=_LetterCounts(),
            )
    assert not (tmp_path / "b" / "memory.db").exists() or _no_agents(tmp_path / "b", settings)


def _no_agents(storage: Path, settings: Settings) -> bool:
    with MemoryManager(storage, agent_id="probe", settings=settings) as memory:
        return memory.list_agents() == ["probe"]
