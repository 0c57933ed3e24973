"""Who acted: every journal entry names its author, whichever entry point made the change."""

from __future__ import annotations

import asyncio
import getpass
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from old_schemas import sqlite_schema_at

from memory_agent import Author, ConfigurationError, MemoryManager, Settings
from memory_agent.authors import AUTHOR_KINDS, acting_author
from memory_agent.store.snapshot import store_snapshot
from memory_agent.tools import aexecute_tool, execute_tool

pytestmark = pytest.mark.usefixtures("backend")


def _authors(memory: MemoryManager, **filters: object) -> list[tuple[str | None, str | None, str]]:
    return [(e.author_kind, e.author, e.action) for e in memory.journal(**filters)]  # type: ignore[arg-type]  # filters are the keyword arguments of journal()


def test_constructors_name_each_kind() -> None:
    assert Author.model("a1") == Author("model", "a1")
    assert Author.person("ada") == Author("person", "ada")
    assert Author.importer("export.json") == Author("import", "export.json")
    assert Author.other_agent("a2") == Author("agent", "a2")
    assert Author.consolidator("s-1") == Author("consolidator", "s-1")
    assert {
        a.kind
        for a in (
            Author.model("x"),
            Author.person(),
            Author.importer("x"),
            Author.other_agent("x"),
            Author.consolidator("x"),
        )
    } == set(AUTHOR_KINDS)


