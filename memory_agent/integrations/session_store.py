"""A SQLite `SessionStore`: the SDK mirrors every session transcript into memory.db.

With `ClaudeAgentOptions(session_store=SQLiteSessionStore(db))` the Claude Code CLI still writes
its JSONL transcript under `CLAUDE_CONFIG_DIR`, and the SDK also hands each line to `append()`
(batched, flushed before each `ResultMessage` is yielded). `resume=<session id>` then works on
any machine or process that opens the same database: the SDK `load()`s the transcript into a
temporary config dir and the CLI resumes from it.

What is stored (tables from migration m003):

* `session_transcripts`: one row per transcript, keyed by the SDK's `project_key` (by default
  the sanitised cwd), `session_id` and `subpath` ('' for the main transcript, e.g.
  `subagents/agent-<id>` for a subagent), with `mtime`, the epoch-ms time of its last write.
* `session_entries`: the transcript lines as JSON, in commit order (`seq`). A line's `uuid` is
  its idempotency key (a retried batch updates the line in place, keeping its position, as the
  CLI's own reader does: last write wins); lines without a uuid are always appended.
* `session_summaries`: the SDK's summary sidecar for each main transcript, folded with
  `fold_session_summary` inside the same write transaction and persisted verbatim.

`mtime` is strictly increasing across every write to the database (`max(now, last + 1)` taken
under the write lock), so the summary and `list_sessions()` share one clock and two processes
never report the same time for successive writes.

Writes run inline: a turn's batch commits in about a millisecond, and running it on the caller's
thread keeps the protocol's "persist in append-call order" promise without extra locking. Reads
run in a worker thread: loading a 2,000-line transcript takes about 40 ms, which would stall the
event loop, and a blocking call could not be interrupted by the SDK's `load_timeout_ms`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
from claude_agent_sdk import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
    fold_session_summary,
)

from ..errors import ConfigurationError
from ..privacy.encryption_key import EncryptionKey
from ..store.backend import open_store
from ..store.database import DATABASE_FILENAME
from ..store.protocol import Connection, Store

if TYPE_CHECKING:
    from ..manager import MemoryManager

__all__ = ["DATABASE_FILENAME", "SQLiteSessionStore"]


MAIN_SUBPATH = ""
"""How the main transcript's (absent) subpath is stored."""

_T = TypeVar("_T")


