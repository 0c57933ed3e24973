"""The append-only journal: who changed what, from which value to which, and when.

Writers call `record` inside the same transaction as the change itself, so a change and its
journal entry are committed together or not at all; a writer of many entries in one transaction
(archival `insert_many`) collects them in a `batch`, appended together. Each entry names its
author (who acted, `memory_agent.authors`): the one given, else the one of the innermost
`acting_as`; entries written before authors were recorded have none.

Each entry is hash-chained to the one before (`store.journal_chain`), computed here, the one
writer. The only change the database lets through afterwards is `redact`: forgetting erases an
entry's label, values, detail and salt and marks it forgotten, keeping what the chain covers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from ..authors import AUTHOR_KINDS, Author, acting_author
from ..errors import ConfigurationError
from .dialect import by_engine
from .journal_chain import ChainReport, chain_hash, content_digest, new_salt, verify
from .protocol import Connection

__all__ = [
    "Batch",
    "JournalEntry",
    "batch",
    "entries_about",
    "list_entries",
    "record",
    "redact",
    "verify_chain",
]

CHAIN_LOCK_KEY = 0x6A6F75726E616C  # "journal": PostgreSQL appends to the chain one at a time
REDACTED_DETAIL = "{}"
_DETAIL = json.JSONEncoder(ensure_ascii=False)
"""An entry's detail as stored JSON (made once: `json.dumps` with an option builds one per call)."""


@dataclass(frozen=True)
class JournalEntry:
    entry_id: int
    agent_id: str | None
    action: str
    target_type: str
    target_id: str | None
    label: str | None
    old_value: str | None
    new_value: str | None
    detail: dict[str, Any]
    created_at: str
    author_kind: str | None = None
    author: str | None = None

    @property
    def acted_by(self) -> Author | None:
        """The entry's author, or None for entries written before authors were recorded."""
        return Author.from_columns(self.author_kind, self.author)


def record(
    conn: Connection,
    *,
    agent_id: str | None,
    action: str,
    target_type: str,
    target_id: str | None,
    created_at: str,
    label: str | None = None,
    old_value: str | None = None,
    new_value: str | None = None,
    detail: Mapping[str, Any] | None = None,
    author: Author | None = None,
) -> None:
    """Append one entry; `author` defaults to the current `acting_as` author (None: no author)."""
    entry = Batch(conn)  # a batch of one: the entry is built in one place, `Batch.record`
    entry.record(
        agent_id=agent_id,
        action=action,
        target_type=target_type,
        target_id=target_id,
        created_at=created_at,
        label=label,
        old_value=old_value,
        new_value=new_value,
        detail=detail,
        author=author,
    )
    entry.flush()


