"""Writing and reading passages: dedup, batches, tags, metadata, list, count, journalled delete."""

from __future__ import annotations

import json

import pytest

from memory_agent.archival import ArchivalMemory, NewPassage
from memory_agent.archival.archive import INSERT_CHUNK
from memory_agent.archival.passage_table import fetch_one, insert_or_get
from memory_agent.archival.passages import prepare
from memory_agent.errors import AgentNotFoundError, ArchivalError
from memory_agent.store import journal
from memory_agent.store.database import Database, utc_now

pytestmark = pytest.mark.usefixtures("backend")


def test_identical_content_by_the_same_agent_is_stored_once(hashed: ArchivalMemory) -> None:
    first = hashed.insert("alice", "The launch moved to Friday.", tags=["work"])
    again = hashed.insert("alice", "The launch moved to Friday.", tags=["other"])
    assert again == first
    assert hashed.count("alice") == 1
    assert hashed.get("alice", first).tags == ("work",)  # the first copy is kept as it was
    assert hashed.insert("bob", "The launch moved to Friday.") != first  # dedup is per agent


def test_insert_many_keeps_input_order_and_dedups_within_the_batch(hashed: ArchivalMemory) -> None:
    ids = hashed.insert_many(
        "alice", ["one", NewPassage("two", tags=["t"]), {"content": "three"}, "one"]
    )
    assert len(ids) == 4 and ids[0] == ids[3] and len(set(ids)) == 3
    assert [hashed.get("alice", i).content for i in ids] == ["one", "two", "three", "one"]
    assert hashed.pending_count() == 0
    assert hashed.index.store.ids("alice") == set(ids)


def test_batch_is_embedded_in_one_call(db: Database, chroma_config) -> None:  # type: ignore[no-untyped-def]
    from archival_helpers import HashEmbedding

    embedding = HashEmbedding()
    archival = ArchivalMemory(db, chroma_config, embedding)
    archival.insert_many("alice", [f"passage {n}" for n in range(100)])
    assert embedding.calls == 1


def test_passage_fields_round_trip(hashed: ArchivalMemory) -> None:
    passage_id = hashed.insert(
        "alice",
        "Met Dana at the conference.",
        tags=[" people ", "people", "events"],
        metadata={"source": "chat", "n": 3},
        created_at="2024-03-05T10:00:00+02:00",
    )
    passage = hashed.get("alice", passage_id)
    assert passage is not None
    assert passage.passage_id.startswith("passage-")
    assert passage.tags == ("people", "events")
    assert passage.metadata == {"source": "chat", "n": 3}
    assert passage.created_at == "2024-03-05T08:00:00.000000+00:00"
    assert passage.vector_state == "indexed"


@pytest.mark.parametrize(
    "item",
    [
        NewPassage("Plain note."),
        NewPassage(
            "Moved the launch to Friday, café at 9.",
            tags=["work", "plans"],
            metadata={"n": 3, "é": [1.5, None], "nested": {"b": 1, "a": "x"}},
            created_at="2024-03-05T10:00:00+02:00",
            ttl_days=2.5,
            importance=0.3,
            provenance={"messages": [4, 5], "block": "human"},
            sensitivity="secret",
            context="Asked when the launch is.",
        ),
    ],
    ids=["defaults", "every-field"],
)
def test_a_new_passage_is_what_its_row_reads_back(db: Database, item: NewPassage) -> None:
    """insert_or_get builds a new passage from the values it wrote instead of reading the row
    back; every field must be what a read of the row gives (column defaults included)."""
    prepared = prepare(item)
    with db.transaction() as conn:
        built, created = insert_or_get(conn, "alice", prepared, utc_now())
        read = fetch_one(conn, "alice", built.passage_id)
        again, created_again = insert_or_get(conn, "alice", prepared, utc_now())
    assert created and not created_again
    assert built == read == again


@pytest.mark.parametrize(
    ("content", "tags", "metadata", "message"),
    [
        ("", None, None, "empty"),
        ("   \n", None, None, "empty"),
        (42, None, None, "must be text"),
        ("ok", [1], None, "Tags must be strings"),
        ("ok", None, {"when": object()}, "JSON"),
        ("ok", None, ["not", "a", "mapping"], "mapping"),
    ],
)
def test_invalid_passages_are_refused_before_anything_is_written(
    hashed: ArchivalMemory, content: object, tags: object, metadata: object, message: str
) -> None:
    with pytest.raises(ArchivalError, match=message):
        hashed.insert_many("alice", ["valid first", NewPassage(content, tags, metadata)])  # type: ignore[arg-type]
    assert hashed.count("alice") == 0


