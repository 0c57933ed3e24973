"""Keyword search skips scoring the rows of very common words only where that changes nothing:
the head `store.fts_prune` reads is the plain OR query's head, row for row (real SQLite, the
agent's own FTS5 index, real archival inserts)."""

from __future__ import annotations

import random

import pytest
from archival_helpers import HashEmbedding
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_agent.archival import ArchivalMemory, InMemoryVectorStore, NewPassage
from memory_agent.store.database import Database
from memory_agent.store.fts import query_tokens
from memory_agent.store.fts_prune import pruned_head
from memory_agent.store.passage_fts import TOKENIZER, agent_fts_table

pytestmark = pytest.mark.sqlite_only(
    reason="FTS5 is SQLite's keyword index; PostgreSQL ranks with its own "
    "GIN index and planner (store/pg_fulltext.py)"
)

COMMON = ["alex", "garden"]  # in most rows
RARE = ["lisbon", "violin", "kayak", "quilt", "sailing", "painted", "telescope", "harbour"]
ROWS = 3000


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Database:
    from memory_agent import MemoryManager, Settings

    storage = tmp_path_factory.mktemp("prune")
    memory = MemoryManager(agent_id="alice", settings=Settings(persist_directory=storage))
    archival = ArchivalMemory(
        memory.db, embedding_function=HashEmbedding(), vector_store=InMemoryVectorStore()
    )
    rng = random.Random(5)
    texts = []
    for number in range(ROWS):
        words = [word for word in COMMON if rng.random() < 0.9]
        words += rng.sample(RARE, k=rng.choice([0, 1, 1, 2]))
        words += ["note", str(number)] + ["filler"] * rng.randint(0, 6)
        rng.shuffle(words)
        texts.append(NewPassage(" ".join(words)))
    archival.insert_many("alice", texts)
    return memory.db


def _plain(db: Database, tokens: list[str], depth: int) -> list[tuple[int, float]]:
    with db.reading() as conn:
        table = agent_fts_table(conn, "alice")
        match = " OR ".join(f'"{token}"' for token in tokens)
        return [
            (row[0], row[1])
            for row in conn.execute(
                f"SELECT rowid, bm25({table}) AS rank FROM {table} WHERE {table} MATCH ? ORDER BY "
                "rank, rowid LIMIT ?",
                (match, depth),
            )
        ]


def _pruned(db: Database, tokens: list[str], depth: int) -> list[tuple[int, float]] | None:
    with db.reading() as conn:
        table = agent_fts_table(conn, "alice")
        assert table is not None
        head = pruned_head(conn, table, TOKENIZER, tokens, depth)
    return None if head is None else [(row[0], row[1]) for row in head]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.sampled_from(COMMON + RARE + ["absent"]), min_size=1, max_size=5, unique=True),
    st.sampled_from([10, 40, 200]),
)
def test_the_pruned_head_is_the_plain_head_or_declines(
    filled: Database, tokens: list[str], depth: int
) -> None:
    pruned = _pruned(filled, tokens, depth)
    if pruned is not None:
        plain = _plain(filled, tokens, depth)
        assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(pruned, plain, strict=True))
        pruned_ties, plain_ties = _tied_runs(pruned), _tied_runs(plain)
        assert pruned_ties[:-1] == plain_ties[:-1]
        assert len(pruned_ties[-1]) == len(plain_ties[-1])


def _tied_runs(head: list[tuple[int, float]]) -> list[set[int]]:
    """The rowids of each run of equal scores, best first. The two queries sum a row's terms in
    another order, so scores equal in exact arithmetic can differ in the last bit (1e-15) and such
    rows may come in either order; the last run may also be cut at `depth` at another row (found
    by Hypothesis: 'lisbon painted alex telescope' at depth 40)."""
    runs: list[tuple[float, set[int]]] = []
    for rowid, rank in head:
        if runs and abs(rank - runs[-1][0]) < 1e-9:
            runs[-1][1].add(rowid)
        else:
            runs.append((rank, {rowid}))
    return [rowids for _, rowids in runs]


def test_a_common_name_with_a_rare_word_is_pruned_and_exact(filled: Database) -> None:
    tokens = query_tokens("What did Alex do in Lisbon with the violin?", drop_stop_words=True)
    assert tokens == ["alex", "lisbon", "violin"]
    pruned = _pruned(filled, tokens, 40)
    assert pruned is not None  # the case the pruning is for: it applies
    plain = _plain(filled, tokens, 40)
    assert [rowid for rowid, _ in pruned] == [rowid for rowid, _ in plain]
    assert [rank for _, rank in pruned] == pytest.approx([rank for _, rank in plain])


def test_it_declines_without_both_kinds_of_word(filled: Database) -> None:
    assert _pruned(filled, ["alex", "garden"], 40) is None  # only common words: the plain query
    assert _pruned(filled, ["lisbon", "violin"], 40) is None  # no common word: nothing to skip
    assert _pruned(filled, ["alex", "absent"], 40) is None  # too few rows with a rare word


def test_a_word_no_row_holds_does_not_stop_the_pruning(filled: Database) -> None:
    """A query word that matches nothing ("go") adds nothing to any score: it once made every other
    word look skippable, and the head then came back short (the full query ran instead)."""
    tokens = ["alex", "go", "lisbon"]
    pruned = _pruned(filled, tokens, 40)
    assert pruned is not None
    assert [rowid for rowid, _ in pruned] == [rowid for rowid, _ in _plain(filled, tokens, 40)]


def test_keyword_search_answers_as_before(filled: Database) -> None:
    from memory_agent.archival.filters import PassageFilter
    from memory_agent.archival.keyword import keyword_search

    where = PassageFilter.build("alice", None, "any", None, None)
    with filled.reading() as conn:
        found = keyword_search(conn, "Alex painted a quilt in the garden", where, 10)
    plain = _plain(filled, ["alex", "painted", "quilt", "garden"], 10)
    assert [-m.score for m in found] == pytest.approx([rank for _, rank in plain])


def test_a_shallow_head_crowded_by_hidden_passages_still_answers_exactly(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Without tags or dates the head is read only a little deeper than asked (HEAD_SLACK). When
    secret passages (hidden at the default clearance) fill it, the deeper head and then the joined
    query answer: the hits are still the best visible matches, in bm25 order."""
    from memory_agent import MemoryManager, Settings

    memory = MemoryManager(agent_id="alice", settings=Settings(persist_directory=tmp_path))
    try:
        archival = ArchivalMemory(
            memory.db, embedding_function=HashEmbedding(), vector_store=InMemoryVectorStore()
        )
        # Shorter passages score higher: the 30 best matches are secret, the next 20 visible.
        secret = [
            NewPassage(f"zebra {'x ' * n}secret note {n}", sensitivity="secret") for n in range(30)
        ]
        visible = [NewPassage(f"zebra {'x ' * (30 + n)}open note {n}") for n in range(20)]
        archival.insert_many("alice", secret + visible)
        hits = archival.search("alice", "zebra", limit=10, mode="keyword")
        assert [hit.content for hit in hits] == [passage.content for passage in visible[:10]]
        everything = archival.search("alice", "zebra", limit=10, mode="keyword", clearance="secret")
        assert [hit.content for hit in everything] == [passage.content for passage in secret[:10]]
    finally:
        memory.close()
