"""Health checks of a PostgreSQL store: what `memory-agent doctor` can find wrong on the server.

A PostgreSQL server keeps its files consistent (WAL, checksums), so the SQLite checks have no
literal counterpart; what can still go wrong is what the server does not check on every write:

- the server is unreachable, or its schema is older (migrated by --repair) or newer (refused);
- an index is missing (dropped by hand), invalid (a failed `REINDEX CONCURRENTLY`), or has
  drifted from its table (a bug, a crash on a replica with `fsync=off`, a collation change):
  amcheck's `bt_index_check` verifies each B-tree against its table, and the GIN indexes of
  the full-text columns, which amcheck on PostgreSQL 15 cannot check, are asked the same
  questions as a scan of the table for a sample of their own words;
- a stored `tsvector` differs from what `to_tsvector` gives for its text today (the text
  search configuration changed after the rows were written): generated columns are computed
  on write only, so searches would miss rows the configuration now matches;
- rows reference rows that do not exist: foreign keys bypassed (triggers disabled, or
  `session_replication_role = replica` during a restore), and the references no constraint
  can state (a summary's message range, an attachment's copy of its block's label, a passage's
  tag rows against its `tags` column).

The expected indexes and tables are not listed here: they are read from the schema the shipped
migrations build, run into a scratch schema inside a transaction that is rolled back, so the
check can never disagree with `store.pg_schema`. The amcheck extension, when it is not installed,
is likewise created inside a rolled-back transaction: the doctor leaves the database as it was.
Every check returns a `health.Check`; each failure says what --repair does about it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import StorageError
from ..privacy.redaction import redact_url, scrub
from ..store.pg_fulltext import TEXT_SEARCH_CONFIG
from ..store.pg_schema import PG_MIGRATIONS, PG_SCHEMA_VERSION, VERSION_TABLE
from ..store.postgres import PostgresDatabase
from .health import Check, first_line

__all__ = [
    "FULLTEXT_COLUMNS",
    "Reference",
    "check_database",
    "check_server",
    "examine",
    "reference_schema",
    "repair_database",
]

FULLTEXT_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("messages", "message_id", "text", "text_tsv"),
    ("passages", "passage_rowid", "content", "content_tsv"),
)
"""(table, key, text column, generated tsvector column) of each full-text column of the schema."""

SAMPLE_ROWS = 200
"""Rows whose words and vectors the quick full-text checks sample (newest half, random half)."""
TERMS_PER_QUERY = 200
REFERENCE_SCHEMA = "memory_agent_doctor_reference"
_ON_SCHEMA = re.compile(r" ON \S+?\.")


@dataclass(frozen=True)
class Reference:
    """The tables and indexes (name -> definition with its schema left out) the migrations build."""

    tables: frozenset[str]
    indexes: dict[str, str]


# ----- server and schema version (read with a connection of their own: nothing is migrated) ------


def check_server(url: str) -> tuple[list[Check], int | None]:
    """Can the server be reached, which version is it, and is the schema this release's?

    Returns the checks and the database's schema version (None when there is none, or when the
    server cannot be reached)."""
    import psycopg

    where = redact_url(url)

    def reason(error: BaseException) -> str:
        return first_line(scrub(str(error), url))

    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as error:
        return [
            Check(
                "postgresql server",
                "fail",
                f"cannot reach {where}: {reason(error)}; --repair cannot "
                "help: check MEMORY_DATABASE_URL (host, port, user, database) and that the server "
                "runs",
            )
        ], None
    try:
        with conn:
            version = conn.execute("SHOW server_version").fetchone()
            found = conn.execute("SELECT to_regclass(%s)", (VERSION_TABLE,)).fetchone()
            row = (
                conn.execute(f"SELECT max(version) FROM {VERSION_TABLE}").fetchone()
                if found and found[0] is not None
                else None
            )
    except psycopg.Error as error:
        return [
            Check(
                "postgresql server",
                "fail",
                f"{where} answers but its schema version cannot be read "
                f"({reason(error)}); --repair cannot help: the user needs to read {VERSION_TABLE}",
            )
        ], None
    server = Check(
        "postgresql server",
        "ok",
        f"PostgreSQL {version[0] if version else '(version unknown)'} at {where}",
    )
    if row is None or row[0] is None:
        return [server], None
    return [server, _schema_check(int(row[0]))], int(row[0])


def _schema_check(current: int) -> Check:
    if current == PG_SCHEMA_VERSION:
        return Check("schema version", "ok", f"version {current}, this release's")
    if current > PG_SCHEMA_VERSION:
        return Check(
            "schema version",
            "fail",
            f"version {current} is newer than this memory-agent understands "
            f"({PG_SCHEMA_VERSION}); --repair changes nothing: upgrade memory-agent",
        )
    return Check(
        "schema version",
        "fail",
        f"version {current}, older than this release's {PG_SCHEMA_VERSION}; "
        "--repair migrates it forward (so does any command that opens the store)",
    )


# ----- the reference schema --------------------------------------------------------------------


@contextmanager
def _rolled_back(conn: Any) -> Iterator[Any]:
    """A transaction on the raw psycopg connection that never commits (the doctor only looks)."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("ROLLBACK")


