"""Sentence vectors and reply links (`archival/sentences.py`, `archival/links.py`): a passage whose
context names another passage by its whole text records it on insert, and hybrid search lifts
the replies of its candidates."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from archival_helpers import HashEmbedding
from old_schemas import postgres_schema_at

from memory_agent import MemoryManager
from memory_agent.archival import ArchivalMemory, FusionConfig, NewPassage, PassageFilter
from memory_agent.archival.links import context_heads, lift_replies, replies_of
from memory_agent.archival.passages import content_hash
from memory_agent.archival.sentences import MAX_SENTENCE_SOURCE, sentence_texts
from memory_agent.errors import ConfigurationError
from memory_agent.store.database import Database
from memory_agent.store.migrations import m015_issue25_reply_links

QUESTION = "Caroline: Have you ever been hiking in the Grand Canyon?"
REPLY = "Melanie: Yes, twice! We loved it so much that we are going back next summer."
OTHERS = [
    "Melanie: We repainted the kitchen cupboards a pale green colour over the weekend.",
    "Caroline: The quarterly budget meeting moved to Thursday afternoon at three.",
    "Melanie: I finally learned to bake sourdough bread with a crunchy crust.",
    "Caroline: Our train to Vienna was delayed by two hours because of snow.",
]


def context_of(db: Database, passage_id: str) -> str | None:
    with db.reading() as conn:
        row = conn.execute(
            "SELECT context_of FROM passages WHERE passage_id = ?", (passage_id,)
        ).fetchone()
    return None if row is None or row[0] is None else str(row[0])


# ----- sentences --------------------------------------------------------------------------------


def test_each_sentence_keeps_the_passage_label() -> None:
    assert sentence_texts(REPLY) == [
        "Melanie: Yes, twice!",
        "Melanie: We loved it so much that we are going back next summer.",
    ]
    assert sentence_texts("The train was late. We missed the show.") == [
        "The train was late.",
        "We missed the show.",
    ]
    # a label is one to four capitalised words: a sentence with a colon is not one
    assert sentence_texts("note to self: buy milk. Then call Tom.") == [
        "note to self: buy milk.",
        "Then call Tom.",
    ]


def test_one_sentence_or_a_long_passage_gets_no_sentence_vectors() -> None:
    assert sentence_texts(QUESTION) == []
    assert sentence_texts("Caroline: ok") == []
    long = "The train was late. " * (MAX_SENTENCE_SOURCE // 20 + 1)
    assert len(long) > MAX_SENTENCE_SOURCE and sentence_texts(long) == []
    assert len(sentence_texts("A b. " * 16)) == 16 and sentence_texts("A b. " * 17) == []


@pytest.mark.usefixtures("backend")
def test_a_split_passage_is_stored_with_a_vector_per_sentence(hashed: ArchivalMemory) -> None:
    passage_id = hashed.insert("alice", REPLY)
    single = hashed.insert("alice", QUESTION)
    reply, question = hashed.get("alice", passage_id), hashed.get("alice", single)
    assert reply is not None and reply.vector_chunks == 3  # the text, then its two sentences
    assert question is not None and question.vector_chunks == 1
    hits = hashed.search("alice", "twice", limit=5, mode="vector")
    assert [hit.passage_id for hit in hits].count(passage_id) == 1  # one hit, not one per chunk
    hashed.delete("alice", passage_id)
    assert not [v for v in hashed.index.store.ids("alice") if v.startswith(passage_id)]


# ----- links ------------------------------------------------------------------------------------


def test_context_heads_are_prefixes_of_at_least_half() -> None:
    assert context_heads("") == []
    assert context_heads("a bb ccc dddd") == ["a bb ccc dddd", "a bb ccc"]
    assert context_heads(f"{QUESTION} 8 May 2023")[:2] == [
        f"{QUESTION} 8 May 2023",
        f"{QUESTION} 8 May",
    ]
    assert QUESTION in context_heads(f"{QUESTION} 8 May 2023")
    assert context_heads("x " * 2_001) == []  # longer than MAX_LINKED_CONTEXT: not looked up


@pytest.mark.usefixtures("backend")
def test_a_reply_records_the_passage_its_context_names(
    manager: MemoryManager, hashed: ArchivalMemory
) -> None:
    for agent_id in ("carol", "dave", "erin"):
        manager.ensure_agent(agent_id)
    asked = hashed.insert("alice", QUESTION)
    hashed.insert("bob", QUESTION)
    reply = hashed.insert("alice", REPLY, context=f"{QUESTION} 8 May 2023")
    assert context_of(hashed.db, reply) == asked
    # one batch: the passage named earlier in it is found
    first, second = hashed.insert_many(
        "carol",
        [
            NewPassage(QUESTION),
            NewPassage(REPLY, context=f"{QUESTION} 8 May 2023"),
        ],
    )
    assert context_of(hashed.db, second) == first
    # not named: other words, the named text less than half of the context, another agent's text
    other = hashed.insert("alice", OTHERS[0], context="Caroline: What did you do this weekend?")
    short = hashed.insert("alice", OTHERS[1], context=f"{QUESTION} {'and more words ' * 10}")
    lone = hashed.insert("dave", OTHERS[2], context=QUESTION)
    assert context_of(hashed.db, other) is None
    assert context_of(hashed.db, short) is None
    assert context_of(hashed.db, lone) is None
    # the link is looked up when the reply is written: the answered passage must be there first
    early = hashed.insert("erin", REPLY, context=QUESTION)
    hashed.insert("erin", QUESTION)
    assert context_of(hashed.db, early) is None


def test_lift_replies_raises_a_reply_to_a_share_of_what_it_answers() -> None:
    ranked = [("q", 1.0), ("a", 0.5), ("r", 0.2)]
    assert lift_replies(ranked, {}, 0.7) == ranked
    assert lift_replies(ranked, {"r": "q"}, 0.7) == [("q", 1.0), ("r", 0.7), ("a", 0.5)]
    # a reply neither index found joins; one already above its floor keeps its score
    assert lift_replies(ranked, {"new": "a", "q": "r"}, 0.7) == [
        ("q", 1.0),
        ("a", 0.5),
        ("new", 0.35),
        ("r", 0.2),
    ]
    # a reply of a passage that is not ranked, or ranked at 0, is not added
    assert lift_replies([("q", 0.0)], {"r": "q", "s": "gone"}, 0.7) == [("q", 0.0)]
    with pytest.raises(ConfigurationError):
        FusionConfig(reply_share=1.5)


@pytest.mark.usefixtures("backend")
def test_hybrid_search_lifts_the_replies_of_its_candidates(
    db: Database, hashed: ArchivalMemory
) -> None:
    asked = hashed.insert("alice", QUESTION, tags=["trip"])
    # a long reply: its own words and vectors match the question less than the passage it answers
    reply = hashed.insert("alice", REPLY + " " + " ".join(OTHERS), context=QUESTION)
    hashed.insert_many("alice", OTHERS)
    query = "hiking the Grand Canyon"
    # the vector leg alone decides the fused scores, so they are the same on both backends
    hashed.fusion = FusionConfig(keyword_weight=0.0, vector_weight=1.0, reply_share=0)
    before = hashed.search("alice", query, limit=20, mode="hybrid")
    hashed.fusion = FusionConfig(keyword_weight=0.0, vector_weight=1.0)
    after = hashed.search("alice", query, limit=20, mode="hybrid")
    with db.reading() as conn:
        replies = replies_of(conn, PassageFilter.build("alice"), [hit.passage_id for hit in before])
    assert replies == {reply: asked}
    expected = lift_replies([(hit.passage_id, hit.score) for hit in before], replies, 0.7)
    assert [(hit.passage_id, pytest.approx(hit.score)) for hit in after] == expected
    lifted = next(hit for hit in after if hit.passage_id == reply)
    top = next(hit for hit in after if hit.passage_id == asked)
    before_score = {hit.passage_id: hit.score for hit in before}[reply]
    assert lifted.score == pytest.approx(0.7 * top.score) and lifted.score > before_score
    # a filter the reply does not pass leaves it out
    tagged = hashed.search("alice", query, limit=20, mode="hybrid", tags=["trip"])
    assert [hit.passage_id for hit in tagged] == [asked]


@pytest.mark.sqlite_only(
    reason="runs SQLite's m015 by hand on the database file; PostgreSQL's p012 (the same rule) is"
    " run by every migrated PostgreSQL database, on passages that have no context yet"
)
def test_the_migration_links_passages_stored_before_it(tmp_path: Path) -> None:
    with MemoryManager(
        storage_dir=tmp_path, agent_id="old", embedding_function=HashEmbedding()
    ) as memory:
        asked = memory.archival_memory_insert(QUESTION)
        reply = memory.archival_memory_insert(REPLY, context=f"{QUESTION} 8 May 2023")
        other = memory.archival_memory_insert(OTHERS[0], context="Caroline: and you?")
    conn = sqlite3.connect(tmp_path / "memory.db", isolation_level=None)
    conn.execute("UPDATE passages SET context_of = NULL")
    conn.execute("BEGIN")
    m015_issue25_reply_links(conn)  # runs again on a schema that has the column: idempotent
    conn.execute("COMMIT")
    links = dict(conn.execute("SELECT passage_id, context_of FROM passages").fetchall())
    conn.close()
    assert links == {asked: None, reply: asked, other: None}


@pytest.mark.postgres
def test_the_postgres_migration_links_passages_stored_before_it(
    postgres_url: str, tmp_path: Path
) -> None:
    import psycopg

    from memory_agent.store.pg_schema import PG_MIGRATIONS, p012_reply_links

    before = PG_MIGRATIONS.index(p012_reply_links)
    rows = [
        ("p0", QUESTION, ""),
        ("p1", REPLY, f"{QUESTION} 8 May 2023"),
        ("p2", OTHERS[0], "Caroline: and you?"),
    ]
    with psycopg.connect(postgres_url) as conn:
        postgres_schema_at(conn, before)
        now = "2024-01-01T00:00:00.000000+00:00"
        conn.execute("INSERT INTO agents (agent_id, created_at) VALUES ('old', %s)", (now,))
        for passage_id, content, context in rows:
            conn.execute(
                "INSERT INTO passages (passage_id, agent_id, content, content_hash, created_at,"
                " index_context) VALUES (%s, 'old', %s, %s, %s, %s)",
                (passage_id, content, content_hash(content), now, context),
            )
    with MemoryManager(
        tmp_path, agent_id="old", database_url=postgres_url, embedding_function=HashEmbedding()
    ) as memory:
        memory.archival_memory_insert(OTHERS[1])  # the store opens, migrated
    with psycopg.connect(postgres_url) as conn:
        links = dict(conn.execute("SELECT passage_id, context_of FROM passages").fetchall())
    assert links["p0"] is None and links["p1"] == "p0" and links["p2"] is None
