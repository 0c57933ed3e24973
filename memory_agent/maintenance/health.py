"""Health checks of a storage dir: is SQLite intact, do the search indexes agree with the data?

Three layers, each able to go wrong on its own:
- the SQLite file (`PRAGMA integrity_check`, `PRAGMA foreign_key_check`);
- the FTS5 mirrors of messages and of each agent's passages: FTS5's 'integrity-check' command
  (with rank 1, which also compares the index with its content table) finds an index that has
  drifted from its table, and 'rebuild' repairs it from the table;
- the vector store, which may lag SQLite (passages 'pending') or hold vectors of deleted passages;
  archival reconcile repairs that, and is what `memory-agent doctor` runs.
Every check returns a `Check` instead of raising, so one report can show them all, and each
failure says what `memory-agent doctor --repair` will do about it (or, for a damaged database
file, which SQLite is the truth for and so nothing can rebuild, how to restore it).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..archival import ArchivalMemory
from ..archival.passage_table import (
    agents_with_passages,
    state_counts,
    truncated_count,
    vector_count,
)
from ..archival.reconcile import Progress
from ..conversation.message_vectors import MessageVectors
from ..conversation.recall import pending_vector_count
from ..errors import EncryptionKeyError, MemoryAgentError
from ..privacy.encryption_key import EncryptionKey
from ..privacy.file_modes import loose_entries, tighten
from ..store import cipher, consolidation_log, journal, scrub
from ..store.database import VECTORS_DIRNAME, is_damage, storage_error
from ..store.journal_chain import ChainReport
from ..store.passage_fts import all_fts_tables
from ..store.protocol import Store

__all__ = [
    "FTS_TABLES",
    "Check",
    "CheckStatus",
    "check_archival",
    "check_consolidations",
    "check_file_modes",
    "check_fts",
    "check_journal_chain",
    "check_message_vectors",
    "check_scrub",
    "check_sqlite",
    "first_line",
    "is_orphaned",
    "rebuild_fts",
]

CheckStatus = Literal["ok", "warn", "fail"]
FTS_TABLES: tuple[str, ...] = ("messages_fts", "passages_fts")


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, how it went, and in words what was found or done."""

    name: str
    status: CheckStatus
    detail: str

    @property
    def ok(self) -> bool:
        return self.status != "fail"


_DAMAGED = (
    "the database file itself is damaged; --repair cannot rebuild it, because SQLite is the "
    "source of truth. Restore memory.db from a backup or an export, or salvage its rows with "
    "the sqlite3 shell ('sqlite3 memory.db .recover | sqlite3 recovered.db')"
)


def is_orphaned(path: Path) -> bool:
    """Whether the database is missing or empty while vectors exist beside it (see
    `store.database`)."""
    vectors = path.parent / VECTORS_DIRNAME
    empty = not path.exists() or (path.is_file() and path.stat().st_size == 0)
    return empty and vectors.is_dir() and any(vectors.iterdir())


def check_sqlite(path: Path, encryption_key: EncryptionKey | None = None) -> list[Check]:
    """The database file's own consistency and its foreign keys, read without migrating or
    writing anything, so that it works on a file too damaged to open as a store (an encrypted
    one read with its key)."""
    if is_orphaned(path):
        return [
            Check(
                "sqlite integrity",
                "fail",
                f"{path} is missing or empty while {path.parent / VECTORS_DIRNAME} holds vectors; "
                "--repair moves the vectors aside to a backup and starts an empty database",
            )
        ]
    try:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        try:
            cipher.verify_key(path, encryption_key)
            if encryption_key is not None:
                conn = cipher.connect(uri, encryption_key, timeout=5.0, uri=True)
            else:
                conn = sqlite3.connect(uri, uri=True)
        except EncryptionKeyError as error:
            return [Check("sqlite integrity", "fail", f"cannot be checked: {error}")]
        try:
            problems = [str(row[0]) for row in conn.execute("PRAGMA integrity_check")]
            orphans = conn.execute("PRAGMA foreign_key_check").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as error:
        if is_damage(error):
            return [Check("sqlite integrity", "fail", f"{error}: {_DAMAGED}")]
        return [
            Check("sqlite integrity", "fail", f"cannot be checked: {storage_error(path, error)}")
        ]
    integrity = (
        Check("sqlite integrity", "ok", "ok")
        if problems == ["ok"]
        else Check("sqlite integrity", "fail", "; ".join(problems[:3]) + f": {_DAMAGED}")
    )
    keys = (
        Check("foreign keys", "ok", "every reference resolves")
        if not orphans
        else Check(
            "foreign keys", "fail", f"{len(orphans)} row(s) reference missing rows: {_DAMAGED}"
        )
    )
    return [integrity, keys]


