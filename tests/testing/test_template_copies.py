"""TemplateCopies hands out fresh copies of the frozen template and drops the released ones in
batches, on the caller's path; PostgresCluster.drop ends a database however its sessions
behave."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from memory_agent.testing.postgres_cluster import PostgresCluster, TemplateCopies

if TYPE_CHECKING:
    import psycopg

pytestmark = pytest.mark.postgres


def _connect(url: str, *, autocommit: bool = False) -> psycopg.Connection[Any]:
    import psycopg  # the optional driver: without it the postgres_cluster fixture skips first

    return psycopg.connect(url, autocommit=autocommit)


def _databases(cluster: PostgresCluster) -> set[str]:
    with _connect(cluster.url(), autocommit=True) as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database")}


def _name(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_released_copies_are_dropped_a_batch_at_a_time_and_the_rest_at_close(
    postgres_cluster: PostgresCluster, postgres_template: str
) -> None:
    copies = postgres_cluster.copies_ahead(postgres_template, ahead=1)
    try:
        taken = [copies.take() for _ in range(TemplateCopies.DROP_BATCH + 2)]
        assert len({_name(url) for url in taken}) == len(taken)  # never the same copy twice
        for url in taken:
            with _connect(url) as conn:  # a session that has just ended, as after a test
                conn.execute("CREATE TABLE mine (n int)")
        for url in taken[: TemplateCopies.DROP_BATCH - 1]:
            copies.release(url)
        assert {_name(url) for url in taken} <= _databases(postgres_cluster)  # none dropped yet
        copies.release(taken[TemplateCopies.DROP_BATCH - 1])
        left = _databases(postgres_cluster)
        assert not {_name(url) for url in taken[: TemplateCopies.DROP_BATCH]} & left
        assert {_name(url) for url in taken[TemplateCopies.DROP_BATCH :]} <= left
        copies.release(taken[-2])
    finally:
        copies.close()
    left = _databases(postgres_cluster)
    assert _name(taken[-2]) not in left  # released: dropped at close
    assert _name(taken[-1]) in left  # never released: the caller still holds it
    postgres_cluster.drop(taken[-1])


def test_a_drop_ends_a_session_that_does_not_end_by_itself(
    postgres_cluster: PostgresCluster, postgres_template: str
) -> None:
    url = postgres_cluster.database_url(template=postgres_template)
    holder = _connect(url, autocommit=True)
    try:
        postgres_cluster.drop(url)  # waits DROP_WAIT_S for the session, then FORCE ends it
        assert _name(url) not in _databases(postgres_cluster)
        assert _session_is_gone(holder)
    finally:
        holder.close()


def _session_is_gone(conn: psycopg.Connection[Any]) -> bool:
    import psycopg

    try:
        conn.execute("SELECT 1")
    except psycopg.Error:
        return True
    return False