def reference_schema(db: PostgresDatabase) -> Reference:
    """The tables and indexes the shipped migrations create, built in a scratch schema and rolled
    back."""
    with db.reading() as adapter, _rolled_back(adapter.raw) as conn:
        conn.execute(f"CREATE SCHEMA {REFERENCE_SCHEMA}")
        conn.execute(f"SET LOCAL search_path TO {REFERENCE_SCHEMA}")
        for migration in PG_MIGRATIONS:
            with conn.cursor() as cursor:
                migration(cursor)
        return _catalog(conn, REFERENCE_SCHEMA)


def _catalog(conn: Any, schema: str) -> Reference:
    tables = {
        row[0]
        for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))
    }
    indexes = {
        row[0]: _ON_SCHEMA.sub(" ON ", row[1], count=1)
        for row in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (schema,)
        )
    }
    return Reference(frozenset(tables), indexes)


def _live(db: PostgresDatabase) -> Reference:
    with db.reading() as adapter:
        schema = adapter.raw.execute("SELECT current_schema()").fetchone()[0]
        return _catalog(adapter.raw, schema)


# ----- the checks ------------------------------------------------------------------------------


def examine(db: PostgresDatabase, *, repair: bool = False, full: bool = False) -> list[Check]:
    """Every check of the store's contents; with `repair`, failures repaired and checked again."""
    try:
        reference = reference_schema(db)
        unbuilt: list[Check] = []
    except StorageError as error:  # no right to create a schema here: check what is there
        reference = _live(db)
        unbuilt = [
            Check(
                "schema reference",
                "warn",
                f"cannot build the schema the migrations define to compare "
                f"with ({first_line(error)}); the indexes found are checked, missing ones cannot "
                "be "
                "seen",
            )
        ]
    found = check_database(db, reference, full=full)
    if not repair or all(check.ok for check in found):
        return unbuilt + found
    done = repair_database(db, reference, found)
    return [
        *unbuilt,
        Check("repair", "ok", "; ".join(done)),
        *check_database(db, reference, full=full),
    ]


def check_database(
    db: PostgresDatabase, reference: Reference, *, full: bool = False
) -> list[Check]:
    """Every check of the store's contents (the schema is current: `check_server` said so)."""
    return [
        check_indexes(db, reference),
        check_btrees(db, reference, full=full),
        check_fulltext_vectors(db, full=full),
        check_fulltext_indexes(db, full=full),
        check_foreign_keys(db),
        check_references(db),
    ]


def check_indexes(db: PostgresDatabase, reference: Reference) -> Check:
    """Every index the schema defines exists, with its definition, and is valid and ready."""
    missing, changed, invalid = _index_problems(db, reference)
    if not (missing or changed or invalid):
        return Check(
            "indexes present", "ok", f"all {len(reference.indexes)} indexes of the schema, valid"
        )
    found = [
        f"{label}: {', '.join(names)}"
        for label, names in (
            ("missing", missing),
            ("defined differently", changed),
            ("invalid", invalid),
        )
        if names
    ]
    return Check(
        "indexes present",
        "fail",
        "; ".join(found) + "; --repair creates the missing ones from the "
        "schema's definitions and rebuilds the invalid ones (REINDEX); one defined differently it "
        "only "
        "reports (drop it, and --repair creates it as the schema defines it)",
    )


def _index_problems(
    db: PostgresDatabase, reference: Reference
) -> tuple[list[str], list[str], list[str]]:
    live = _live(db).indexes
    missing = sorted(name for name in reference.indexes if name not in live)
    changed = sorted(
        name
        for name, definition in reference.indexes.items()
        if name in live and live[name] != definition
    )
    with db.reading() as conn:
        invalid = sorted(
            row[0]
            for row in conn.execute(
                "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                " WHERE c.relnamespace = current_schema()::regnamespace"
                " AND NOT (i.indisvalid AND i.indisready AND i.indislive)"
            )
            if row[0] in reference.indexes
        )
    return missing, changed, invalid


