"""Each agent's own FTS5 index of its passages, so that its keyword ranking is its own.

FTS5's bm25 weighs a word by how many rows of the *table* hold it and normalises by the table's
average row length. With one table for every agent of a storage dir, one agent's ranking moved
whenever another agent stored passages (measured on LoCoMo: three conversations as agents of one
dir ranked differently from each on its own). So each agent that has passages gets its own FTS5
table, `passages_fts_<n>`, an external-content index over a view of that agent's rows
(`agent_passages_<n>`); the registry `passage_fts_tables` maps agents to `n`. Because the content
is a view of exactly the agent's passages, FTS5's own 'integrity-check' and 'rebuild' work on it.

A trigger cannot pick its table per row. Inserts are indexed by the passage writers, which call
`index_rows` in the same transaction as the insert (no trigger runs on the insert path, which
bulk imports take). Deletes are caught by one trigger per agent (`WHEN old.agent_id = ...`), so
a passage deleted any way (by id, by cascade, by hand) leaves its agent's index too; deleting an
agent calls `drop_agent_index` first, so its cascade runs no trigger of its own. The price is
one `WHEN` test per agent with passages on every passage delete: about 1 ms per delete with
1,000 such agents (measured on 2 busy cores), nothing on inserts or searches.

What is indexed of a passage is its text followed by its ranking-only context (`index_context`,
docs/context-at-index-time.md); the view and the delete trigger compute the same expression, so
FTS5 removes exactly the words it added. A passage without context is indexed as its text alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .dialect import by_engine
from .protocol import Connection

__all__ = [
    "REGISTRY_TABLE",
    "RowIndexer",
    "agent_fts_table",
    "agent_indexer",
    "all_fts_tables",
    "drop_agent_index",
    "ensure_agent_index",
    "index_rows",
    "indexed_sql",
    "optimize_all",
]

REGISTRY_TABLE = "passage_fts_tables"
TOKENIZER = "porter unicode61 remove_diacritics 2"

RowIndexer = Callable[[Sequence[tuple[int, str]]], None]
"""Adds (passage_rowid, indexed text) rows of one agent to its index (see `agent_indexer`)."""


def _names(fts_id: int) -> tuple[str, str, str]:
    """The agent's FTS5 table, its content view and its delete trigger."""
    return f"passages_fts_{fts_id}", f"agent_passages_{fts_id}", f"passages_fts_{fts_id}_on_delete"


def indexed_sql(row: str) -> str:
    """The SQL of what the index holds for a passage row (`row` is a table alias, `old` or `new`):
    as `archival.passages.indexed_text`, text then context."""
    return (
        f"CASE WHEN {row}.index_context = '' THEN {row}.content ELSE {row}.content || ' ' || "
        f"{row}.index_context END"
    )


def _indexed_expression(conn: Connection, row: str) -> str:
    """`indexed_sql`, or the text alone while an older migration runs before the context column
    exists."""
    columns = {column[1] for column in conn.execute("PRAGMA table_info(passages)")}
    return indexed_sql(row) if "index_context" in columns else f"{row}.content"


def _sql_text(value: str) -> str:
    """A string literal (a view's WHERE cannot take a bound parameter)."""
    return "'" + value.replace("'", "''") + "'"


class _PassageIndex(Protocol):
    """The upkeep of an engine's keyword index of passages (one implementation per engine)."""

    def table(self, conn: Connection, agent_id: str) -> str | None: ...

    def tables(self, conn: Connection) -> list[str]: ...

    def add(self, conn: Connection, agent_id: str, rows: Sequence[tuple[int, str]]) -> None: ...

    def indexer(self, conn: Connection, agent_id: str) -> RowIndexer: ...

    def drop(self, conn: Connection, agent_id: str) -> None: ...

    def optimize(self, conn: Connection) -> None: ...


class _Fts5PerAgent(_PassageIndex):
    """SQLite: each agent's own FTS5 table (see the module's docstring)."""

    def table(self, conn: Connection, agent_id: str) -> str | None:
        row = conn.execute(
            f"SELECT fts_id FROM {REGISTRY_TABLE} WHERE agent_id = ?", (agent_id,)
        ).fetchone()
        return None if row is None else _names(int(row[0]))[0]

    def tables(self, conn: Connection) -> list[str]:
        return [
            _names(int(row[0]))[0]
            for row in conn.execute(f"SELECT fts_id FROM {REGISTRY_TABLE} ORDER BY fts_id")
        ]

    def add(self, conn: Connection, agent_id: str, rows: Sequence[tuple[int, str]]) -> None:
        self.indexer(conn, agent_id)(rows)

    def indexer(self, conn: Connection, agent_id: str) -> RowIndexer:
        found: list[str] = []  # the agent's table, looked up (or created) at the first rows

        def index(rows: Sequence[tuple[int, str]]) -> None:
            if not found:
                found.append(ensure_agent_index(conn, agent_id))
            conn.executemany(f"INSERT INTO {found[0]} (rowid, content) VALUES (?, ?)", rows)

        return index

    def drop(self, conn: Connection, agent_id: str) -> None:
        row = conn.execute(
            f"SELECT fts_id FROM {REGISTRY_TABLE} WHERE agent_id = ?", (agent_id,)
        ).fetchone()
        if row is not None:
            _drop(conn, int(row[0]))
            conn.execute(f"DELETE FROM {REGISTRY_TABLE} WHERE agent_id = ?", (agent_id,))

    def optimize(self, conn: Connection) -> None:
        for table in ("messages_fts", *self.tables(conn)):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")


