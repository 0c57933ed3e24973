"""`doctor`: a healthy storage dir passes; broken indexes are found, reported and repaired.

On both backends through the `backend` fixture, plus the PostgreSQL checks of `pg_health`, each
shown to fail on the damage it is for: indexes that missed rows while the server was told not to
maintain them (what a crash of an unsynced replica or a failed REINDEX leaves), a dropped and an
invalid index, vectors stored under an older text search configuration, rows written with the
foreign keys bypassed, and the cross-row rules no constraint states.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import Result

from memory_agent import MemoryManager
from memory_agent.store.pg_schema import PG_SCHEMA_VERSION, VERSION_TABLE
from memory_agent.testing.postgres_cluster import PostgresCluster

if TYPE_CHECKING:
    import psycopg

Run = Callable[..., Result]
Open = Callable[[str], MemoryManager]

SQLITE_CHECKS = {"sqlite integrity", "foreign keys", "messages_fts index", "passages_fts index"}
POSTGRES_CHECKS = {
    "postgresql server",
    "schema version",
    "indexes present",
    "b-tree indexes (amcheck)",
    "full-text vectors",
    "full-text indexes",
    "foreign keys",
    "references",
}


def _checks(result: Result) -> dict[str, str]:
    return {check["name"]: check["status"] for check in json.loads(result.stdout)["checks"]}


def _details(result: Result) -> dict[str, str]:
    return {check["name"]: check["detail"] for check in json.loads(result.stdout)["checks"]}


@pytest.fixture
def postgres(migrated_postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """This test on PostgreSQL only (a fresh copy of the migrated template, made ahead: no wait
    for CREATE DATABASE and the migrations); the URL connects as the cluster's superuser, which
    the tests use to damage what a memory-agent user could not."""
    monkeypatch.setenv("MEMORY_DATABASE_URL", migrated_postgres_url)
    return migrated_postgres_url


def _connect(url: str, *, autocommit: bool = False) -> psycopg.Connection[Any]:
    """A psycopg connection; the driver is an optional extra, imported only by the PostgreSQL runs
    (the postgres_url fixture skips them, saying why, when it is missing)."""
    import psycopg

    return psycopg.connect(url, autocommit=autocommit)


def _sql(url: str, *statements: str) -> None:
    with _connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def _some_memory(open_store: Open) -> None:
    with open_store("ada") as memory:
        for number in range(12):
            memory.store_message("user", f"the tides of day {number} were high near the harbour")
        memory.archival_memory_insert(
            "Ada sails at dawn when the tide turns", tags=["sea", "plans"]
        )
        # Words joined by punctuation are indexed split (PostgreSQL migration p002): still healthy.
        memory.archival_memory_insert("Ticket MARKER-01 at /api/v1/items, mail ada@example.com")


# ----- both backends ---------------------------------------------------------------------------


def test_a_healthy_storage_dir_passes(backend: str, initialised: Run, open_store: Open) -> None:
    _some_memory(open_store)
    result = initialised("doctor")
    assert result.exit_code == 0, result.output
    assert "All checks passed." in result.stdout
    checks = _checks(initialised("--json", "doctor"))
    expected = SQLITE_CHECKS if backend == "sqlite" else POSTGRES_CHECKS
    assert expected | {"vectors vs passages", "archival reconcile"} <= set(checks)
    assert set(checks.values()) == {"ok"}, checks


def test_pending_passages_and_orphan_vectors_are_reconciled(
    backend: str, initialised: Run, open_store: Open
) -> None:
    kept = json.loads(initialised("--json", "remember", "Kept passage about tides").stdout)["id"]
    gone = json.loads(initialised("--json", "remember", "Passage deleted behind our back").stdout)[
        "id"
    ]
    with open_store("ada") as memory, memory.db.transaction() as conn:
        conn.execute("UPDATE passages SET vector_state = 'pending' WHERE passage_id = ?", (kept,))
        conn.execute(
            "DELETE FROM passages WHERE passage_id = ?", (gone,)
        )  # its vector is now an orphan
    result = initialised("--json", "doctor", "--full")
    assert result.exit_code == 0, result.output
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["vectors vs passages"]["status"] == "warn"
    assert "1 waiting for vectors" in checks["vectors vs passages"]["detail"]
    assert "removed 1 orphan vectors" in checks["archival reconcile"]["detail"]
    assert _checks(initialised("--json", "doctor"))["vectors vs passages"] == "ok"


def test_repair_writes_message_vectors_and_removes_a_forgotten_ones(
    backend: str, initialised: Run, open_store: Open
) -> None:
    _some_memory(open_store)
    details = _details(initialised("--json", "doctor"))
    assert details["message vectors"].startswith("12 messages have no vectors yet")
    result = initialised("--json", "doctor", "--repair")
    assert result.exit_code == 0, result.output
    assert "wrote vectors of 12 messages" in _details(result)["message vectors"]
    with open_store("ada") as memory:
        first = memory.all_messages()[0]
        with memory.database.transaction() as conn:  # gone behind the vectors' back
            conn.execute("DELETE FROM messages WHERE message_id = ?", (first.message_id,))
    repaired = _details(initialised("--json", "doctor", "--repair", "--full"))
    # Two vectors: the message's own and the one with its context (here the date alone).
    assert "removed 2 orphan vectors" in repaired["message vectors"]
    assert "12 messages" not in _details(initialised("--json", "doctor"))["message vectors"]


@pytest.mark.empty_database
def test_doctor_without_storage_is_one_error(
    backend: str, run: Run, error_of: Callable[[Result], str]
) -> None:
    assert "No memory-agent storage" in error_of(run("doctor"))


# ----- SQLite ----------------------------------------------------------------------------------


@pytest.mark.sqlite_only(
    reason="writes into FTS5's own index table, which PostgreSQL does not have "
    "(its GIN counterpart is damaged in test_indexes_that_missed_rows_...)"
)
def test_a_drifted_full_text_index_fails_and_is_repaired(
    initialised: Run, open_store: Open
) -> None:
    with open_store("ada") as memory, memory.db.transaction() as conn:
        conn.execute("INSERT INTO messages_fts(rowid, text) VALUES (4242, 'ghost row')")
    broken = initialised("--json", "doctor")
    assert broken.exit_code == 1 and _checks(broken)["messages_fts index"] == "fail"
    assert "--repair" in initialised("doctor").stdout
    repaired = initialised("doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "rebuilt" in repaired.stdout
    assert initialised("doctor").exit_code == 0


# ----- PostgreSQL ------------------------------------------------------------------------------


@contextmanager
def _not_maintained(url: str, *indexes: str) -> Iterator[None]:
    """Writes made inside leave these indexes without their rows (the server is told the indexes
    are not ready, as during a CREATE INDEX CONCURRENTLY), as a lost index page would."""
    names = ", ".join(f"'{index}'::regclass" for index in indexes)
    _sql(url, f"UPDATE pg_index SET indisready = false WHERE indexrelid IN ({names})")
    try:
        yield
    finally:
        _sql(url, f"UPDATE pg_index SET indisready = true WHERE indexrelid IN ({names})")


@pytest.mark.postgres
def test_indexes_that_missed_rows_fail_and_are_rebuilt(
    postgres: str, initialised: Run, open_store: Open
) -> None:
    _some_memory(open_store)
    with _not_maintained(postgres, "passages_content_tsv", "messages_by_agent"):
        with open_store("ada") as memory:
            memory.store_message("user", "a message the agent index never saw")
            memory.archival_memory_insert("Ghostly lighthouse keepers whistle")
    broken = initialised("--json", "doctor")
    assert broken.exit_code == 1
    checks, details = _checks(broken), _details(broken)
    assert (
        checks["full-text indexes"] == "fail"
        and "passages.content_tsv" in details["full-text indexes"]
    )
    assert (
        checks["b-tree indexes (amcheck)"] == "fail"
        and "messages_by_agent" in details["b-tree indexes (amcheck)"]
    )
    assert "--repair rebuilds" in details["full-text indexes"] and checks["indexes present"] == "ok"
    repaired = initialised("--json", "doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "REINDEX" in _details(repaired)["repair"]
    assert initialised("doctor").exit_code == 0
    with open_store("ada") as memory:
        assert [
            hit.content for hit in memory.archival_memory_search("lighthouse", mode="keyword")
        ] == ["Ghostly lighthouse keepers whistle"]


@pytest.mark.postgres
def test_a_dropped_and_an_invalid_index_fail_and_are_restored(
    postgres: str, initialised: Run, open_store: Open
) -> None:
    _some_memory(open_store)
    _sql(
        postgres,
        "DROP INDEX messages_text_tsv",
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'passages_by_agent'::regclass",
    )
    broken = initialised("--json", "doctor")
    assert broken.exit_code == 1 and _checks(broken)["indexes present"] == "fail"
    detail = _details(broken)["indexes present"]
    assert "missing: messages_text_tsv" in detail and "invalid: passages_by_agent" in detail
    repaired = initialised("--json", "doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "created messages_text_tsv" in _details(repaired)["repair"]
    with _connect(postgres) as conn:
        assert conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'messages_text_tsv'"
        ).fetchone() == ("CREATE INDEX messages_text_tsv ON public.messages USING gin (text_tsv)",)
    assert initialised("doctor").exit_code == 0


@pytest.mark.postgres
def test_stale_vectors_and_broken_cross_row_rules_fail_and_are_repaired(
    postgres: str, initialised: Run, open_store: Open
) -> None:
    _some_memory(open_store)
    # The text search configuration changes under stored rows (as a dictionary upgrade would):
    # their generated vectors were computed with the old one. Per database, so only this test's.
    _sql(
        postgres,
        "ALTER TEXT SEARCH CONFIGURATION english ALTER MAPPING FOR asciiword WITH simple",
        "DELETE FROM passage_tags WHERE tag = 'sea'",
        "UPDATE agent_blocks SET label = 'someone_else' WHERE label = 'human'",
    )
    broken = initialised("--json", "doctor")
    assert broken.exit_code == 1
    checks, details = _checks(broken), _details(broken)
    assert checks["full-text vectors"] == "fail" and "recomputes" in details["full-text vectors"]
    assert checks["references"] == "fail"
    assert "1 attachments whose label is not their block's" in details["references"]
    assert "1 passages whose tag rows differ from their tags" in details["references"]
    repaired = initialised("--json", "doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert initialised("doctor").exit_code == 0
    with open_store("ada") as memory:
        assert [
            p.content for p in memory.archival_memory_search("dawn", mode="keyword", tags=["sea"])
        ] == ["Ada sails at dawn when the tide turns"]
        assert memory.get_block("human").label == "human"


@pytest.mark.postgres
def test_rows_pointing_nowhere_are_named_and_left(
    postgres: str, initialised: Run, open_store: Open
) -> None:
    _some_memory(open_store)
    with _connect(postgres, autocommit=True) as conn:  # a restore that bypassed the keys
        conn.execute("SET session_replication_role = replica")
        conn.execute(
            "INSERT INTO messages (agent_id, role, message_type, content, text, created_at)"
            " VALUES ('nobody', 'user', 'user', '\"x\"', 'orphan', '2024-01-01')"
        )
        conn.execute("SET session_replication_role = DEFAULT")
        conn.execute(
            "INSERT INTO summaries (agent_id, summary, first_message_id, last_message_id, "
            "created_at)"
            " VALUES ('ada', 'covers nothing of ada''s', 1, 999999, '2024-01-01')"
        )
    broken = initialised("--json", "doctor", "--repair")
    assert broken.exit_code == 1
    checks, details = _checks(broken), _details(broken)
    assert checks["foreign keys"] == "fail" and checks["references"] == "fail"
    assert (
        "1 row(s) of messages reference missing agents (messages_agent_id_fkey)"
        in details["foreign keys"]
    )
    assert "--repair leaves them" in details["foreign keys"]
    assert "1 summaries covering messages that are not their agent's" in details["references"]
    assert "a summary's message range it leaves" in details["references"]


@pytest.mark.postgres
def test_amcheck_the_user_may_not_install_is_a_warning(
    postgres_cluster: PostgresCluster, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database owned by an ordinary user who may not create extensions (nor, here, schemas):
    everything else is checked, and the two warnings say why."""
    _sql(postgres_cluster.url(), "DROP ROLE IF EXISTS plain_owner", "CREATE ROLE plain_owner LOGIN")
    url = postgres_cluster.database_url("plain")
    name = url.rsplit("/", 1)[1]
    try:
        _sql(
            url,
            f"ALTER DATABASE {name} OWNER TO plain_owner",
            "ALTER SCHEMA public OWNER TO plain_owner",
        )
        monkeypatch.setenv(
            "MEMORY_DATABASE_URL",
            f"postgresql://plain_owner@127.0.0.1:{postgres_cluster.port}/{name}",
        )
        assert run("--agent", "ada", "init").exit_code == 0
        _sql(
            url, f"REVOKE CREATE ON DATABASE {name} FROM plain_owner"
        )  # nor a scratch schema for the reference
        result = run("--json", "doctor")
        assert result.exit_code == 0, result.output
        checks, details = _checks(result), _details(result)
        warned = {"b-tree indexes (amcheck)", "schema reference"}
        assert {checks[name] for name in warned} == {"warn"}
        assert "permission denied" in details["b-tree indexes (amcheck)"]
        assert "permission denied" in details["schema reference"]
        assert {status for check, status in checks.items() if check not in warned} == {"ok"}
    finally:
        postgres_cluster.drop(url)
        _sql(postgres_cluster.url(), "DROP ROLE plain_owner")


