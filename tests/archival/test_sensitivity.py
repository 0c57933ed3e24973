"""Sensitivity levels (issue 26, item 4) on both backends: what each clearance sees in every search
mode, listing, blocks and the rendered prompt, the model's tools, level changes, export and import;
an unknown level refused on every entry point with nothing changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from archival_helpers import HashEmbedding
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_agent import MemoryManager, Settings
from memory_agent.errors import (
    ArchivalError,
    BlockNotFoundError,
    MemoryAgentError,
    SensitivityError,
)
from memory_agent.portability import export_memory, import_file, write_export
from memory_agent.privacy.sensitivity import (
    LEVELS,
    allowed,
    clearance_of,
    parse_level,
    visible_levels,
    with_clearance,
)
from memory_agent.store.snapshot import store_snapshot
from memory_agent.tools import execute_tool

MODES = ("keyword", "vector", "hybrid", "scored")
MARK = "Zanzibar-7731"


def _settings(tmp_path: Path) -> Settings:
    return Settings(
        persist_directory=tmp_path / "store", database_url=os.environ.get("MEMORY_DATABASE_URL")
    )


@pytest.fixture
def memory(tmp_path: Path) -> MemoryManager:
    manager = MemoryManager(
        agent_id="alice", settings=_settings(tmp_path), embedding_function=HashEmbedding()
    )
    yield manager  # type: ignore[misc]  # a generator fixture
    manager.close()


# ----- the rule (no store) --------------------------------------------------------------------


def test_levels_are_ordered_and_unknown_ones_are_refused_never_public() -> None:
    assert [parse_level(level) for level in LEVELS] == ["public", "private", "secret"]
    for bad in ("Secret", "secret ", "", "top-secret", "PUBLIC", None, 1, True, ["public"]):
        with pytest.raises(SensitivityError):
            parse_level(bad)
        assert not allowed(bad, "secret")
    assert visible_levels("public") == ("public",)
    assert visible_levels("private") == ("public", "private")
    assert [allowed(level, "private") for level in LEVELS] == [True, True, False]
    assert clearance_of() == "private" and clearance_of(allow_secret=True) == "secret"
    assert clearance_of(max_sensitivity="public") == "public"
    with pytest.raises(SensitivityError):
        clearance_of(allow_secret=True, max_sensitivity="private")
    with with_clearance("secret"):
        assert clearance_of() == "secret"
        assert clearance_of(allow_secret=False) == "private"  # an explicit argument wins
    assert clearance_of() == "private"


# ----- passages -------------------------------------------------------------------------------


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("mode", MODES)
def test_secret_passages_are_absent_from_every_search_mode_unless_allowed(
    memory: MemoryManager, mode: str
) -> None:
    secret = memory.archival_memory_insert(
        f"The vault code is {MARK} for the harbour safe.", sensitivity="secret"
    )
    private = memory.archival_memory_insert("The harbour safe is behind the blue door.")
    public = memory.archival_memory_insert("The harbour opens at six.", sensitivity="public")
    for explain in (False, True):
        default = [
            hit.passage_id
            for hit in memory.archival_memory_search(
                "harbour safe vault code", limit=10, mode=mode, explain=explain
            )
        ]  # type: ignore[arg-type]
        assert secret not in default and private in default
        allowed_hits = [
            hit.passage_id
            for hit in memory.archival_memory_search(
                "harbour safe vault code", limit=10, mode=mode, explain=explain, allow_secret=True
            )
        ]  # type: ignore[arg-type]
        assert secret in allowed_hits
        shared = [
            hit.passage_id
            for hit in memory.archival_memory_search(
                "harbour safe vault code", limit=10, mode=mode, max_sensitivity="public"
            )
        ]  # type: ignore[arg-type]
        assert shared == [public]
    blank = [hit.passage_id for hit in memory.archival_memory_search("", limit=10, mode=mode)]  # type: ignore[arg-type]
    assert secret not in blank and len(blank) == 2


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("mode", MODES)
def test_hidden_passages_never_make_a_search_answer_short(memory: MemoryManager, mode: str) -> None:
    """The filter is in the query: 60 secret passages that match best do not crowd out the five
    allowed ones a search for five asks for (keyword heads and vector candidates alike)."""
    memory.archival_memory_insert_many(
        [
            {"content": f"otter otter otter river otter {n}", "sensitivity": "secret"}
            for n in range(60)
        ]
    )
    allowed_ids = {
        memory.archival_memory_insert(f"otter seen near the mill, note {n}") for n in range(5)
    }
    hits = memory.archival_memory_search("otter otter river", limit=5, mode=mode)  # type: ignore[arg-type]
    assert {hit.passage_id for hit in hits} == allowed_ids


@pytest.mark.usefixtures("backend")
def test_list_and_get_follow_the_clearance(memory: MemoryManager) -> None:
    secret = memory.archival_memory_insert(f"PIN {MARK}", sensitivity="secret")
    private = memory.archival_memory_insert("A private note.")
    public = memory.archival_memory_insert("A public note.", sensitivity="public")
    assert {p.passage_id for p in memory.archival_memory_list()} == {private, public}
    assert {p.passage_id for p in memory.archival_memory_list(allow_secret=True)} == {
        secret,
        private,
        public,
    }
    assert [p.passage_id for p in memory.archival_memory_list(max_sensitivity="public")] == [public]
    assert memory.archival_memory_get(secret) is None
    stored = memory.archival_memory_get(secret, allow_secret=True)
    assert stored is not None and stored.sensitivity == "secret"
    assert memory.archival_memory_get(private, max_sensitivity="public") is None


@pytest.mark.usefixtures("backend")
def test_a_level_change_is_journalled_and_lowering_a_secret_needs_the_clearance(
    memory: MemoryManager,
) -> None:
    pid = memory.archival_memory_insert("The boat's name is Saudade.")
    assert (
        memory.set_passage_sensitivity(pid, "secret").sensitivity == "secret"
    )  # stricter: no clearance needed
    assert memory.journal(limit=1) == []  # the entry is about a secret passage now
    entry = memory.journal(limit=1, allow_secret=True)[0]
    assert (entry.action, entry.target_id) == ("set_passage_sensitivity", pid)
    assert json.loads(entry.old_value or "") == {"sensitivity": "private"}
    assert json.loads(entry.new_value or "") == {"sensitivity": "secret"}
    before = store_snapshot(memory.database)
    with pytest.raises(ArchivalError):
        memory.set_passage_sensitivity(pid, "public")  # it cannot see the passage
    assert store_snapshot(memory.database) == before
    assert memory.set_passage_sensitivity(pid, "public", allow_secret=True).sensitivity == "public"


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("change", ["update", "importance", "supersede", "restore"])
def test_a_secret_passage_is_not_there_for_lifecycle_changes_without_the_clearance(
    memory: MemoryManager, change: str
) -> None:
    """Tags, importance, supersession and restore change a passage and return it: on a secret one,
    without the clearance, they must say it does not exist, show nothing of it and change
    nothing."""
    secret = memory.archival_memory_insert(f"Vault {MARK}", sensitivity="secret")
    plain = memory.archival_memory_insert("A private fact.")
    runs = {
        "update": lambda: memory.update_passage(secret, tags=["moved"]),
        "importance": lambda: memory.set_passage_importance(secret, 0.9),
        "supersede": lambda: memory.supersede_passage(secret, plain),
        "restore": lambda: memory.restore_passage(secret),
    }
    before = store_snapshot(memory.database)
    with pytest.raises(ArchivalError) as refused:
        runs[change]()
    assert MARK not in str(refused.value)
    assert store_snapshot(memory.database) == before
    with memory.clearance(allow_secret=True):
        assert MARK in runs[change]().content


@pytest.mark.usefixtures("backend")
def test_a_path_clash_does_not_name_a_secret_block(memory: MemoryManager) -> None:
    """'medical' cannot sit beside 'medical/diagnosis' (file and directory at once): refused either
    way, but the refusal names the secret block only to a caller allowed to see it."""
    memory.create_block("medical/diagnosis", f"Diagnosis {MARK}", sensitivity="secret")
    before = store_snapshot(memory.database)
    with pytest.raises(MemoryAgentError) as refused:
        memory.create_block("medical", "Notes")
    assert "diagnosis" not in str(refused.value)
    outcome = execute_tool(
        memory, "memory", {"command": "create", "path": "/memories/medical", "file_text": "x"}
    )
    assert outcome.is_error and "diagnosis" not in outcome.text
    assert store_snapshot(memory.database) == before
    with (
        pytest.raises(MemoryAgentError, match="medical/diagnosis"),
        memory.clearance(allow_secret=True),
    ):
        memory.create_block("medical", "Notes")


@pytest.mark.usefixtures("backend")
def test_writing_the_same_text_again_never_lowers_its_level(memory: MemoryManager) -> None:
    pid = memory.archival_memory_insert("Grandma's recipe uses cardamom.", sensitivity="secret")
    assert memory.archival_memory_insert("Grandma's recipe uses cardamom.") == pid
    assert memory.archival_memory_get(pid) is None
    assert (
        memory.archival_memory_insert("Grandma's recipe uses cardamom.", sensitivity="public")
        == pid
    )
    stored = memory.archival_memory_get(pid, allow_secret=True)
    assert stored is not None and stored.sensitivity == "secret"
    other = memory.archival_memory_insert("The shop closes at noon.", sensitivity="public")
    assert memory.archival_memory_insert("The shop closes at noon.", sensitivity="secret") == other
    raised = memory.archival_memory_get(other, allow_secret=True)
    assert raised is not None and raised.sensitivity == "secret"


# ----- blocks and the prompt --------------------------------------------------------------------


@pytest.mark.usefixtures("backend")
def test_secret_blocks_are_not_listed_read_or_rendered_by_default(memory: MemoryManager) -> None:
    memory.create_block("door_code", f"The door code is {MARK}.", sensitivity="secret")
    memory.create_block("greeting", "Say hello in Portuguese.", sensitivity="public")
    assert "door_code" not in [b.label for b in memory.list_blocks()]
    assert "door_code" in [b.label for b in memory.list_blocks(allow_secret=True)]
    assert [b.label for b in memory.list_blocks(max_sensitivity="public")] == ["greeting"]
    assert "door_code" not in memory.block_sizes()
    for read in (
        lambda: memory.get_block("door_code"),
        lambda: memory.view_block("door_code"),
        lambda: memory.block_history("door_code"),
        lambda: memory.core_memory_append("door_code", "more"),
    ):
        with pytest.raises(BlockNotFoundError):
            read()
    assert memory.get_block("door_code", allow_secret=True).sensitivity == "secret"
    for xml in (True, False):
        assert MARK not in memory.get_system_prompt_addition(xml)
        assert "door_code" not in memory.get_system_prompt_addition(xml)
        assert MARK in memory.get_system_prompt_addition(xml, allow_secret=True)
    with memory.clearance(allow_secret=True):
        assert memory.core_memory_append("door_code", "Changed in May.").startswith("Appended")
        memory.memory_rethink(
            "door_code", "The door code changed.", reasoning=f"old code {MARK} leaked"
        )
    assert MARK not in str(
        [hit.content for hit in memory.archival_memory_search("door code", mode="keyword")]
    )
    assert MARK in str([p.content for p in memory.archival_memory_list(allow_secret=True)])


@pytest.mark.usefixtures("backend")
def test_the_models_tools_see_what_its_agent_is_allowed(memory: MemoryManager) -> None:
    memory.create_block("door_code", f"The door code is {MARK}.", sensitivity="secret")
    secret = memory.archival_memory_insert(
        f"Safe combination {MARK}, harbour office.", sensitivity="secret"
    )
    listing = execute_tool(memory, "memory", {"command": "view", "path": "/memories"})
    assert not listing.is_error and "door_code" not in listing.text
    for name, arguments in (
        ("memory", {"command": "view", "path": "/memories/door_code"}),
        ("core_memory_append", {"label": "door_code", "content": "x"}),
    ):
        outcome = execute_tool(memory, name, arguments)
        assert outcome.is_error and MARK not in outcome.text
    search = execute_tool(memory, "archival_memory_search", {"query": "safe combination harbour"})
    assert secret not in search.text and MARK not in search.text
    cleared = execute_tool(
        memory, "archival_memory_search", {"query": "safe combination harbour"}, allow_secret=True
    )
    assert secret in cleared.text
    viewed = execute_tool(
        memory, "memory", {"command": "view", "path": "/memories/door_code"}, allow_secret=True
    )
    assert not viewed.is_error and MARK in viewed.text
    inserted = execute_tool(
        memory, "archival_memory_insert", {"content": "Her PIN is 0000.", "sensitivity": "secret"}
    )
    assert not inserted.is_error
    assert [p.content for p in memory.archival_memory_list()] == []


@pytest.mark.usefixtures("backend")
def test_a_shared_blocks_level_is_the_blocks_and_each_agents_clearance_applies(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path)
    with (
        MemoryManager(agent_id="ana", settings=settings) as ana,
        MemoryManager(agent_id="rui", settings=settings) as rui,
    ):
        block = ana.create_block("team", "Shared plans.", is_shared=True)
        rui.ensure_agent("rui")
        rui.attach_block("rui", block.block_id)
        ana.set_block_sensitivity("team", "secret")
        assert "team" not in [b.label for b in rui.list_blocks()]
        assert "team" not in [b.label for b in ana.list_blocks()]
        assert "Shared plans." in rui.get_system_prompt_addition(allow_secret=True)
        assert "Shared plans." not in rui.get_system_prompt_addition()
        entry = ana.journal(limit=1, allow_secret=True)[0]
        assert (entry.action, entry.old_value, entry.new_value) == (
            "set_block_sensitivity",
            "private",
            "secret",
        )
        rui.update_block("team", sensitivity="public", allow_secret=True)
        assert [b.sensitivity for b in ana.list_blocks() if b.label == "team"] == ["public"]


@pytest.mark.usefixtures("backend")
def test_a_new_agent_joins_a_secret_shared_block_of_its_settings(tmp_path: Path) -> None:
    import dataclasses

    settings = dataclasses.replace(_settings(tmp_path), memory_shared_blocks=("household",))
    with MemoryManager(agent_id="ana", settings=settings) as ana:
        ana.set_block_sensitivity("household", "secret")
        assert ana.ensure_agent("rui")
        assert "household" not in [b.label for b in ana.list_blocks(agent_id="rui")]
        assert "household" in [b.label for b in ana.list_blocks(agent_id="rui", allow_secret=True)]


@pytest.mark.usefixtures("backend")
def test_undoing_the_delete_of_a_secret_block_keeps_it_secret(memory: MemoryManager) -> None:
    memory.create_block("diary", f"Entry {MARK}", sensitivity="secret")
    with memory.clearance(allow_secret=True):
        memory.delete_block("diary")
        memory.undo_block("diary")
    assert "diary" not in [b.label for b in memory.list_blocks()]
    assert memory.get_block("diary", allow_secret=True).sensitivity == "secret"


# ----- refusals ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("backend")
def test_an_unknown_level_is_refused_on_every_api_and_tool_entry_point(
    memory: MemoryManager,
) -> None:
    pid = memory.archival_memory_insert("Already here.")
    memory.create_block("notes", "Some notes.")
    before = store_snapshot(memory.database)
    for bad in ("Secret", "confidential", "", "public "):
        calls = (
            lambda: memory.archival_memory_insert("New text.", sensitivity=bad),  # noqa: B023  # run at once
            lambda: memory.archival_memory_insert_many(
                [{"content": "New text.", "sensitivity": bad}]  # noqa: B023
            ),
            lambda: memory.create_block("other", "x", sensitivity=bad),  # noqa: B023
            lambda: memory.update_block("notes", value="changed", sensitivity=bad),  # noqa: B023
            lambda: memory.set_block_sensitivity("notes", bad),  # noqa: B023
            lambda: memory.set_passage_sensitivity(pid, bad),  # noqa: B023
            lambda: memory.archival_memory_search("here", max_sensitivity=bad),  # noqa: B023
            lambda: memory.list_blocks(max_sensitivity=bad),  # noqa: B023
        )
        for call in calls:
            with pytest.raises(SensitivityError):
                call()
        outcome = execute_tool(
            memory, "archival_memory_insert", {"content": "New text.", "sensitivity": bad}
        )
        assert outcome.is_error and "sensitivity must be one of" in outcome.text
    assert store_snapshot(memory.database) == before


@pytest.mark.usefixtures("backend")
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    level=st.one_of(
        st.text(max_size=12), st.none(), st.integers(), st.booleans(), st.sampled_from(LEVELS)
    ),
    clearance=st.one_of(st.none(), st.text(max_size=8), st.sampled_from(LEVELS)),
    allow_secret=st.one_of(st.none(), st.booleans(), st.integers(0, 2)),
)
def test_hostile_levels_and_clearances_raise_only_our_errors_and_change_nothing_on_refusal(
    memory: MemoryManager, level: object, clearance: object, allow_secret: object
) -> None:
    before = store_snapshot(memory.database)
    try:
        pid = memory.archival_memory_insert("Hypothesis wrote this.", sensitivity=level)  # type: ignore[arg-type]
    except MemoryAgentError:
        assert store_snapshot(memory.database) == before
    else:
        assert level is None or level in LEVELS
        stored = memory.archival_memory_get(pid, allow_secret=True)
        assert stored is not None and stored.sensitivity == (level or "private")
        memory.archival_memory_delete(pid)
    before = store_snapshot(memory.database)
    try:
        hits = memory.archival_memory_search(
            "hypothesis",
            max_sensitivity=clearance,  # type: ignore[arg-type]
            allow_secret=allow_secret,
            mode="keyword",
        )  # type: ignore[arg-type]
        blocks = memory.list_blocks(max_sensitivity=clearance, allow_secret=allow_secret)  # type: ignore[arg-type]
    except MemoryAgentError:
        pass
    else:
        level_seen = clearance_of(allow_secret, clearance)  # type: ignore[arg-type]
        assert all(allowed(hit.passage.sensitivity, level_seen) for hit in hits)
        assert all(allowed(block.sensitivity, level_seen) for block in blocks)
    assert {k: v for k, v in store_snapshot(memory.database).items() if k != "passages"} == {
        k: v for k, v in before.items() if k != "passages"
    }  # a search only counts accesses


# ----- export and import ------------------------------------------------------------------------


def _fill(memory: MemoryManager) -> dict[str, str]:
    memory.create_block("door_code", f"Door {MARK}", sensitivity="secret")
    memory.create_block("greeting", "Hello.", sensitivity="public")
    with memory.clearance(allow_secret=True):
        memory.core_memory_append("door_code", f"Back door {MARK}-b")
    ids = {
        "secret": memory.archival_memory_insert(f"Vault {MARK}", sensitivity="secret"),
        "private": memory.archival_memory_insert("A private fact."),
        "public": memory.archival_memory_insert("A public fact.", sensitivity="public"),
    }
    memory.supersede_passage(ids["private"], ids["secret"])
    return ids


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("format_", ["json", "af"])
def test_export_leaves_secrets_out_unless_allowed_and_import_keeps_levels(
    memory: MemoryManager, tmp_path: Path, format_: str
) -> None:
    ids = _fill(memory)
    default = json.dumps(export_memory(memory, format=format_))  # type: ignore[arg-type]
    assert MARK not in default and "door_code" not in default and "A private fact." in default
    public = json.dumps(export_memory(memory, format=format_, max_sensitivity="public"))  # type: ignore[arg-type]
    assert MARK not in public and "A private fact." not in public and "A public fact." in public
    full = export_memory(memory, format=format_, allow_secret=True)  # type: ignore[arg-type]
    assert MARK in json.dumps(full)
    path = write_export(full, tmp_path / f"full.{format_}")
    import_file(
        path,
        tmp_path / "store",
        agent_id="copy",
        settings=_settings(tmp_path),
        embedding_function=HashEmbedding(),
    )
    with MemoryManager(
        agent_id="copy", settings=_settings(tmp_path), embedding_function=HashEmbedding()
    ) as copy:
        assert {b.label: b.sensitivity for b in copy.list_blocks(allow_secret=True)}[
            "door_code"
        ] == "secret"
        assert "door_code" not in [b.label for b in copy.list_blocks()]
        levels = {p.content: p.sensitivity for p in copy.archival_memory_list(allow_secret=True)}
        assert levels == {
            f"Vault {MARK}": "secret",
            "A private fact.": "private",
            "A public fact.": "public",
        }
        assert [hit.content for hit in copy.archival_memory_search("Vault", mode="keyword")] == []
    assert ids  # the source is unchanged by exporting
    assert memory.archival_memory_get(ids["secret"], allow_secret=True) is not None


@pytest.mark.usefixtures("backend")
def test_export_leaves_out_the_history_of_deleted_secrets(memory: MemoryManager) -> None:
    """A secret block or passage that is gone keeps its values in the journal: an edit made while it
    was secret, or its first value written while it was still private, must not ride out in an
    export the exporter may not see secrets in."""
    memory.create_block("vault", f"Old {MARK}", sensitivity="secret")
    memory.update_block("vault", value=f"New {MARK}", allow_secret=True)
    memory.create_block("diary", f"Diary {MARK}")
    memory.set_block_sensitivity("diary", "secret")
    with memory.clearance(allow_secret=True):
        memory.delete_block("vault")
        memory.delete_block("diary")
    relabelled = memory.archival_memory_insert(f"Passage {MARK}")
    memory.set_passage_sensitivity(relabelled, "secret")
    memory.archival_memory_delete(relabelled)
    memory.archival_memory_insert("A private fact.")
    memory.create_block("plans", "Trip to Oslo", sensitivity="secret")
    memory.set_block_sensitivity("plans", "private", allow_secret=True)  # allowed now: it stays

    default = json.dumps(
        export_memory(memory)
    )  # the project's JSON: the one format with the journal

    assert MARK not in default and "A private fact." in default
    assert [b["value"] for b in export_memory(memory)["blocks"] if b["label"] == "plans"] == [
        "Trip to Oslo"
    ]
    assert MARK in json.dumps(export_memory(memory, allow_secret=True))


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("where", ["blocks", "passages"])
def test_an_import_with_an_unknown_level_is_refused_whole(
    memory: MemoryManager, tmp_path: Path, where: str
) -> None:
    _fill(memory)
    document = export_memory(memory, allow_secret=True)
    document[where][-1]["sensitivity"] = "top-secret"
    path = write_export(document, tmp_path / "bad.json")
    before = store_snapshot(memory.database)
    with pytest.raises(MemoryAgentError, match="top-secret"):
        import_file(path, tmp_path / "store", agent_id="copy", settings=_settings(tmp_path))
    assert store_snapshot(memory.database) == before


@pytest.mark.usefixtures("backend")
def test_a_letta_file_without_our_levels_imports_them_private(
    memory: MemoryManager, tmp_path: Path
) -> None:
    _fill(memory)
    document = export_memory(memory, format="af", allow_secret=True)
    for agent in document["agents"]:
        for passage in agent["metadata"].get("memory_agent_passages", []):
            passage.pop("sensitivity")
    for block in document["blocks"]:
        block["metadata"].pop("memory_agent_sensitivity")
    import_file(
        write_export(document, tmp_path / "plain.af"),
        tmp_path / "store",
        agent_id="copy",
        settings=_settings(tmp_path),
        embedding_function=HashEmbedding(),
    )
    with MemoryManager(
        agent_id="copy", settings=_settings(tmp_path), embedding_function=HashEmbedding()
    ) as copy:
        assert {b.sensitivity for b in copy.list_blocks(allow_secret=True)} == {"private"}
        assert {p.sensitivity for p in copy.archival_memory_list(allow_secret=True)} == {"private"}
