"""Schema migrations: an ordered list of named functions, tracked by `PRAGMA user_version`.

Migration N brings a database from version N-1 to N. Each runs in one transaction together with
the version bump, so a crash leaves the database at the old version or the new one, never between.
A shipped migration is never edited; a change to the schema is a new function at the end.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable

from ..errors import StorageError
from . import passage_fts
from .journal_chain import chain_hash, content_digest, new_salt

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate", "run_script", "schema_version"]

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def _migration(function: Migration) -> Migration:
    MIGRATIONS.append(function)
    return function


@_migration
def m001_core_memory(conn: sqlite3.Connection) -> None:
    """Agents, blocks and their links, block history, messages with FTS, summaries, journal."""
    run_script(
        conn,
        """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE agents (
            agent_id TEXT PRIMARY KEY,
            name TEXT,
            created_at TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE blocks (
            block_id TEXT PRIMARY KEY,
            label TEXT NOT NULL,
            value TEXT NOT NULL DEFAULT '',
            description TEXT,
            char_limit INTEGER NOT NULL CHECK (char_limit > 0),
            read_only INTEGER NOT NULL DEFAULT 0,
            is_shared INTEGER NOT NULL DEFAULT 0,
            owner_agent_id TEXT REFERENCES agents(agent_id) ON DELETE SET NULL,
            version INTEGER NOT NULL DEFAULT 1,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE agent_blocks (
            agent_id TEXT NOT NULL REFERENCES agents(agent_id) ON DELETE CASCADE,
            block_id TEXT NOT NULL REFERENCES blocks(block_id) ON DELETE CASCADE,
            label TEXT NOT NULL,
            read_only INTEGER NOT NULL DEFAULT 0,
            seen_version INTEGER,
            attached_at TEXT NOT NULL,
            PRIMARY KEY (agent_id, block_id),
            UNIQUE (agent_id, label)
        );
        CREATE INDEX agent_blocks_by_block ON agent_blocks(block_id);
        CREATE TABLE block_history (
            history_id INTEGER PRIMARY KEY AUTOINCREMENT,
            block_id TEXT NOT NULL REFERENCES blocks(block_id) ON DELETE CASCADE,
            version INTEGER NOT NULL,
            value TEXT NOT NULL,
            description TEXT,
            char_limit INTEGER NOT NULL,
            read_only INTEGER NOT NULL,
            agent_id TEXT,
            action TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (block_id, version)
        );
        CREATE TABLE messages (
            message_id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id TEXT NOT NULL REFERENCES agents(agent_id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            message_type TEXT NOT NULL,
            content TEXT NOT NULL,
            text TEXT NOT NULL DEFAULT '',
            session_id TEXT,
            turn_id TEXT,
            sdk_uuid TEXT,
            token_count INTEGER,
            in_context INTEGER NOT NULL DEFAULT 1,
            metadata TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            UNIQUE (agent_id, sdk_uuid)
        );
        CREATE INDEX messages_by_agent ON messages(agent_id, in_context, message_id);
        CREATE VIRTUAL TABLE messages_fts USING fts5(
            text, content='messages', content_rowid='message_id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts(rowid, text) VALUES (new.message_id, new.text);
        END;
        CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, text)
            VALUES ('delete', old.message_id, old.text);
        END;
        CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, text)
            VALUES ('delete', old.message_id, old.text);
            INSERT INTO messages_fts(rowid, text) VALUES (new.message_id, new.text);
        END;
        CREATE TABLE summaries (
            summary_id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id TEXT NOT NULL REFERENCES agents(agent_id) ON DELETE CASCADE,
            summary TEXT NOT NULL,
            first_message_id INTEGER,
            last_message_id INTEGER,
            model TEXT,
            tokens_before INTEGER,
            tokens_after INTEGER,
            is_fallback INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        );
        CREATE INDEX summaries_by_agent ON summaries(agent_id, summary_id);
        CREATE TABLE journal (
            entry_id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id TEXT,
            action TEXT NOT NULL,
            target_type TEXT NOT NULL,
            target_id TEXT,
            label TEXT,
            old_value TEXT,
            new_value TEXT,
            detail TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        );
        CREATE INDEX journal_by_target ON journal(target_type, target_id, entry_id);
        CREATE TRIGGER journal_no_update BEFORE UPDATE ON journal BEGIN
            SELECT RAISE(ABORT, 'the journal is append-only');
        END;
        CREATE TRIGGER journal_no_delete BEFORE DELETE ON journal BEGIN
            SELECT RAISE(ABORT, 'the journal is append-only');
        END;
        """,
    )


@_migration
def m002_archival(conn: sqlite3.Connection) -> None:
    """Archival passages (source of truth), their tags, and the FTS5 mirror kept by triggers."""
    run_script(
        conn,
        """
        CREATE TABLE passages (
            passage_rowid INTEGER PRIMARY KEY AUTOINCREMENT,
            passage_id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL REFERENCES agents(agent_id) ON DELETE CASCADE,
            content TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            metadata TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            vector_state TEXT NOT NULL DEFAULT 'pending'
                CHECK (vector_state IN ('pending', 'indexed')),
            UNIQUE (agent_id, content_hash)
        );
        CREATE INDEX passages_by_agent ON passages(agent_id, created_at);
        CREATE INDEX passages_pending ON passages(vector_state) WHERE vector_state = 'pending';
        CREATE TABLE passage_tags (
            passage_rowid INTEGER NOT NULL REFERENCES passages(passage_rowid) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (passage_rowid, tag)
        );
        CREATE INDEX passage_tags_by_tag ON passage_tags(tag);
        CREATE VIRTUAL TABLE passages_fts USING fts5(
            content, content='passages', content_rowid='passage_rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER passages_fts_insert AFTER INSERT ON passages BEGIN
            INSERT INTO passages_fts(rowid, content) VALUES (new.passage_rowid, new.content);
        END;
        CREATE TRIGGER passages_fts_delete AFTER DELETE ON passages BEGIN
            INSERT INTO passages_fts(passages_fts, rowid, content)
            VALUES ('delete', old.passage_rowid, old.content);
        END;
        CREATE TRIGGER passages_fts_update AFTER UPDATE OF content ON passages BEGIN
            INSERT INTO passages_fts(passages_fts, rowid, content)
            VALUES ('delete', old.passage_rowid, old.content);
            INSERT INTO passages_fts(rowid, content) VALUES (new.passage_rowid, new.content);
        END;
        """,
    )


@_migration
def m003_session_store(conn: sqlite3.Connection) -> None:
    """Mirrored SDK session transcripts (`SQLiteSessionStore`): files, entries, summary sidecars.

    A transcript is one row per (project_key, session_id, subpath); '' is the main transcript,
    because NULLs never collide in a UNIQUE constraint. Entries keep commit order in `seq` and
    dedupe on (transcript, uuid); an entry without a uuid has a NULL uuid and is never deduped.
    `mtime` is epoch milliseconds of the last storage write. Deleting a transcript removes its
    entries and, for a main transcript, its summary sidecar.
    """
    run_script(
        conn,
        """
        CREATE TABLE session_transcripts (
            transcript_id INTEGER PRIMARY KEY AUTOINCREMENT,
            project_key TEXT NOT NULL,
            session_id TEXT NOT NULL,
            subpath TEXT NOT NULL DEFAULT '',
            mtime INTEGER NOT NULL,
            UNIQUE (project_key, session_id, subpath)
        );
        CREATE INDEX session_transcripts_by_mtime ON session_transcripts(mtime);
        CREATE TABLE session_entries (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            transcript_id INTEGER NOT NULL
                REFERENCES session_transcripts(transcript_id) ON DELETE CASCADE,
            uuid TEXT,
            entry TEXT NOT NULL,
            UNIQUE (transcript_id, uuid)
        );
        CREATE INDEX session_entries_in_order ON session_entries(transcript_id, seq);
        CREATE TABLE session_summaries (
            transcript_id INTEGER PRIMARY KEY
                REFERENCES session_transcripts(transcript_id) ON DELETE CASCADE,
            mtime INTEGER NOT NULL,
            data TEXT NOT NULL
        );
        """,
    )


@_migration
def m004_issue16_on_demand_blocks(conn: sqlite3.Connection) -> None:
    """Each block says whether it is always in the prompt (1) or on demand (0).

    On-demand blocks are not rendered into the system prompt; the rendered memory lists their
    paths and sizes and the model reads them with the memory tool. Every existing block stays in
    the prompt (the default). The migration only adds a column to `blocks` and touches nothing
    another migration of the same release adds, so migrations from other branches may run before
    or after it; it is a no-op where the column already exists.
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(blocks)")}
    if "in_prompt" not in columns:
        conn.execute(
            "ALTER TABLE blocks ADD COLUMN in_prompt INTEGER NOT NULL DEFAULT 1"
            " CHECK (in_prompt IN (0, 1))"
        )


@_migration
def m005_issue14_per_agent_passage_fts(conn: sqlite3.Connection) -> None:
    """One FTS5 index per agent (see `store.passage_fts`) instead of one for every agent's passages.

    bm25's statistics are per table, so with a shared table an agent's keyword ranking changed
    when another agent stored passages. Existing passages are indexed into their agent's table;
    the shared table and its triggers go (passage writers now index explicitly).
    """
    run_script(
        conn,
        """
        CREATE TABLE passage_fts_tables (
            agent_id TEXT PRIMARY KEY REFERENCES agents(agent_id) ON DELETE CASCADE,
            fts_id INTEGER NOT NULL UNIQUE
        );
        DROP TRIGGER passages_fts_insert;
        DROP TRIGGER passages_fts_delete;
        DROP TRIGGER passages_fts_update;
        DROP TABLE passages_fts;
        """,
    )
    agents = [
        row[0] for row in conn.execute("SELECT DISTINCT agent_id FROM passages ORDER BY agent_id")
    ]
    for agent_id in agents:
        table = passage_fts.ensure_agent_index(conn, agent_id)
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")


@_migration
def m006_issue22_passage_lifecycle(conn: sqlite3.Connection) -> None:
    """Passages that expire, are superseded, and carry importance, use and provenance.

    `expires_at` (UTC ISO text, NULL = never) and `superseded_by` (the successor's passage_id, NULL =
    current) keep a passage out of search without deleting it; `importance` in [0, 1] and the
    access count feed the scored ranking; `provenance` (JSON) says where a passage came from.
    Partial indexes keep the lookups of expiring and superseded passages cheap when they are few.
    """
    run_script(
        conn,
        """
        ALTER TABLE passages ADD COLUMN expires_at TEXT;
        ALTER TABLE passages ADD COLUMN superseded_by TEXT;
        ALTER TABLE passages ADD COLUMN importance REAL NOT NULL DEFAULT 0.5
            CHECK (importance >= 0 AND importance <= 1);
        ALTER TABLE passages ADD COLUMN access_count INTEGER NOT NULL DEFAULT 0 CHECK (access_count >= 0);
        ALTER TABLE passages ADD COLUMN last_accessed_at TEXT;
        ALTER TABLE passages ADD COLUMN provenance TEXT NOT NULL DEFAULT '{}';
        CREATE INDEX passages_expiring ON passages(agent_id, expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX passages_superseded ON passages(superseded_by) WHERE superseded_by IS NOT NULL;
        """,
    )


@_migration
def m007_issue28_journal_authors(conn: sqlite3.Connection) -> None:
    """Who acted: `author_kind` and `author` on journal entries and on saved block versions
    (see `memory_agent.authors`). Rows written before stay as they are, with no author (NULL):
    the journal is append-only and nothing can say now who made those changes."""
    run_script(
        conn,
        """
        ALTER TABLE journal ADD COLUMN author_kind TEXT;
        ALTER TABLE journal ADD COLUMN author TEXT;
        CREATE INDEX journal_by_author ON journal(author_kind, entry_id);
        ALTER TABLE block_history ADD COLUMN author_kind TEXT;
        ALTER TABLE block_history ADD COLUMN author TEXT;
        """,
    )


@_migration
def m008_issue22_consolidation_sessions(conn: sqlite3.Connection) -> None:
    """One row per consolidation run (see `memory_agent.consolidation`): who ran it, when, how it
    ended, what it changed (counts), the model's tokens, a one-line summary, why it failed and the
    warnings it raised (a JSON list). The changes themselves are in the journal, authored by the
    session; rollback reads them from there."""
    run_script(
        conn,
        """
        CREATE TABLE consolidation_sessions (
            session_id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL REFERENCES agents(agent_id) ON DELETE CASCADE,
            consolidator TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL
                CHECK (status IN ('running', 'completed', 'failed', 'rolled_back')),
            blocks_analysed INTEGER NOT NULL DEFAULT 0,
            blocks_changed INTEGER NOT NULL DEFAULT 0,
            passages_merged INTEGER NOT NULL DEFAULT 0,
            passages_superseded INTEGER NOT NULL DEFAULT 0,
            passages_expired INTEGER NOT NULL DEFAULT 0,
            passages_archived INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER,
            output_tokens INTEGER,
            summary TEXT NOT NULL DEFAULT '',
            failure TEXT,
            warnings TEXT NOT NULL DEFAULT '[]',
            rolled_back_at TEXT
        );
        CREATE INDEX consolidation_sessions_by_agent ON consolidation_sessions(agent_id, started_at);
        """,
    )


@_migration
def m009_issue25_whole_passage_vectors(conn: sqlite3.Connection) -> None:
    """Each passage records how many vectors (chunks) hold it (`archival.chunks`): long passages
    are embedded whole, as overlapping windows, instead of from their first window only.

    Existing passages have one vector. Those longer than 254 characters may have been longer than
    the model's window (a word-piece covers at least one character) and are marked 0, "embedded
    from the first window only": search uses them as before and `memory-agent doctor --repair`
    re-embeds them whole (with a progress bar) rather than this migration stalling the first open.
    Only adds to `passages`, so other branches' migrations may run before or after it.
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(passages)")}
    if "vector_chunks" not in columns:
        conn.execute("ALTER TABLE passages ADD COLUMN vector_chunks INTEGER NOT NULL DEFAULT 1")
        conn.execute("UPDATE passages SET vector_chunks = 0 WHERE length(content) > 254")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS passages_chunked ON passages(vector_chunks) WHERE vector_chunks != 1"
    )


@_migration
def m010_issue26_sensitivity(conn: sqlite3.Connection) -> None:
    """Every block and passage has a sensitivity level (`memory_agent.privacy.sensitivity`): public, private
    or secret; existing rows become private, the default. The CHECK refuses any other text, so a
    level the code does not know can never be stored. Only adds columns, so other branches'
    migrations may run before or after it."""
    for table in ("blocks", "passages"):
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if "sensitivity" not in columns:
            conn.execute(
                f"ALTER TABLE {table} ADD COLUMN sensitivity TEXT NOT NULL DEFAULT 'private'"
                " CHECK (sensitivity IN ('public', 'private', 'secret'))"
            )


_JOURNAL_ONLY_REDACTION = """
        CREATE TRIGGER journal_no_update BEFORE UPDATE ON journal
        WHEN NOT (old.forgotten = 0 AND new.forgotten = 1 AND new.label IS NULL AND new.old_value IS NULL
            AND new.new_value IS NULL AND new.detail = '{}' AND new.salt IS NULL
            AND new.entry_id = old.entry_id AND new.agent_id IS old.agent_id AND new.action = old.action
            AND new.target_type = old.target_type AND new.target_id IS old.target_id
            AND new.created_at = old.created_at AND new.author_kind IS old.author_kind AND new.author IS old.author
            AND new.content_digest IS old.content_digest AND new.prev_hash IS old.prev_hash
            AND new.entry_hash IS old.entry_hash)
        BEGIN
            SELECT RAISE(ABORT, 'the journal is append-only');
        END;
"""


@_migration
def m011_issue26_journal_chain(conn: sqlite3.Connection) -> None:
    """Tamper evidence and forgetting (issue 26): each journal entry gets a random salt, a digest of
    its values, the hash of the entry before and its own hash (`store.journal_chain`), and a
    `forgotten` mark. Entries written before are chained now, in entry order. The append-only
    trigger is replaced by one that still refuses every UPDATE except forgetting's: the label,
    values, detail and salt erased, the row marked forgotten, everything the chain covers unchanged."""
    run_script(
        conn,
        """
        ALTER TABLE journal ADD COLUMN salt TEXT;
        ALTER TABLE journal ADD COLUMN content_digest TEXT;
        ALTER TABLE journal ADD COLUMN prev_hash TEXT;
        ALTER TABLE journal ADD COLUMN entry_hash TEXT;
        ALTER TABLE journal ADD COLUMN forgotten INTEGER NOT NULL DEFAULT 0 CHECK (forgotten IN (0, 1));
        DROP TRIGGER journal_no_update;
        """,
    )
    previous: str | None = None
    rows = conn.execute(
        "SELECT entry_id, agent_id, action, target_type, target_id, label, old_value, new_value, detail,"
        " created_at, author_kind, author FROM journal ORDER BY entry_id"
    ).fetchall()
    for row in rows:
        salt = new_salt()
        digest = content_digest(salt, row[5], row[6], row[7], row[8])
        own = chain_hash(
            previous, row[0], row[1], row[2], row[3], row[4], row[10], row[11], row[9], digest
        )
        conn.execute(
            "UPDATE journal SET salt = ?, content_digest = ?, prev_hash = ?, entry_hash = ?"
            " WHERE entry_id = ?",
            (salt, digest, previous, own, row[0]),
        )
        previous = own
    run_script(conn, _JOURNAL_ONLY_REDACTION)


@_migration
def m012_issue25_index_context(conn: sqlite3.Connection) -> None:
    """Ranking-only context of a passage (`index_context`, '' for none), which keyword search
    indexes after the text: each agent's FTS5 content view and delete trigger are re-created to
    read text and context. Existing passages have no context, so their index rows stay as they are.
    Only adds to `passages` (and rewrites this schema's own views), so other branches' migrations
    may run before or after it.
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(passages)")}
    if "index_context" not in columns:
        conn.execute("ALTER TABLE passages ADD COLUMN index_context TEXT NOT NULL DEFAULT ''")
    indexed = (
        "CASE WHEN {row}.index_context = '' THEN {row}.content"
        " ELSE {row}.content || ' ' || {row}.index_context END"
    )
    for agent_id, fts_id in conn.execute(
        "SELECT agent_id, fts_id FROM passage_fts_tables"
    ).fetchall():
        agent = "'" + str(agent_id).replace("'", "''") + "'"
        table, view, trigger = (
            f"passages_fts_{fts_id}",
            f"agent_passages_{fts_id}",
            f"passages_fts_{fts_id}_on_delete",
        )
        conn.execute(f"DROP VIEW IF EXISTS {view}")
        conn.execute(
            f"CREATE VIEW {view} AS SELECT p.passage_rowid, {indexed.format(row='p')} AS content"
            f" FROM passages p WHERE p.agent_id = {agent}"
        )
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        conn.execute(
            f"CREATE TRIGGER {trigger} AFTER DELETE ON passages WHEN old.agent_id = {agent} BEGIN"
            f" INSERT INTO {table} ({table}, rowid, content) VALUES ('delete', old.passage_rowid,"
            f" {indexed.format(row='old')}); END"
        )


@_migration
def m013_issue25_message_vectors(conn: sqlite3.Connection) -> None:
    """Each message records how many vectors hold it for conversation search (`message_vectors`):
    NULL until they are written after the turn (0 for a message with no text to embed). Existing
    messages start without vectors; they are embedded by the catch-up (a search's bounded batch,
    the agent after a turn, `memory-agent doctor --repair`), never by this migration. Only adds to
    `messages`, so other branches' migrations may run before or after it.
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
    if "vector_chunks" not in columns:
        conn.execute("ALTER TABLE messages ADD COLUMN vector_chunks INTEGER")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS messages_vectors_pending ON messages(agent_id, message_id)"
        " WHERE vector_chunks IS NULL"
    )


@_migration
def m014_issue25_sensitivity_check_without_a_temporary_index(conn: sqlite3.Connection) -> None:
    """The sensitivity CHECK that m010 gave `blocks` and `passages` is rewritten as three
    comparisons: SQLite checks an IN list of three or more constants by building a temporary
    index (with its own page cache) for every row written, which cost an archival insert about a
    tenth of its SQLite time. The rule is the same, so every stored row still passes it.

    A CHECK is not part of the stored rows, so the tables' recorded SQL is rewritten in place, by
    SQLite's documented procedure for changing constraints (writable_schema, then a new
    schema_version, inside this migration's transaction); a table whose SQL does not hold the
    m010 text is left as it is."""
    before = "CHECK (sensitivity IN ('public', 'private', 'secret'))"
    after = "CHECK (sensitivity = 'public' OR sensitivity = 'private' OR sensitivity = 'secret')"
    rewritten = [
        (sql.replace(before, after), name)
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN ('blocks', "
            "'passages')"
        )
        if before in sql
    ]
    if not rewritten:
        return
    version = int(conn.execute("PRAGMA schema_version").fetchone()[0])
    conn.execute("PRAGMA writable_schema = ON")
    try:
        conn.executemany(
            "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", rewritten
        )
        conn.execute(f"PRAGMA schema_version = {version + 1}")
    finally:
        conn.execute("PRAGMA writable_schema = OFF")


@_migration
def m015_issue25_reply_links(conn: sqlite3.Connection) -> None:
    """A passage whose context names another passage of its agent by its whole text records that
    passage's id (`context_of`, NULL for none; `archival/links.py`), indexed for the search's
    lookup of a candidate's replies. Existing passages with context are linked here as an insert
    links them (the longest passage whose whole text begins the context, ends before a space or at
    its end, and is at least half of it; contexts up to 4,000 characters). Only adds to
    `passages`, so other branches' migrations may run before or after it.
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(passages)")}
    if "context_of" not in columns:
        conn.execute("ALTER TABLE passages ADD COLUMN context_of TEXT")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS passages_context_of ON passages(context_of)"
        " WHERE context_of IS NOT NULL"
    )
    rows = conn.execute(
        "SELECT passage_rowid, agent_id, index_context FROM passages WHERE index_context != ''"
        " AND length(index_context) <= 4000"
    ).fetchall()
    for rowid, agent_id, context in rows:
        heads = {context} | {
            context[:end]
            for end, char in enumerate(context)
            if char.isspace() and 2 * end >= len(context)
        }
        hashes = [hashlib.sha256(head.encode("utf-8")).hexdigest() for head in heads]
        found = conn.execute(
            "SELECT passage_id FROM passages WHERE agent_id = ? AND content_hash IN"
            f" ({', '.join('?' for _ in hashes)}) ORDER BY length(content) DESC LIMIT 1",
            (agent_id, *hashes),
        ).fetchone()
        if found is not None:
            conn.execute(
                "UPDATE passages SET context_of = ? WHERE passage_rowid = ?", (found[0], rowid)
            )


SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(
    conn: sqlite3.Connection, begin: Callable[[], None], where: object = "The database"
) -> int:
    """Apply every migration the database has not seen; returns the final version.

    `begin` opens a write transaction (BEGIN IMMEDIATE with retries) so that two processes
    opening a fresh database at once cannot both run the same migration. `where` names the file
    in errors.
    """
    while True:
        current = schema_version(conn)
        if current > SCHEMA_VERSION:
            raise StorageError(
                f"{where} is at schema version {current}, newer than this memory-agent "
                f"understands ({SCHEMA_VERSION}); nothing was changed. Upgrade memory-agent, or restore "
                "the file from a backup made by this version."
            )
        if current == SCHEMA_VERSION:
            return current
        begin()
        try:
            # Re-read inside the lock: another process may have migrated meanwhile.
            current = schema_version(conn)
            if current < SCHEMA_VERSION:
                _run_in_transaction(conn, MIGRATIONS[current], current + 1, where)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _run_in_transaction(
    conn: sqlite3.Connection, migration: Migration, version: int, where: object
) -> None:
    try:
        migration(conn)
    except sqlite3.Error as error:
        raise StorageError(
            f"Migration {migration.__name__} of {where} failed: {error}; nothing was "
            "changed. Run 'memory-agent doctor' for a report."
        ) from error
    conn.execute(f"PRAGMA user_version = {version}")


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run a multi-statement script inside the current transaction.

    `executescript` would commit first, so statements are split (trigger bodies included, by
    `sqlite3.complete_statement`) and run one by one.
    """
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                conn.execute(buffer)
            buffer = ""
    if buffer.strip():
        raise StorageError(f"Incomplete SQL statement at the end of a migration: {buffer.strip()}")