class SQLiteSessionStore(SessionStore):
    """The SDK's `SessionStore` protocol on one SQLite database (every optional method included).

    Safe to share between tasks and threads of one process; other processes open their own
    `Database` on the same file and see each write as soon as it commits.

    Args:
        db: The database to store transcripts in; its migrations create the tables.
    """

    def __init__(self, db: Store) -> None:
        self.db = db
        self._owns_db = False

    @classmethod
    def for_memory(cls, memory: MemoryManager) -> SQLiteSessionStore:
        """The store in the database of `memory`'s storage dir, sharing its connection (the
        manager keeps it open; closing this store leaves it open). The session tables are this
        store's own: the one module above the manager that takes `MemoryManager.database`."""
        return cls(memory.database)

    @classmethod
    def open(
        cls,
        storage_dir: str | Path,
        database_url: str | None = None,
        *,
        encryption_key: EncryptionKey | None = None,
    ) -> SQLiteSessionStore:
        """Open (creating and migrating if needed) `memory.db` in `storage_dir`, or the
        PostgreSQL server at `database_url` (then transcripts are shared by every host using it).

        The store owns that database: `close()` closes it.
        """
        store = cls(open_store(Path(storage_dir), database_url, encryption_key=encryption_key))
        store._owns_db = True
        return store

    def close(self) -> None:
        """Close the database if `open()` created it; a passed-in `Database` stays open."""
        if self._owns_db:
            self.db.close()

    def __enter__(self) -> SQLiteSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the SessionStore protocol ---------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Add a batch of transcript lines in one transaction; `[]` writes nothing."""
        if not entries:
            return
        subpath = _subpath_of(key)
        rows = [(_uuid_of(entry), _encode(entry)) for entry in entries]
        with self.db.transaction() as conn:
            mtime = _next_mtime(conn)
            transcript_id = _touch_transcript(conn, key, subpath, mtime)
            conn.executemany(
                "INSERT INTO session_entries (transcript_id, uuid, entry) VALUES (?, ?, ?) "
                "ON CONFLICT (transcript_id, uuid) DO UPDATE SET entry = excluded.entry",
                [(transcript_id, uuid, text) for uuid, text in rows],
            )
            if subpath == MAIN_SUBPATH:
                # Subagent lines must not shape the main session's summary (SDK contract).
                _fold_summary(conn, transcript_id, key, entries, mtime)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Every line of one transcript in commit order, or None if it was never written."""
        subpath = _subpath_of(key)
        return await self._read(self._load, key["project_key"], key["session_id"], subpath)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """Main transcripts of a project with their last write time (epoch ms), unordered."""
        return await self._read(self._list_sessions, project_key)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The summary sidecar of every main transcript in a project, as persisted."""
        return await self._read(self._list_summaries, project_key)

    async def delete(self, key: SessionKey) -> None:
        """Delete one transcript; a main-transcript key also deletes its subagent transcripts."""
        subpath = key.get("subpath")
        with self.db.transaction() as conn:
            if subpath is None:
                conn.execute(
                    "DELETE FROM session_transcripts WHERE project_key = ? AND session_id = ?",
                    (key["project_key"], key["session_id"]),
                )
            else:
                conn.execute(
                    "DELETE FROM session_transcripts "
                    "WHERE project_key = ? AND session_id = ? AND subpath = ?",
                    (key["project_key"], key["session_id"], _subpath_of(key)),
                )

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """Subpaths (subagent transcripts) stored under a session, sorted."""
        return await self._read(self._list_subkeys, key["project_key"], key["session_id"])

    # -- reads (run in a worker thread) ----------------------------------------------------

    def has_session(self, project_key: str, session_id: str) -> bool:
        """Whether the main transcript of a session is stored (cheap: no entries are read)."""
        with self.db.reading() as conn:
            return (
                conn.execute(
                    "SELECT 1 FROM session_transcripts WHERE project_key = ? AND session_id = ? "
                    "AND subpath = ?",
                    (project_key, session_id, MAIN_SUBPATH),
                ).fetchone()
                is not None
            )

    async def _read(self, function: Callable[..., _T], *args: Any) -> _T:
        # abandon_on_cancel: a timed-out load returns at once; the read finishes unobserved.
        return await anyio.to_thread.run_sync(function, *args, abandon_on_cancel=True)

    def _load(self, project_key: str, session_id: str, subpath: str) -> list[Any] | None:
        with self.db.reading() as conn:
            found = conn.execute(
                "SELECT transcript_id FROM session_transcripts "
                "WHERE project_key = ? AND session_id = ? AND subpath = ?",
                (project_key, session_id, subpath),
            ).fetchone()
            if found is None:
                return None
            texts = conn.execute(
                "SELECT entry FROM session_entries WHERE transcript_id = ? ORDER BY seq",
                (found[0],),
            ).fetchall()
        return [json.loads(row[0]) for row in texts]

    def _list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        with self.db.reading() as conn:
            rows = conn.execute(
                "SELECT session_id, mtime FROM session_transcripts "
                "WHERE project_key = ? AND subpath = ?",
                (project_key, MAIN_SUBPATH),
            ).fetchall()
        return [{"session_id": row[0], "mtime": row[1]} for row in rows]

    def _list_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        with self.db.reading() as conn:
            rows = conn.execute(
                "SELECT t.session_id, s.mtime, s.data FROM session_summaries AS s "
                "JOIN session_transcripts AS t USING (transcript_id) WHERE t.project_key = ?",
                (project_key,),
            ).fetchall()
        return [{"session_id": row[0], "mtime": row[1], "data": json.loads(row[2])} for row in rows]

    def _list_subkeys(self, project_key: str, session_id: str) -> list[str]:
        with self.db.reading() as conn:
            rows = conn.execute(
                "SELECT subpath FROM session_transcripts "
                "WHERE project_key = ? AND session_id = ? AND subpath != ? ORDER BY subpath",
                (project_key, session_id, MAIN_SUBPATH),
            ).fetchall()
        return [row[0] for row in rows]


# -- write helpers (inside the caller's transaction) -----------------------------------------


def _subpath_of(key: SessionKey | SessionListSubkeysKey) -> str:
    subpath = key.get("subpath")
    if subpath is None:
        return MAIN_SUBPATH
    if not isinstance(subpath, str) or not subpath:
        raise ConfigurationError(
            f"SessionKey subpath must be a non-empty string, got {subpath!r}; "
            "omit 'subpath' to address the main transcript."
        )
    return subpath


def _uuid_of(entry: SessionStoreEntry) -> str | None:
    uuid = entry.get("uuid") if isinstance(entry, dict) else None
    return uuid if isinstance(uuid, str) and uuid else None


def _encode(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _next_mtime(conn: Connection) -> int:
    """Now in epoch ms, but always after the newest write (the caller holds the write lock)."""
    now = time.time_ns() // 1_000_000
    last = conn.execute("SELECT max(mtime) FROM session_transcripts").fetchone()[0]
    return now if last is None or now > last else int(last) + 1


def _touch_transcript(conn: Connection, key: SessionKey, subpath: str, mtime: int) -> int:
    """Create the transcript row or bump its mtime; returns its id."""
    ident = (key["project_key"], key["session_id"], subpath)
    conn.execute(
        "INSERT INTO session_transcripts (project_key, session_id, subpath, mtime) "
        "VALUES (?, ?, ?, ?) "
        "ON CONFLICT (project_key, session_id, subpath) DO UPDATE SET mtime = excluded.mtime",
        (*ident, mtime),
    )
    row = conn.execute(
        "SELECT transcript_id FROM session_transcripts "
        "WHERE project_key = ? AND session_id = ? AND subpath = ?",
        ident,
    ).fetchone()
    return int(row[0])


def _fold_summary(
    conn: Connection,
    transcript_id: int,
    key: SessionKey,
    entries: list[SessionStoreEntry],
    mtime: int,
) -> None:
    """Read, fold and rewrite the sidecar under the same write lock, so racing appends serialise."""
    row = conn.execute(
        "SELECT mtime, data FROM session_summaries WHERE transcript_id = ?", (transcript_id,)
    ).fetchone()
    previous: SessionSummaryEntry | None = None
    if row is not None:
        previous = {"session_id": key["session_id"], "mtime": row[0], "data": json.loads(row[1])}
    folded = fold_session_summary(previous, key, entries)
    conn.execute(
        "INSERT INTO session_summaries (transcript_id, mtime, data) VALUES (?, ?, ?) "
        "ON CONFLICT (transcript_id) DO UPDATE SET mtime = excluded.mtime, data = excluded.data",
        (transcript_id, mtime, _encode(folded["data"])),
    )