def check_btrees(db: PostgresDatabase, reference: Reference, *, full: bool = False) -> Check:
    """amcheck on every B-tree index of our tables; a warning when amcheck cannot be used here.

    `bt_index_check` takes the same lock as a read, so writers go on; with `full`, the stricter
    `bt_index_parent_check` also checks each page against its parent, and blocks writes
    meanwhile."""
    import psycopg

    function = "bt_index_parent_check" if full else "bt_index_check"
    with db.reading() as adapter, _rolled_back(adapter.raw) as conn:
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        except psycopg.Error as error:
            return Check(
                "b-tree indexes (amcheck)",
                "warn",
                f"not checked: amcheck cannot be used here "
                f"({first_line(error)}); a superuser can run CREATE EXTENSION amcheck in this "
                "database",
            )
        indexes = [
            row[0]
            for row in conn.execute(
                "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                " JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'btree' AND i.indisvalid"
                " AND c.relnamespace = current_schema()::regnamespace ORDER BY c.relname"
            )
            if row[0] in reference.indexes
        ]
        failed: list[str] = []
        for index in indexes:
            try:
                with conn.transaction():
                    conn.execute(f"SELECT {function}(%s::regclass, true)", (index,))
            except psycopg.errors.InsufficientPrivilege as error:
                return Check(
                    "b-tree indexes (amcheck)",
                    "warn",
                    f"not checked: {first_line(error)}; a superuser "
                    f"can GRANT EXECUTE ON FUNCTION {function}(regclass, boolean) to this user",
                )
            except psycopg.Error as error:
                failed.append(f"{index} ({first_line(error)})")
    if failed:
        return Check(
            "b-tree indexes (amcheck)",
            "fail",
            "; ".join(failed[:3]) + "; --repair rebuilds the "
            "indexes of their tables (REINDEX TABLE)",
        )
    return Check(
        "b-tree indexes (amcheck)",
        "ok",
        f"{len(indexes)} indexes agree with their tables ({function}, every row indexed)",
    )


def _sample(table: str, key: str, full: bool) -> str:
    """A FROM clause over the rows a check looks at: all of them, or the newest and a random few."""
    if full:
        return table
    half = SAMPLE_ROWS // 2
    return (
        f"(SELECT * FROM (SELECT * FROM {table} ORDER BY {key} DESC LIMIT {half}) AS newest_rows"
        f" UNION SELECT * FROM (SELECT * FROM {table} ORDER BY random() LIMIT {half}) AS "
        "random_rows) AS sampled"
    )


def check_fulltext_vectors(db: PostgresDatabase, *, full: bool = False) -> Check:
    """Each stored tsvector equals what its column's generation expression gives for its text today.

    The expression is read from the catalog rather than written here, so the check follows the
    migrations (p002 splits joined words first, p003 indexes a prefix of an over-long text)."""
    stale: list[str] = []
    seen = 0
    with db.reading() as conn:
        for table, key, _text, vector in FULLTEXT_COLUMNS:
            expression = _generation_expression(conn, table, vector)
            row: Any = conn.execute(
                f"SELECT count(*), count(*) FILTER (WHERE {vector} IS DISTINCT FROM {expression})"
                f" FROM {_sample(table, key, full)}"
            ).fetchone()
            seen += int(row[0])
            if row[1]:
                stale.append(f"{row[1]} row(s) of {table}")
    which = "every row" if full else f"{seen} sampled rows"
    if stale:
        return Check(
            "full-text vectors",
            "fail",
            f"{', '.join(stale)} hold a tsvector that is not what "
            f"their column's expression ('{TEXT_SEARCH_CONFIG}' text search) gives for their text "
            "today (the "
            "configuration changed since they were written?); --repair recomputes every row's "
            "vector",
        )
    return Check("full-text vectors", "ok", f"{which}: the stored vectors match their text")


def _generation_expression(conn: Any, table: str, column: str) -> str:
    """The SQL a stored generated column is computed by, as the server has it."""
    row: Any = conn.execute(
        "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a"
        " ON a.attrelid = d.adrelid AND a.attnum = d.adnum"
        " WHERE d.adrelid = ?::regclass AND a.attname = ?",
        (table, column),
    ).fetchone()
    if row is None:
        raise StorageError(
            f"{table}.{column} is not a generated column; run `memory-agent doctor --repair` "
            "to bring the schema up to date"
        )
    return str(row[0])