def test_a_bad_item_late_in_a_large_batch_writes_nothing(hashed: ArchivalMemory) -> None:
    items = [f"passage {n}" for n in range(INSERT_CHUNK + 1)] + [""]
    with pytest.raises(ArchivalError, match="empty"):
        hashed.insert_many("alice", items)
    assert hashed.count("alice") == 0


def test_unknown_agent_is_refused(hashed: ArchivalMemory) -> None:
    with pytest.raises(AgentNotFoundError):
        hashed.insert("nobody", "text")


def test_list_is_newest_first_with_paging_and_tags(hashed: ArchivalMemory) -> None:
    for day in range(1, 6):
        hashed.insert(
            "alice",
            f"note of day {day}",
            tags=["odd" if day % 2 else "even"],
            created_at=f"2024-01-0{day}",
        )
    assert [p.content for p in hashed.list("alice", limit=2)] == ["note of day 5", "note of day 4"]
    assert [p.content for p in hashed.list("alice", limit=2, offset=2)] == [
        "note of day 3",
        "note of day 2",
    ]
    assert [p.content for p in hashed.list("alice", tags=["even"])] == [
        "note of day 4",
        "note of day 2",
    ]
    assert hashed.count("alice") == 5 and hashed.count("bob") == 0


def test_delete_is_journalled_and_removes_the_vector(hashed: ArchivalMemory, db: Database) -> None:
    passage_id = hashed.insert("alice", "Temporary note", tags=["tmp"])
    deleted = hashed.delete("alice", passage_id)
    assert deleted.content == "Temporary note"
    assert hashed.get("alice", passage_id) is None
    assert passage_id not in hashed.index.store.ids("alice")
    assert hashed.search("alice", "Temporary note", mode="keyword") == []
    with db.reading() as conn:
        entries = journal.list_entries(conn, target_type="passage", target_id=passage_id)
    assert [e.action for e in entries] == ["delete_passage", "insert_passage"]
    assert entries[0].old_value == "Temporary note" and entries[0].agent_id == "alice"
    assert entries[0].detail["tags"] == ["tmp"]


def test_a_batch_is_journalled_in_the_order_of_its_items(
    hashed: ArchivalMemory, db: Database
) -> None:
    """insert_many appends its entries together, but a repeated text (journalled by its own
    writer) still comes after the entries of the items before it, and the chain holds."""
    ids = hashed.insert_many("alice", ["one", "two", "one", "three"])
    with db.reading() as conn:
        entries = journal.list_entries(conn, agent_id="alice", target_type="passage")
        report = journal.verify_chain(conn)
    assert [(e.action, e.target_id) for e in reversed(entries)] == [
        ("insert_passage", ids[0]),
        ("insert_passage", ids[1]),
        ("reinsert_passage", ids[0]),
        ("insert_passage", ids[3]),
    ]
    assert report.ok


def test_a_journal_batch_links_to_what_was_written_meanwhile_and_nothing_on_error(
    db: Database,
) -> None:
    now = utc_now()
    entry = {"agent_id": "alice", "target_type": "note", "created_at": now}
    with db.transaction() as conn, journal.batch(conn) as entries:
        entries.record(action="first", target_id="1", **entry)
        journal.record(conn, action="direct", target_id="2", **entry)
        entries.flush()
        entries.record(action="last", target_id="3", **entry)
    with pytest.raises(ZeroDivisionError), db.transaction() as conn, journal.batch(conn) as entries:
        entries.record(action="rolled back", target_id="4", **entry)
        _ = 1 / 0
    with db.reading() as conn:
        found = journal.list_entries(conn, target_type="note")
        report = journal.verify_chain(conn)
    assert [e.action for e in reversed(found)] == ["direct", "first", "last"]
    assert report.ok


def test_delete_tolerates_a_missing_vector(hashed: ArchivalMemory) -> None:
    passage_id = hashed.insert("alice", "Vector lost somewhere")
    hashed.index.store.delete("alice", [passage_id])
    hashed.delete("alice", passage_id)
    assert hashed.count("alice") == 0


def test_delete_of_an_unknown_id_says_so(hashed: ArchivalMemory) -> None:
    with pytest.raises(ArchivalError, match="no archival passage"):
        hashed.delete("alice", "passage-missing")


def test_tags_are_rows_too(hashed: ArchivalMemory, db: Database) -> None:
    passage_id = hashed.insert("alice", "tagged", tags=["a", "b"])
    with db.reading() as conn:
        rows = conn.execute(
            "SELECT tag FROM passage_tags JOIN passages USING (passage_rowid) WHERE passage_id = ? "
            "ORDER BY tag",
            (passage_id,),
        ).fetchall()
        stored = conn.execute(
            "SELECT tags FROM passages WHERE passage_id = ?", (passage_id,)
        ).fetchone()[0]
    assert [r[0] for r in rows] == ["a", "b"] and json.loads(stored) == ["a", "b"]