def check_fts(db: Store) -> list[Check]:
    """Each FTS5 index against its content ('passages_fts': every agent's passage index)."""
    return [_check_one_fts(db, name) for name in FTS_TABLES]


def _physical_tables(db: Store, name: str) -> list[str]:
    """The FTS5 tables behind a name of FTS_TABLES (one per agent for 'passages_fts')."""
    if name != "passages_fts":
        return [name]
    with db.reading() as conn:
        return all_fts_tables(conn)


def _check_one_fts(db: Store, name: str) -> Check:
    try:
        tables = _physical_tables(db, name)
        with db.transaction() as conn:
            for table in tables:
                conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    except (sqlite3.DatabaseError, MemoryAgentError) as error:
        return Check(
            f"{name} index",
            "fail",
            f"out of step with its table ({error}); --repair rebuilds it from the table",
        )
    detail = (
        "matches its table"
        if name != "passages_fts"
        else f"{len(tables)} agent index(es) match their passages"
    )
    return Check(f"{name} index", "ok", detail)


def rebuild_fts(db: Store, tables: tuple[str, ...] = FTS_TABLES) -> list[Check]:
    """Rebuild FTS5 indexes from their tables (the repair for a failed FTS check)."""
    physical = [table for name in tables for table in _physical_tables(db, name)]
    with db.transaction() as conn:
        for table in physical:
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")
    return [Check(f"{name} index", "ok", "rebuilt from its table") for name in tables]


def check_archival(
    archival: ArchivalMemory, progress: Progress | None = None, *, full: bool = False
) -> list[Check]:
    """Compare the vector store with SQLite, then reconcile them (every agent's passages).

    A store that cannot be counted, or that refuses the reconcile's writes, is damaged: its
    check says so, and that --repair rebuilds it (see `archival.rebuild`).
    """
    with archival.db.reading() as conn:
        counts = state_counts(conn)
        expected = vector_count(conn)
        agents = agents_with_passages(conn)
    where = archival.config.location
    passages = counts["indexed"] + counts["pending"]
    rebuild = (
        f"--repair moves the vector store aside to a backup and re-embeds all {passages} passages"
        if archival.config.host is None
        else f"--repair drops the server's collections and re-embeds all {passages} passages"
    )
    try:
        store = archival.index.store
        vectors = sum(store.count(agent_id) for agent_id in agents | store.agents())
    except Exception as error:  # any failure to open or count the store is the finding
        return [
            Check(
                "vector store",
                "fail",
                f"cannot read the vectors at {where} "
                f"({type(error).__name__}: {first_line(error)}); {rebuild}",
            )
        ]
    agree = vectors == expected and not counts["pending"]
    found = Check(
        "vectors vs passages",
        "ok" if agree else "warn",
        f"{passages} passages in the database ({counts['pending']} waiting for vectors), "
        f"{vectors} vectors at {where} ({expected} expected: long passages have one per chunk)",
    )
    report = archival.reconcile(None, progress, full=full)
    done = (
        f"wrote {report.embedded} vectors ({report.missing_vectors} had gone missing), removed "
        f"{report.removed_vectors} orphan vectors, {report.still_pending} passages still pending"
    )
    if report.errors:
        done += "; errors: " + "; ".join(first_line(e) for e in report.errors[:3]) + f"; {rebuild}"
    return [
        found,
        Check("archival reconcile", "ok" if report.ok else "fail", done),
        check_whole_passages(archival),
    ]


def check_message_vectors(vectors: MessageVectors, repair: bool, *, full: bool = False) -> Check:
    """Messages without vectors for conversation search; `repair` writes them (and with `full`,
    compares every agent's ids, re-embedding lost vectors and removing orphans)."""
    with vectors.database.reading() as conn:
        pending = pending_vector_count(conn, None)
    if not repair:
        if not pending:
            return Check("message vectors", "ok", "every message has its vectors")
        # Not a fault: vectors are written once search by meaning is in use (message_vectors).
        return Check(
            "message vectors",
            "ok",
            f"{pending} messages have no vectors yet: the first conversation search by meaning "
            "writes the newest, the agent the rest after its turns; --repair writes them all now",
        )
    report = vectors.reconcile(None, full=full)
    detail = (
        f"wrote vectors of {report.embedded} messages ({report.missing_vectors} had gone "
        f"missing), removed {report.removed_vectors} orphan vectors, {report.still_pending} "
        "messages still without"
    )
    if report.errors:
        detail += "; errors: " + "; ".join(first_line(e) for e in report.errors[:3])
    return Check("message vectors", "ok" if report.ok else "fail", detail)