def check_fulltext_indexes(db: PostgresDatabase, *, full: bool = False) -> Check:
    """Each GIN index answers as a scan of its table does, for one word of each sampled row.

    A row the index lost is found by any of its words; the longest is taken, as the rarest is
    the cheapest to count. Both sides count per word: the scan in one pass over the table, the
    index with the planner kept from scanning, a batch of words per OR query."""
    problems: list[str] = []
    asked = 0
    with db.reading() as conn:
        for table, key, _, vector in FULLTEXT_COLUMNS:
            terms = sorted(
                {
                    row[0]
                    for row in conn.execute(
                        f"SELECT DISTINCT ON ({key}) word FROM {_sample(table, key, full)},"
                        f" unnest(tsvector_to_array({vector})) AS word ORDER BY {key}, "
                        "length(word) "
                        "DESC, word"
                    )
                }
            )
            asked += len(terms)
            scanned: dict[str, int] = (
                {
                    row[0]: int(row[1])
                    for row in conn.execute(
                        f"SELECT word, count(*) FROM {table}, unnest(tsvector_to_array({vector})) "
                        "AS word"
                        " WHERE word = ANY(?) GROUP BY word",
                        (terms,),
                    )
                }
                if terms
                else {}
            )
            indexed = _index_counts(conn.raw, table, vector, terms)
            wrong = [term for term in terms if indexed.get(term, 0) != scanned.get(term, 0)]
            if wrong:
                term = wrong[0]
                problems.append(
                    f"the index on {table}.{vector} disagrees with its table for {len(wrong)} of "
                    f"{len(terms)} words (e.g. {term!r}: {indexed.get(term, 0)} rows by the index, "
                    f"{scanned.get(term, 0)} by a scan)"
                )
    if problems:
        return Check(
            "full-text indexes",
            "fail",
            "; ".join(problems) + "; --repair rebuilds the index (REINDEX)",
        )
    return Check(
        "full-text indexes", "ok", f"the GIN indexes answer as a table scan does for {asked} words"
    )


def _index_counts(conn: Any, table: str, vector: str, terms: Sequence[str]) -> dict[str, int]:
    """How many rows the GIN index finds for each word (the planner is kept from scanning the
    table)."""
    counts: dict[str, int] = {}
    with _rolled_back(conn):
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_indexscan = off")
        for first in range(0, len(terms), TERMS_PER_QUERY):
            batch = list(terms[first : first + TERMS_PER_QUERY])
            query = " | ".join(
                "'" + term.replace("\\", "\\\\").replace("'", "''") + "'" for term in batch
            )
            counts.update(
                (row[0], int(row[1]))
                for row in conn.execute(
                    f"SELECT word, count(*) FROM (SELECT {vector} AS found FROM {table} WHERE "
                    f"{vector} @@ %s::tsquery)"
                    " AS hits, unnest(tsvector_to_array(hits.found)) AS word WHERE word = ANY(%s) "
                    "GROUP BY word",
                    (query, batch),
                )
            )
    return counts


def check_foreign_keys(db: PostgresDatabase) -> Check:
    """Rows whose foreign key points nowhere: the server enforces keys, unless it was told not
    to."""
    orphans: list[str] = []
    with db.reading() as conn:
        for name, child, parent, pairs in _foreign_keys(conn):
            joined = " AND ".join(f"p.{b} = c.{a}" for a, b in pairs)
            present = " AND ".join(f"c.{a} IS NOT NULL" for a, _ in pairs)
            count = _count(
                conn,
                f"SELECT count(*) FROM {child} c WHERE {present}"
                f" AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {joined})",
            )
            if count:
                orphans.append(f"{count} row(s) of {child} reference missing {parent} ({name})")
    if orphans:
        return Check(
            "foreign keys",
            "fail",
            "; ".join(orphans) + ": the server's checks were bypassed (triggers "
            "disabled, or session_replication_role = replica); --repair leaves them, since it "
            "cannot know "
            "what they should point to: restore from a backup, or delete those rows",
        )
    return Check("foreign keys", "ok", "every reference resolves")