class _GeneratedColumn(_PassageIndex):
    """PostgreSQL: the index is a generated column of `passages` with a GIN index (see
    `pg_fulltext`); the database derives it from the row, so there is nothing to keep up."""

    def table(self, conn: Connection, agent_id: str) -> str | None:
        return None

    def tables(self, conn: Connection) -> list[str]:
        return []

    def add(self, conn: Connection, agent_id: str, rows: Sequence[tuple[int, str]]) -> None:
        return None

    def indexer(self, conn: Connection, agent_id: str) -> RowIndexer:
        return _nothing_to_add

    def drop(self, conn: Connection, agent_id: str) -> None:
        return None

    def optimize(self, conn: Connection) -> None:
        return None  # VACUUM FULL rebuilds the GIN index


def _nothing_to_add(rows: Sequence[tuple[int, str]]) -> None:
    return None


_FTS5 = _Fts5PerAgent()
_GENERATED = _GeneratedColumn()


def _index(conn: Connection) -> _PassageIndex:
    return by_engine(conn, sqlite=_FTS5, postgresql=_GENERATED)


def agent_fts_table(conn: Connection, agent_id: str) -> str | None:
    """The name of the agent's FTS5 table, or None when the agent has never had passages (always
    None on PostgreSQL)."""
    return _index(conn).table(conn, agent_id)


def all_fts_tables(conn: Connection) -> list[str]:
    """Every agent's FTS5 table, in registry order (for health checks and repairs)."""
    return _index(conn).tables(conn)


def ensure_agent_index(conn: Connection, agent_id: str) -> str:
    """The agent's FTS5 table, created (empty) with its content view if it does not exist yet."""
    existing = agent_fts_table(conn, agent_id)
    if existing is not None:
        return existing
    fts_id = int(
        conn.execute(f"SELECT COALESCE(MAX(fts_id), 0) + 1 FROM {REGISTRY_TABLE}").fetchone()[0]
    )
    table, view, trigger = _names(fts_id)
    _drop(conn, fts_id)  # what an agent deleted outside `drop_agent_index` left behind
    agent = _sql_text(agent_id)
    conn.execute(
        f"CREATE VIEW {view} AS SELECT p.passage_rowid, {_indexed_expression(conn, 'p')} AS content"
        f" FROM passages p WHERE p.agent_id = {agent}"
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE {table} USING fts5(content, content='{view}', "
        "content_rowid='passage_rowid',"
        f" tokenize='{TOKENIZER}')"
    )
    conn.execute(
        f"CREATE TRIGGER {trigger} AFTER DELETE ON passages WHEN old.agent_id = {agent} BEGIN"
        f" INSERT INTO {table} ({table}, rowid, content) VALUES ('delete', old.passage_rowid,"
        f" {_indexed_expression(conn, 'old')}); END"
    )
    conn.execute(
        f"INSERT INTO {REGISTRY_TABLE} (agent_id, fts_id) VALUES (?, ?)", (agent_id, fts_id)
    )
    return table


def index_rows(conn: Connection, agent_id: str, rows: Sequence[tuple[int, str]]) -> None:
    """Add (passage_rowid, indexed text) rows of the agent to its index (creating the index if
    needed).

    On PostgreSQL the database derives the index from the row itself: nothing to add."""
    if rows:
        _index(conn).add(conn, agent_id, rows)


def agent_indexer(conn: Connection, agent_id: str) -> RowIndexer:
    """`index_rows` for one agent, for a writer of many rows in one transaction: on SQLite the
    agent's table is looked up (or created) at its first rows, not again for every row. Use it
    only inside the transaction it was made in (nothing else drops an agent's index meanwhile)."""
    return _index(conn).indexer(conn, agent_id)


def drop_agent_index(conn: Connection, agent_id: str) -> None:
    """Drop the agent's index, view, trigger and registry row (before the agent is deleted)."""
    _index(conn).drop(conn, agent_id)


def _drop(conn: Connection, fts_id: int) -> None:
    table, view, trigger = _names(fts_id)
    conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"DROP VIEW IF EXISTS {view}")


def optimize_all(conn: Connection) -> None:
    """Merge every FTS5 index (messages' and each agent's passages') into one segment.

    Forgetting needs it: an FTS5 'delete' only adds a tombstone, and the deleted row's words stay in
    the older segment pages until a merge rewrites them; 'optimize' rewrites all of them now, and
    the VACUUM that follows drops the freed pages. Nothing to do on PostgreSQL (a GIN index over a
    generated column: VACUUM FULL rebuilds it)."""
    _index(conn).optimize(conn)