def test_a_person_is_the_os_user_or_user(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Author.person().name == getpass.getuser()

    def no_user() -> str:
        raise OSError("no user")

    monkeypatch.setattr(getpass, "getuser", no_user)
    assert Author.person() == Author("person", "user")


@pytest.mark.parametrize(
    ("kind", "name"),
    [("robot", "x"), ("model", ""), ("model", "  "), ("person", 3), ("person", "bad\ud800")],
)
def test_bad_authors_are_refused(kind: object, name: object) -> None:
    with pytest.raises(ConfigurationError, match="author"):
        Author(kind, name)  # type: ignore[arg-type]  # wrong on purpose


def test_parse_reads_kind_and_name() -> None:
    assert Author.parse("model:a1") == Author.model("a1")
    assert Author.parse("ada") == Author.person("ada")
    with pytest.raises(ConfigurationError, match="Only the consolidation engine"):
        Author.parse("consolidator:s:1")  # a person posing as the engine would steer its rollback
    with pytest.raises(ConfigurationError, match="kind:name"):
        Author.parse("robot:x")


@given(st.sampled_from(AUTHOR_KINDS), st.text(min_size=1).filter(str.strip))
def test_an_author_round_trips_through_its_columns(kind: str, name: str) -> None:
    try:
        author = Author(kind, name)  # type: ignore[arg-type]  # kind is one of AUTHOR_KINDS
    except ConfigurationError:
        return  # text with lone surrogates is refused, as everywhere
    assert Author.from_columns(author.kind, author.name) == author


def test_acting_as_nests_and_restores_even_after_an_error(memory: MemoryManager) -> None:
    assert memory.current_author() == memory.author == Author.person()
    with memory.acting_as(Author.model("agent-a")):
        with pytest.raises(RuntimeError):
            with memory.acting_as(Author.importer("f.json")):
                assert memory.current_author() == Author.importer("f.json")
                raise RuntimeError("boom")
        assert memory.current_author() == Author.model("agent-a")
    assert acting_author() is None and memory.current_author() == Author.person()
    with pytest.raises(ConfigurationError, match="Author"):
        memory.acting_as("model:agent-a")  # type: ignore[arg-type]  # wrong on purpose


def test_each_thread_keeps_its_own_author(memory: MemoryManager) -> None:
    """Tools run in worker threads: one thread acting as the model never relabels another's
    writes."""
    inside, release = threading.Event(), threading.Event()

    def model_edit() -> None:
        with memory.acting_as(Author.model("agent-a")):
            inside.set()
            release.wait(10)
            memory.core_memory_append("human", "from the model's thread")

    worker = threading.Thread(target=model_edit)
    worker.start()
    assert inside.wait(10)
    memory.update_block("persona", value="set by a person meanwhile")
    release.set()
    worker.join(10)
    by_action = {(e.action, e.author_kind) for e in memory.journal(limit=2)}
    assert by_action == {("core_memory_append", "model"), ("update", "person")}


def test_the_python_api_defaults_to_a_person_and_can_be_told_otherwise(settings: Settings) -> None:
    with MemoryManager(agent_id="agent-a", settings=settings) as memory:
        memory.core_memory_append("human", "likes tea")
        assert _authors(memory, limit=1) == [("person", getpass.getuser(), "core_memory_append")]
        with memory.acting_as(Author.consolidator("session-7")):
            memory.update_block("human", value="consolidated")
        entry = memory.journal(limit=1)[0]
        assert entry.acted_by == Author.consolidator("session-7")
        assert memory.block_history("human")[-1].author_kind == "consolidator"
    with MemoryManager(
        agent_id="agent-a", settings=settings, author=Author.person("ada")
    ) as memory:
        memory.core_memory_append("human", "and coffee")
        assert _authors(memory, limit=1) == [("person", "ada", "core_memory_append")]
    with pytest.raises(ConfigurationError, match="Author"):
        MemoryManager(agent_id="agent-a", settings=settings, author="ada")  # type: ignore[arg-type]  # on purpose


def test_passage_lifecycle_entries_name_the_managers_author(settings: Settings) -> None:
    """Supersede, restore, importance, update, purge and delete all journal the default author, not
    only what an `acting_as` block sets."""
    with MemoryManager(
        agent_id="agent-a", settings=settings, author=Author.person("ada")
    ) as memory:
        old = memory.archival_memory_insert("lives in Lisbon")
        new = memory.archival_memory_insert("moved to Porto")
        gone = memory.archival_memory_insert("parking note", expires_at="2000-01-01T00:00:00+00:00")
        memory.supersede_passage(old, new)
        memory.restore_passage(old)
        memory.set_passage_importance(old, 0.9)
        memory.update_passage(old, tags=["city"])
        assert memory.purge_expired() == 1
        memory.archival_memory_delete(new)
        entries = [e for e in memory.journal(limit=50) if e.target_id in {old, new, gone}]
        actions = {e.action for e in entries}
        assert {
            "supersede_passage",
            "restore_passage",
            "set_passage_importance",
            "update_passage",
            "purge_passage",
            "delete_passage",
        } <= actions
        assert {(e.author_kind, e.author) for e in entries} == {("person", "ada")}


def test_the_tool_path_is_the_model(memory: MemoryManager) -> None:
    memory.ensure_agent("agent-b")
    assert not execute_tool(
        memory, "core_memory_append", {"label": "human", "content": "via tool"}
    ).is_error
    assert not execute_tool(memory, "archival_memory_insert", {"content": "a passage"}).is_error
    assert not execute_tool(
        memory,
        "memory",
        {"command": "create", "path": "/memories/notes.md", "file_text": "hi"},
        agent_id="agent-b",
    ).is_error
    outcome = asyncio.run(
        aexecute_tool(memory, "core_memory_append", {"label": "persona", "content": "async"})
    )
    assert not outcome.is_error
    assert _authors(memory, limit=4) == [
        ("model", "agent-a", "core_memory_append"),
        ("model", "agent-b", "create_block"),
        ("model", "agent-a", "insert_passage"),
        ("model", "agent-a", "core_memory_append"),
    ]
    assert memory.current_author() == Author.person()  # the tool's author ended with the call
    assert [e.action for e in memory.journal(author_kind="model")][:1] == ["core_memory_append"]
    with pytest.raises(ConfigurationError, match="author kind"):
        memory.journal(author_kind="robot")


def test_a_refused_tool_call_journals_nothing(memory: MemoryManager) -> None:
    before = store_snapshot(memory.database)
    outcome = execute_tool(
        memory,
        "core_memory_replace",
        {"label": "human", "old_content": "absent", "new_content": "x"},
    )
    assert outcome.is_error
    assert store_snapshot(memory.database) == before


def test_the_anthropic_memory_tool_is_the_model(memory: MemoryManager) -> None:
    pytest.importorskip("anthropic")
    from memory_agent.integrations.anthropic_memory import ManagedMemoryTool

    tool = ManagedMemoryTool(memory)
    tool.call({"command": "create", "path": "/memories/prefs.md", "file_text": "dark mode"})
    tool.call(
        {
            "command": "str_replace",
            "path": "/memories/prefs.md",
            "old_str": "dark",
            "new_str": "light",
        }
    )
    assert _authors(memory, limit=2) == [
        ("model", "agent-a", "memory_str_replace"),
        ("model", "agent-a", "create_block"),
    ]


def test_another_agent_writes_as_itself_and_a_shared_edit_is_another_agents_to_the_others(
    memory: MemoryManager,
) -> None:
    memory.ensure_agent("agent-b")
    shared = memory.create_block("team", "start", is_shared=True)
    memory.attach_block("agent-b", shared.block_id)
    with memory.acting_as(Author.other_agent("agent-a")):
        memory.core_memory_append("human", "noted by agent-a for agent-b", agent_id="agent-b")
    entry = memory.journal(agent_id="agent-b", limit=1)[0]
    assert entry.acted_by == Author.other_agent("agent-a")
    assert execute_tool(
        memory,
        "core_memory_append",
        {"label": "team", "content": "from b's model"},
        agent_id="agent-b",
    ).text
    last = memory.block_history("team")[-1]
    stored = Author.from_columns(last.author_kind, last.author)
    assert stored == Author.model("agent-b")
    assert stored.seen_by("agent-a") == Author.other_agent("agent-b")
    assert stored.seen_by("agent-b") == Author.model("agent-b")


@pytest.mark.sqlite_only(
    reason="builds a SQLite file at the version before authors by hand; PostgreSQL's "
    "upgrade from each version is tested in test_migrations.py"
)
def test_rows_written_before_authors_keep_no_author(tmp_path: Path) -> None:
    """The migration adds the columns and leaves earlier entries as they were."""
    import sqlite3

    from memory_agent.store.migrations import MIGRATIONS, run_script

    path = tmp_path / "store" / "memory.db"
    path.parent.mkdir()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    upto = [m.__name__ for m in MIGRATIONS].index("m007_issue28_journal_authors")
    sqlite_schema_at(conn, upto)
    run_script(
        conn,
        "INSERT INTO agents (agent_id, created_at) VALUES ('old', '2024-01-01T00:00:00Z');\n"
        "INSERT INTO journal (agent_id, action, target_type, target_id, created_at)"
        " VALUES ('old', 'create_agent', 'agent', 'old', '2024-01-01T00:00:00Z');",
    )
    conn.execute("COMMIT")
    conn.close()
    settings = Settings.from_env({"PERSIST_DIRECTORY": str(path.parent)}, env_file=None)
    with MemoryManager(agent_id="old", settings=settings) as memory:
        old = memory.journal(agent_id="old")[-1]
        assert (old.action, old.author_kind, old.author, old.acted_by) == (
            "create_agent",
            None,
            None,
            None,
        )
        memory.create_block("notes", "new")
        assert (memory.journal(limit=1)[0].action, memory.journal(limit=1)[0].author_kind) == (
            "create_block",
            "person",
        )


def test_an_import_keeps_the_files_authors_and_is_the_author_of_the_rest(
    memory: MemoryManager, settings: Settings, tmp_path: Path
) -> None:
    from memory_agent.portability import export_memory, import_file, write_export

    execute_tool(memory, "core_memory_append", {"label": "human", "content": "by the model"})
    document = export_memory(memory)
    assert document["journal"][-1]["author_kind"] == "model"
    path = write_export(document, tmp_path / "agent-a.json")
    import_file(path, settings.persist_directory, agent_id="copy", settings=settings)
    with MemoryManager(agent_id="copy", settings=settings) as copy:
        entries = copy.journal(agent_id="copy")
        assert (
            entries[0].acted_by == Author.importer("agent-a.json")
            and entries[0].action == "import_agent"
        )
        assert [e.acted_by for e in entries if e.action == "core_memory_append"] == [
            Author.model("agent-a")
        ]
        assert copy.block_history("human")[-1].author_kind == "model"

    for entry in document["journal"]:  # a file from before authors: the import is their author
        entry.pop("author_kind"), entry.pop("author")
    path = write_export(document, tmp_path / "old.json")
    import_file(path, settings.persist_directory, agent_id="old-copy", settings=settings)
    with MemoryManager(agent_id="old-copy", settings=settings) as copy:
        assert {e.acted_by for e in copy.journal(agent_id="old-copy")} == {
            Author.importer("old.json")
        }


def test_an_import_naming_a_bad_author_is_refused_whole(
    memory: MemoryManager, settings: Settings, tmp_path: Path
) -> None:
    from memory_agent import ImportFormatError
    from memory_agent.portability import export_memory, import_file, write_export

    document = export_memory(memory)
    document["journal"][0]["author_kind"] = "robot"
    path = write_export(document, tmp_path / "bad.json")
    before = store_snapshot(memory.database)
    with pytest.raises(ImportFormatError, match=r"journal\[0\].*robot"):
        import_file(path, settings.persist_directory, agent_id="bad", settings=settings)
    assert store_snapshot(memory.database) == before


def test_deleting_an_agent_outside_the_manager_is_a_persons(memory: MemoryManager) -> None:
    from memory_agent.maintenance.admin import delete_agent

    memory.ensure_agent("agent-b")
    delete_agent(memory.database, "agent-b")
    deleted = memory.journal(agent_id="agent-b", limit=1)[0]
    assert (deleted.action, deleted.acted_by) == ("delete_agent", Author.person())


@given(
    st.text(min_size=0, max_size=20),
    st.sampled_from(
        ["\n", "\r", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1b", "\x00", "\t", "\u200b"]
    ),
    st.text(min_size=0, max_size=20),
)
def test_an_author_name_is_one_printable_line(before: str, bad: str, after: str) -> None:
    """A line break (any Unicode one) or control character in a name could forge a second author
    wherever the journal is shown: refused on construction and when parsed from --author."""
    with pytest.raises(ConfigurationError, match="one line of printable text|must not|at most"):
        Author("person", f"ada{before}{bad}{after}")
    with pytest.raises(ConfigurationError):
        Author.parse(f"person:ada{bad}model:evil")


def test_an_author_name_is_bounded_and_old_rows_still_show() -> None:
    assert Author("person", "a" * 200).name == "a" * 200
    with pytest.raises(ConfigurationError, match="at most 200"):
        Author("person", "a" * 201)
    assert Author("person", "Ada Lovelace (on call)").name == "Ada Lovelace (on call)"
    shown = Author.from_columns("person", "ada\nmodel:evil")
    assert shown is not None and "\n" not in shown.name and shown.name.startswith("ada")
