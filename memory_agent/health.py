"""Health checks of a storage dir: is SQLite intact, do the search indexes agree with the data?

Three layers, each able to go wrong on its own:
- the SQLite file (`PRAGMA integrity_check`, `PRAGMA foreign_key_check`);
- the FTS5 mirrors of messages and of each agent's passages: FTS5's 'integrity-check' command
  (with rank 1, which also compares the index with its content table) finds an index that has
  drifted from its table, and 'rebuild' repairs it from the table;
- the vector store, which may lag SQLite (passages 'pending') or hold vectors of deleted passages;
  archival reconcile repairs that, and is what `memory-agent doctor` runs.
Every check returns a `Check` instead of raising, so one report can show them all.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Literal

from .archival import ArchivalMemory
from .archival.passage_table import agents_with_passages, state_counts
from .archival.reconcile import Progress
from .errors import MemoryAgentError
from .store.database import Database
from .store.passage_fts import all_fts_tables

__all__ = ["FTS_TABLES", "Check", "CheckStatus", "check_archival", "check_fts", "check_sqlite", "rebuild_fts"]

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


def check_sqlite(db: Database) -> list[Check]:
    """The database file's own consistency and its foreign keys."""
    with db.reading() as conn:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        orphans = conn.execute("PRAGMA foreign_key_check").fetchall()
    integrity = (Check("sqlite integrity", "ok", "ok") if problems == ["ok"]
                 else Check("sqlite integrity", "fail", "; ".join(problems[:5])))
    keys = (Check("foreign keys", "ok", "every reference resolves") if not orphans
            else Check("foreign keys", "fail", f"{len(orphans)} row(s) reference missing rows"))
    return [integrity, keys]


def check_fts(db: Database) -> list[Check]:
    """Each FTS5 index against its content ('passages_fts': every agent's passage index)."""
    return [_check_one_fts(db, name) for name in FTS_TABLES]


def _physical_tables(db: Database, name: str) -> list[str]:
    """The FTS5 tables behind a name of FTS_TABLES (one per agent for 'passages_fts')."""
    if name != "passages_fts":
        return [name]
    with db.reading() as conn:
        return all_fts_tables(conn)


def _check_one_fts(db: Database, name: str) -> Check:
    tables = _physical_tables(db, name)
    try:
        with db.transaction() as conn:
            for table in tables:
                conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as error:
        return Check(f"{name} index", "fail",
                     f"out of step with its table ({error}); run 'memory-agent doctor --repair'")
    except MemoryAgentError as error:
        return Check(f"{name} index", "fail", str(error))
    detail = "matches its table" if name != "passages_fts" else f"{len(tables)} agent index(es) match their passages"
    return Check(f"{name} index", "ok", detail)


def rebuild_fts(db: Database, tables: tuple[str, ...] = FTS_TABLES) -> list[Check]:
    """Rebuild FTS5 indexes from their tables (the repair for a failed FTS check)."""
    physical = [table for name in tables for table in _physical_tables(db, name)]
    with db.transaction() as conn:
        for table in physical:
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")
    return [Check(f"{name} index", "ok", "rebuilt from its table") for name in tables]


def check_archival(archival: ArchivalMemory, progress: Progress | None = None, *,
                   full: bool = False) -> list[Check]:
    """Compare the vector store with SQLite, then reconcile them (every agent's passages)."""
    with archival.db.reading() as conn:
        counts = state_counts(conn)
        agents = agents_with_passages(conn)
    where = archival.config.location
    try:
        store = archival.index.store
        vectors = sum(store.count(agent_id) for agent_id in agents | store.agents())
    except Exception as error:  # any failure to open or count the store is the finding
        return [Check("vector store", "fail", f"cannot count the vectors at {where}: {error}")]
    passages = counts["indexed"] + counts["pending"]
    agree = vectors == counts["indexed"] and not counts["pending"]
    found = Check("vectors vs passages", "ok" if agree else "warn",
                  f"{passages} passages in SQLite ({counts['pending']} waiting for vectors), "
                  f"{vectors} vectors at {where}")
    report = archival.reconcile(None, progress, full=full)
    done = (f"wrote {report.embedded} vectors ({report.missing_vectors} had gone missing), removed "
            f"{report.removed_vectors} orphan vectors, {report.still_pending} passages still pending")
    if report.errors:
        done += "; errors: " + "; ".join(report.errors[:3])
    return [found, Check("archival reconcile", "ok" if report.ok else "fail", done)]