@pytest.mark.postgres
def test_a_newer_schema_is_named_and_nothing_else_touched(postgres: str, initialised: Run) -> None:
    _sql(postgres, f"UPDATE {VERSION_TABLE} SET version = {PG_SCHEMA_VERSION + 1}")
    for args in (("doctor",), ("doctor", "--repair")):
        result = initialised("--json", *args)
        assert result.exit_code == 1
        assert _checks(result) == {
            "postgresql server": "ok",
            "schema version": "fail",
            "file modes": "ok",
        }
        assert "newer than this memory-agent" in _details(result)["schema version"]
    with _connect(postgres) as conn:
        assert conn.execute(f"SELECT version FROM {VERSION_TABLE}").fetchall() == [
            (PG_SCHEMA_VERSION + 1,)
        ]


@pytest.mark.postgres
def test_an_unreachable_server_is_one_failed_check(
    postgres_cluster: PostgresCluster, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_DATABASE_URL", "postgresql://someone:pw@127.0.0.1:1/nowhere")
    result = run("--json", "doctor")
    assert result.exit_code == 1
    assert _checks(result) == {"postgresql server": "fail", "file modes": "ok"}
    detail = _details(result)["postgresql server"]
    assert (
        "cannot reach postgresql://someone:***@127.0.0.1:1/nowhere" in detail
        and "pw@" not in result.stdout
    )