class Batch:
    """Entries of one write transaction, appended together (in the order recorded) by `flush`.

    Why: every entry needs the id it gets and the hash of the entry before it, read inside the
    writing transaction; reading them, and sending the row, cost about as much as the rest of
    the entry. A batch reads them once per flush and writes its rows with one statement. Nothing is
    carried between flushes: each reads the chain's head afresh, so an entry another writer
    appended in the meantime (in this transaction; other processes wait for its write lock) is
    linked to, never forked from. A writer that interleaves its own `record` calls flushes first
    to keep the journal in the order things happened. Use it through `batch`, inside the
    transaction it belongs to."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._pending: list[_Entry] = []

    def record(
        self,
        *,
        agent_id: str | None,
        action: str,
        target_type: str,
        target_id: str | None,
        created_at: str,
        label: str | None = None,
        old_value: str | None = None,
        new_value: str | None = None,
        detail: Mapping[str, Any] | None = None,
        author: Author | None = None,
    ) -> None:
        """Add one entry (the arguments are `record`'s; the author is taken now)."""
        who = author if author is not None else acting_author()
        self._pending.append(
            _Entry(
                agent_id,
                action,
                target_type,
                target_id,
                created_at,
                label,
                old_value,
                new_value,
                _DETAIL.encode(dict(detail or {})),
                who.kind if who else None,
                who.name if who else None,
            )
        )

    def flush(self) -> None:
        """Append the entries recorded since the last flush."""
        if self._pending:
            _append(self._conn, self._pending)
            self._pending = []


@contextmanager
def batch(conn: Connection) -> Iterator[Batch]:
    """A `Batch` of this transaction's entries, flushed when the block ends without an error (if
    it raises, the transaction is rolled back and nothing is written)."""
    entries = Batch(conn)
    yield entries
    entries.flush()


@dataclass(frozen=True)
class _Entry:
    """One entry as it will be stored, but for its id and links."""

    agent_id: str | None
    action: str
    target_type: str
    target_id: str | None
    created_at: str
    label: str | None
    old_value: str | None
    new_value: str | None
    detail_text: str
    author_kind: str | None
    author: str | None


def _append(conn: Connection, entries: Sequence[_Entry]) -> None:
    """The one writer of journal rows: links `entries` to the chain's head and to each other, in
    order, and inserts them."""
    entry_ids, previous = _ids(conn).next_links(conn, len(entries))
    rows = []
    for entry_id, entry in zip(entry_ids, entries, strict=True):
        salt = new_salt()
        digest = content_digest(
            salt, entry.label, entry.old_value, entry.new_value, entry.detail_text
        )
        own = chain_hash(
            previous,
            entry_id,
            entry.agent_id,
            entry.action,
            entry.target_type,
            entry.target_id,
            entry.author_kind,
            entry.author,
            entry.created_at,
            digest,
        )
        rows.append(
            (
                entry_id,
                entry.agent_id,
                entry.action,
                entry.target_type,
                entry.target_id,
                entry.label,
                entry.old_value,
                entry.new_value,
                entry.detail_text,
                entry.created_at,
                entry.author_kind,
                entry.author,
                salt,
                digest,
                previous,
                own,
            )
        )
        previous = own
    conn.executemany(
        "INSERT INTO journal (entry_id, agent_id, action, target_type, target_id, label, old_value,"
        " new_value, detail, created_at, author_kind, author, salt, content_digest, prev_hash, "
        "entry_hash)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def redact(conn: Connection, entry_ids: Sequence[int]) -> int:
    """Erase these entries' label, values, detail and salt and mark them forgotten (forgetting
    only).

    The database's trigger refuses every other UPDATE of the journal; this is the one it allows.
    Entries already forgotten are left as they are. Returns how many were redacted now."""
    done = 0
    for chunk in _chunks(sorted(set(entry_ids)), 500):
        marks = ", ".join("?" for _ in chunk)
        cursor = conn.execute(
            "UPDATE journal SET label = NULL, old_value = NULL, new_value = NULL, detail = ?, salt "
            "= NULL,"
            f" forgotten = 1 WHERE forgotten = 0 AND entry_id IN ({marks})",
            (REDACTED_DETAIL, *chunk),
        )
        done += max(cursor.rowcount, 0)
    return done


def entries_about(
    conn: Connection,
    *,
    targets: Sequence[tuple[str, str]] = (),
    agent_id: str | None = None,
    texts: Sequence[str] = (),
    text_agents: Sequence[str] = (),
) -> set[int]:
    """Ids of entries not yet forgotten that are about any (target_type, target_id), belong to
    `agent_id`, or hold any of `texts` in their label, values or detail (the detail as stored JSON,
    so a text is also looked for in its JSON-escaped form; only in the entries of `text_agents`, or
    of no agent, when given: another agent's history is not this forget's). The records of earlier
    forgets are never among them: they hold no content, and their counts are what shows a forgotten
    mark is
    genuine."""
    found: set[int] = set()
    for target_type, target_id in targets:
        found.update(
            int(r[0])
            for r in conn.execute(
                "SELECT entry_id FROM journal WHERE forgotten = 0 AND action != 'forget' AND "
                "target_type = ?"
                " AND target_id = ?",
                (target_type, target_id),
            )
        )
    if agent_id is not None:
        found.update(
            int(r[0])
            for r in conn.execute(
                "SELECT entry_id FROM journal WHERE forgotten = 0 AND action != 'forget' AND "
                "agent_id = ?",
                (agent_id,),
            )
        )
    scope = ""
    if text_agents:
        scope = f" AND (agent_id IS NULL OR agent_id IN ({', '.join('?' for _ in text_agents)}))"
    for text in texts:
        for form in {text, json.dumps(text, ensure_ascii=False)[1:-1]}:
            found.update(
                int(r[0])
                for r in conn.execute(
                    "SELECT entry_id FROM journal WHERE forgotten = 0 AND action != 'forget'"
                    " AND (instr(old_value, ?) > 0"
                    " OR instr(new_value, ?) > 0 OR instr(detail, ?) > 0 OR instr(label, ?) > "
                    f"0){scope}",
                    (form, form, form, form, *text_agents),
                )
            )
    return found


def verify_chain(conn: Connection) -> ChainReport:
    """Walk the whole journal in entry order (see `journal_chain.verify`)."""
    rows = conn.execute(
        "SELECT entry_id, agent_id, action, target_type, target_id, label, old_value, new_value, "
        "detail,"
        " created_at, author_kind, author, salt, content_digest, prev_hash, entry_hash, forgotten"
        " FROM journal ORDER BY entry_id"
    )
    report = verify(rows)
    return report if not report.ok else _check_tail(conn, report)


def _check_tail(conn: Connection, report: ChainReport) -> ChainReport:
    """The chain cannot show its newest entries removed (nothing links to them). On SQLite the
    AUTOINCREMENT counter remembers the highest id ever written, and a rolled-back write takes its
    id back, so a counter above the last entry means entries were removed from the end. PostgreSQL's
    identity sequence keeps ids a rolled-back write used, so there a gap proves nothing."""
    given = _ids(conn).highest_given(conn)
    if given is None:
        return report
    last = conn.execute("SELECT MAX(entry_id) FROM journal").fetchone()[0] or 0
    if given <= int(last):
        return report
    return ChainReport(
        report.entries,
        report.forgotten,
        int(last) + 1,
        f"entries {int(last) + 1} to {given} were removed from the end of the journal",
    )


class _EntryIds(Protocol):
    """How an engine hands out journal entry ids (one implementation per engine)."""

    def next_links(self, conn: Connection, count: int) -> tuple[list[int], str | None]:
        """The ids the next `count` entries get, in order, and the hash the first links to.

        Both come from inside the write transaction: SQLite's write lock, and on PostgreSQL the
        chain's own advisory lock (besides the store's write lock), keep two writers from linking
        to the same entry, so the chain never forks. Ids are taken, not left to the database,
        because the hash covers the id."""
        ...

    def highest_given(self, conn: Connection) -> int | None:
        """The highest id ever handed out, or None when the engine's count proves nothing about
        removed entries (see `_check_tail`)."""
        ...


class _SqliteEntryIds(_EntryIds):
    """SQLite's AUTOINCREMENT counter: it remembers the highest id, and a rollback takes it back.
    The counter, the highest id and the newest entry's hash are read in one statement."""

    def next_links(self, conn: Connection, count: int) -> tuple[list[int], str | None]:
        given, highest, last = conn.execute(
            "SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'journal'),"
            " (SELECT MAX(entry_id) FROM journal),"
            " (SELECT entry_hash FROM journal ORDER BY entry_id DESC LIMIT 1)"
        ).fetchone()
        first = max(int(given or 0), int(highest or 0)) + 1
        return list(range(first, first + count)), last

    def highest_given(self, conn: Connection) -> int | None:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'journal'").fetchone()
        return None if row is None else int(row[0])


class _PostgresEntryIds(_EntryIds):
    """PostgreSQL's identity sequence, drawn under the chain's own advisory lock (taken in a
    statement of its own, so that the head read after it sees every entry committed before the
    lock was granted)."""

    def next_links(self, conn: Connection, count: int) -> tuple[list[int], str | None]:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (CHAIN_LOCK_KEY,))
        ids = sorted(
            int(row[0])
            for row in conn.execute(
                "SELECT nextval(pg_get_serial_sequence('journal', 'entry_id'))"
                " FROM generate_series(1, ?)",
                (count,),
            )
        )
        last = conn.execute(
            "SELECT entry_hash FROM journal ORDER BY entry_id DESC LIMIT 1"
        ).fetchone()
        return ids, (last[0] if last else None)

    def highest_given(self, conn: Connection) -> int | None:
        return None  # the sequence keeps the ids of rolled-back writes too


_SQLITE_IDS = _SqliteEntryIds()
_POSTGRES_IDS = _PostgresEntryIds()


def _ids(conn: Connection) -> _EntryIds:
    return by_engine(conn, sqlite=_SQLITE_IDS, postgresql=_POSTGRES_IDS)


def _chunks(items: Sequence[int], size: int) -> list[Sequence[int]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def list_entries(
    conn: Connection,
    *,
    agent_id: str | None = None,
    target_type: str | None = None,
    target_id: str | None = None,
    author_kind: str | None = None,
    limit: int = 100,
) -> list[JournalEntry]:
    """Newest first, filtered by whichever of agent, target type, target id and author kind are
    given."""
    if author_kind is not None and author_kind not in AUTHOR_KINDS:
        raise ConfigurationError(
            f"An author kind is one of {', '.join(AUTHOR_KINDS)}; got {author_kind!r}."
        )
    clauses, params = [], []
    for column, value in (
        ("agent_id", agent_id),
        ("target_type", target_type),
        ("target_id", target_id),
        ("author_kind", author_kind),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(
        f"SELECT * FROM journal {where} ORDER BY entry_id DESC LIMIT ?", (*params, limit)
    ).fetchall()
    return [
        JournalEntry(
            entry_id=row["entry_id"],
            agent_id=row["agent_id"],
            action=row["action"],
            target_type=row["target_type"],
            target_id=row["target_id"],
            label=row["label"],
            old_value=row["old_value"],
            new_value=row["new_value"],
            detail=json.loads(row["detail"]),
            created_at=row["created_at"],
            author_kind=row["author_kind"],
            author=row["author"],
        )
        for row in rows
    ]