def _foreign_keys(conn: Any) -> list[tuple[str, str, str, list[tuple[str, str]]]]:
    """(constraint, child table, parent table, [(child column, parent column)]) of the schema's
    keys."""
    rows = conn.execute(
        "SELECT k.conname, k.conrelid::regclass::text, k.confrelid::regclass::text, a.attname, "
        "b.attname"
        " FROM pg_constraint k, unnest(k.conkey, k.confkey) WITH ORDINALITY AS u(child, parent, n)"
        " JOIN pg_attribute a ON a.attnum = u.child JOIN pg_attribute b ON b.attnum = u.parent"
        " WHERE k.contype = 'f' AND k.connamespace = current_schema()::regnamespace"
        " AND a.attrelid = k.conrelid AND b.attrelid = k.confrelid ORDER BY k.conname, u.n"
    ).fetchall()
    keys: dict[str, tuple[str, str, list[tuple[str, str]]]] = {}
    for name, child, parent, column, target in rows:
        keys.setdefault(name, (child, parent, []))[2].append((column, target))
    return [(name, child, parent, pairs) for name, (child, parent, pairs) in keys.items()]


_UNENFORCED = (
    (
        "summaries covering messages that are not their agent's",
        "SELECT count(*) FROM summaries s WHERE EXISTS (SELECT 1 FROM (VALUES (s.first_message_id),"
        " (s.last_message_id)) AS ends(id) WHERE ends.id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
        "messages m"
        " WHERE m.message_id = ends.id AND m.agent_id = s.agent_id))",
    ),
    (
        "attachments whose label is not their block's",
        "SELECT count(*) FROM agent_blocks a JOIN blocks b ON b.block_id = a.block_id WHERE "
        "a.label <> b.label",
    ),
    (
        "passages whose tag rows differ from their tags",
        "SELECT count(*) FROM passages p WHERE ARRAY(SELECT DISTINCT "
        "json_array_elements_text(p.tags::json) ORDER BY 1)"
        " IS DISTINCT FROM ARRAY(SELECT t.tag FROM passage_tags t WHERE t.passage_rowid = "
        "p.passage_rowid ORDER BY 1)",
    ),
)
"""The references no constraint of the schema states, and a query counting the rows that break
each."""


def check_references(db: PostgresDatabase) -> Check:
    """The cross-row rules the writers keep but no constraint states (see `_UNENFORCED`)."""
    with db.reading() as conn:
        broken = [(what, _count(conn, query)) for what, query in _UNENFORCED]
    found = [f"{count} {what}" for what, count in broken if count]
    if found:
        return Check(
            "references",
            "fail",
            "; ".join(found) + "; --repair rebuilds tag rows from the passages' tags "
            "and attachment labels from their blocks; a summary's message range it leaves (restore "
            "from a "
            "backup, or export and re-import without that summary)",
        )
    return Check(
        "references", "ok", "summaries, attachments and tag rows agree with the rows they name"
    )


# ----- repairs ---------------------------------------------------------------------------------


def repair_database(
    db: PostgresDatabase, reference: Reference, checks: Sequence[Check]
) -> list[str]:
    """Repair what the failed checks found, in one write transaction; returns what was done."""
    failed = {check.name for check in checks if not check.ok}
    done: list[str] = []
    with db.transaction() as conn:
        if "full-text vectors" in failed:
            for table, _, text, _ in FULLTEXT_COLUMNS:
                conn.execute(
                    f"UPDATE {table} SET {text} = {text}"
                )  # a stored generated column is recomputed
            done.append("recomputed every full-text vector")
        if "indexes present" in failed:
            missing = _index_problems(db, reference)[0]
            for name in missing:
                conn.execute(reference.indexes[name])
            if missing:
                done.append(f"created {', '.join(missing)} from the schema")
        if failed & {
            "indexes present",
            "b-tree indexes (amcheck)",
            "full-text indexes",
            "full-text vectors",
        }:
            tables = sorted(reference.tables)
            for table in tables:
                conn.execute(f"REINDEX TABLE {table}")
            done.append(f"rebuilt the indexes of {len(tables)} tables (REINDEX)")
        if "references" in failed:
            done.append(_repair_references(conn))
    return done


def _repair_references(conn: Any) -> str:
    conn.execute(
        "UPDATE agent_blocks a SET label = b.label FROM blocks b WHERE b.block_id = a.block_id"
        " AND a.label <> b.label"
    )
    conn.execute("DELETE FROM passage_tags")
    conn.execute(
        "INSERT INTO passage_tags (passage_rowid, tag) SELECT DISTINCT p.passage_rowid, t.tag"
        " FROM passages p, json_array_elements_text(p.tags::json) AS t(tag)"
    )
    return "rebuilt attachment labels and tag rows"


def _count(conn: Any, query: str) -> int:
    return int(conn.execute(query).fetchone()[0])
