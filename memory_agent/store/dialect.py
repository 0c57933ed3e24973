"""The few places where PostgreSQL's SQL differs from the SQLite the writers are written in.

The store's writers and readers are written once, in SQLite's SQL with `?` placeholders. On
PostgreSQL each statement passes through `translate` on its way to the server, which covers the
differences they use, each in one place:

- `?` placeholders become `%s` (and a literal `%` becomes `%%`, psycopg's escape);
- `INSERT OR IGNORE INTO ...` becomes `INSERT INTO ... ON CONFLICT DO NOTHING`;
- an `INSERT` into a table with a generated key gets `RETURNING <key>`, which is how the
  connection adapter answers `cursor.lastrowid` (PostgreSQL has no last-insert-rowid);
- `length(CAST(x AS BLOB))` (a text's size in UTF-8 bytes) becomes `octet_length(x)`;
- `instr(haystack, needle)` (where a text occurs, 0 if not) becomes `strpos(haystack, needle)`;
- a bare `BEGIN` (a consistent multi-table read, e.g. an export) becomes a REPEATABLE READ
  transaction, which is what SQLite's deferred BEGIN gives: one snapshot for every statement.

Full-text search is not a translation (FTS5 and tsvector are different designs): each engine has
its own implementation of one interface (`store.fts` / `store.pg_fulltext` for messages, the two
in `archival.keyword` for passages), and `by_engine` picks one for a connection: no module above
`store/` asks `is_postgres` itself (`tests/unit/test_architecture.py`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, TypeVar

__all__ = ["GENERATED_KEYS", "by_engine", "is_postgres", "translate"]

T = TypeVar("T")

GENERATED_KEYS: dict[str, str] = {
    "messages": "message_id",
    "summaries": "summary_id",
    "passages": "passage_rowid",
    "journal": "entry_id",
    "block_history": "history_id",
    "session_transcripts": "transcript_id",
    "session_entries": "seq",
}
"""Tables whose key the database generates, and that key (`cursor.lastrowid` reads it)."""

_INSERT = re.compile(r"^\s*INSERT\s+(OR\s+IGNORE\s+)?INTO\s+(\w+)", re.IGNORECASE)
_BYTE_LENGTH = re.compile(r"length\(CAST\(([\w.]+) AS BLOB\)\)", re.IGNORECASE)
_INSTR = re.compile(r"\binstr\(", re.IGNORECASE)
_BARE_BEGIN = re.compile(r"^\s*BEGIN\s*;?\s*$", re.IGNORECASE)


def is_postgres(conn: Any) -> bool:
    """Whether `conn` is the PostgreSQL connection adapter (anything else is sqlite3)."""
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def by_engine(conn: Any, *, sqlite: T, postgresql: T) -> T:
    """Of two implementations of one interface, the one for `conn`'s engine."""
    return postgresql if is_postgres(conn) else sqlite


@lru_cache(maxsize=1024)
def translate(sql: str) -> tuple[str, str | None]:
    """PostgreSQL's text for a statement written for SQLite, and the key column it returns (if
    any)."""
    if _BARE_BEGIN.match(sql):
        return "BEGIN ISOLATION LEVEL REPEATABLE READ", None
    text = _BYTE_LENGTH.sub(r"octet_length(\1)", sql.replace("%", "%%").replace("?", "%s"))
    text = _INSTR.sub("strpos(", text)
    returning: str | None = None
    insert = _INSERT.match(text)
    if insert is not None:
        if insert.group(1):
            text = _INSERT.sub(lambda m: f"INSERT INTO {m.group(2)}", text, count=1)
            text = f"{text.rstrip().rstrip(';')} ON CONFLICT DO NOTHING"
        key = GENERATED_KEYS.get(insert.group(2).lower())
        if key is not None and "RETURNING" not in text.upper():
            text = f"{text.rstrip().rstrip(';')} RETURNING {key}"
            returning = key
    return text, returning