def check_whole_passages(archival: ArchivalMemory) -> Check:
    """Passages embedded from their first window only, before whole-passage (chunked) vectors."""
    with archival.db.reading() as conn:
        truncated = truncated_count(conn)
    if not truncated:
        return Check(
            "whole passages embedded", "ok", "every passage's vectors cover all of its text"
        )
    return Check(
        "whole passages embedded",
        "warn",
        f"{truncated} passages stored before whole-passage embedding may be embedded from their "
        "first 256 word-pieces only; --repair re-embeds them whole",
    )


def check_file_modes(directory: Path, repair: bool = False) -> list[Check]:
    """Whether the storage dir and everything in it are the owner's alone (0700 / 0600); with
    `repair`, group and other permissions are removed first."""
    if repair:
        changed = tighten(directory)
        if changed and not loose_entries(directory):
            return [
                Check(
                    "file modes",
                    "ok",
                    f"made {len(changed)} entr{'y' if len(changed) == 1 else 'ies'} "
                    "owner-only (the storage dir 0700, its files 0600)",
                )
            ]
    loose = loose_entries(directory)
    if not loose:
        return [Check("file modes", "ok", "the storage dir and its files are the owner's alone")]
    shown = ", ".join(f"{path} ({mode:04o})" for path, mode in loose[:3]) + (
        ", ..." if len(loose) > 3 else ""
    )
    return [
        Check(
            "file modes",
            "fail",
            f"{len(loose)} entr{'y' if len(loose) == 1 else 'ies'} other local users "
            f"may read or change: {shown}; --repair makes the storage dir 0700 and its files 0600",
        )
    ]


def first_line(error: object) -> str:
    """The first line of an error's message, at most 300 characters (one line of a report)."""
    text = str(error).strip()
    return (text.splitlines() or [""])[0][:300]


def check_consolidations(db: Store) -> list[Check]:
    """Each agent's last successful and last failed consolidation (either backend). A failure newer
    than the last success is a warning: consolidation is not keeping that agent's memory tidy."""
    with db.reading() as conn:
        completed = consolidation_log.latest_by_status(conn, "completed")
        failed = consolidation_log.latest_by_status(conn, "failed")
    checks = []
    for agent_id in sorted(set(completed) | set(failed)):
        success, failure = completed.get(agent_id), failed.get(agent_id)
        parts = [
            f"last success {success.started_at[:16]} ({success.session_id})"
            if success
            else "no success yet"
        ]
        if failure is not None:
            parts.append(
                f"last failure {failure.started_at[:16]} ({failure.session_id}): {failure.failure}"
            )
        failing = failure is not None and (
            success is None or failure.started_at > success.started_at
        )
        checks.append(
            Check(f"consolidation of {agent_id}", "warn" if failing else "ok", "; ".join(parts))
        )
    return checks


def check_journal_chain(db: Store) -> tuple[Check, ChainReport]:
    """Walk the journal's hash chain (either backend); a failure names the first broken entry.

    Nothing can repair it: an edited, removed or inserted entry is what the chain exists to show.
    Entries from before it and the entries after it stay readable; restore from a backup to undo."""
    with db.reading() as conn:
        report = journal.verify_chain(conn)
    if report.ok:
        detail = f"{report.entries} entries chained"
        if report.forgotten:
            detail += f" ({report.forgotten} forgotten: values erased, hashes kept)"
        return Check("journal chain", "ok", detail), report
    return Check(
        "journal chain",
        "fail",
        f"broken at entry {report.first_broken}: {report.reason}. The journal was changed outside "
        "memory-agent; --repair cannot undo that. Compare with a backup or an export to see what "
        "changed",
    ), report


def check_scrub(db: Store, repair: bool, wait_s: float) -> Check:
    """Whether a forget left bytes behind (older transactions were open, `store.scrub`); with
    `repair`, scrub again (waiting up to `wait_s` for whatever still holds them)."""
    name = "forgotten bytes"
    since = scrub.pending_since(db)
    if since is None:
        return Check(name, "ok", "every forget removed its bytes from the database's files")
    if not repair:
        return Check(
            name,
            "fail",
            f"a forget at {since} could not remove every byte from the database's files "
            "(transactions older than it were open); --repair rewrites the tables again once "
            "they have ended",
        )
    outcome = scrub.scrub(db, wait_s=wait_s)
    if outcome.complete:
        return Check(name, "ok", f"finished the forget of {since}: the tables were rewritten")
    return Check(name, "fail", "; ".join(outcome.warnings))
