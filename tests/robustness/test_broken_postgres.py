"""A PostgreSQL server that fails is named in one clear error, and loses or doubles nothing.

The counterparts of test_broken_storage.py's SQLite-file failures, built for real on a cluster of
this module's own (the session's server is shared, and these tests stop it, cut its connections,
make it read-only and fill its disk): a server not running, a host that does not resolve, a
refused password, a missing database; connections cut between and during writes, including the
moment of COMMIT (through a TCP relay that drops the connection at that byte); a restart; a
read-only database and a role that may only SELECT; a full disk (a tablespace on a small tmpfs).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from robustness_helpers import cli_run, observer, one_line_error

from memory_agent import MemoryManager, StorageError, WriteOutcomeUnknownError
from memory_agent.store import postgres
from memory_agent.store.snapshot import store_snapshot
from memory_agent.testing.postgres_cluster import PostgresCluster

pytestmark = pytest.mark.postgres

SECRET = "s3cret-Pa55word"


@pytest.fixture(scope="module")
def cluster(postgres_cluster: PostgresCluster) -> Iterator[PostgresCluster]:
    """A server of this module's own (the session's one proves the binaries and driver work), with
    durable commits: the throwaway default (synchronous_commit off) may lose the last commits in
    a crash, and one test crashes it."""
    import psycopg

    own = PostgresCluster().start()
    with psycopg.connect(own.url(), autocommit=True) as admin:
        admin.execute(f"ALTER ROLE {own.user} SET synchronous_commit = on")
    yield own
    own.stop()


@pytest.fixture
def admin(cluster: PostgresCluster) -> Iterator[object]:
    import psycopg

    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        yield conn


@pytest.fixture
def url(cluster: PostgresCluster) -> Iterator[str]:
    made = cluster.database_url("broken")
    yield made
    cluster.drop(made)


def terminate(admin: object, url: str) -> int:
    """End every server process connected to the database of `url` (as an admin or a restart
    would)."""
    rows = admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "  # type: ignore[attr-defined]
        "WHERE datname = %s AND pid <> pg_backend_pid()",
        (url.rsplit("/", 1)[1],),
    ).fetchall()
    return len(rows)


# ----- a server that cannot be reached ------------------------------------------------------------


@pytest.fixture(scope="module")
def password_user(cluster: PostgresCluster) -> str:
    """A role that must give its password (scram), ahead of the cluster's trust rule."""
    import psycopg

    with psycopg.connect(cluster.url(), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE keeper LOGIN PASSWORD '{SECRET}'")
        hba = cluster.data / "pg_hba.conf"
        hba.write_text("host all keeper 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        admin.execute("SELECT pg_reload_conf()")
    return "keeper"


def _stopped_server_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # free, so nothing listens once the probe closes


@pytest.mark.parametrize(
    "case", ["no server", "unknown host", "wrong password", "missing database"]
)
def test_a_server_that_cannot_be_reached_is_one_clear_error(
    case: str, cluster: PostgresCluster, password_user: str, tmp_path: Path
) -> None:
    port = cluster.port
    url, host, database, expected = {
        "no server": (
            f"postgresql://keeper:{SECRET}@127.0.0.1:{_stopped_server_port()}/memory",
            "127.0.0.1",
            "memory",
            "start the server",
        ),
        "unknown host": (
            f"postgresql://keeper:{SECRET}@db.invalid/memory",
            "db.invalid",
            "memory",
            "does not resolve",
        ),
        "wrong password": (
            f"postgresql://keeper:{SECRET}x@127.0.0.1:{port}/postgres",
            "127.0.0.1",
            "postgres",
            "correct the user or password",
        ),
        "missing database": (
            f"postgresql://keeper:{SECRET}@127.0.0.1:{port}/no_such_db",
            "127.0.0.1",
            "no_such_db",
            "Create it (createdb",
        ),
    }[case]
    with pytest.raises(StorageError) as caught:
        MemoryManager(tmp_path / "store", agent_id="ada", database_url=url)
    message = str(caught.value)
    assert f"database '{database}' on {host}" in message and expected in message, message
    assert SECRET not in message and "Traceback" not in message

    error = one_line_error(
        cli_run("--storage-dir", str(tmp_path / "store"), "--database-url", url, "blocks", "list")
    )
    assert (
        f"database '{database}' on {host}" in error and expected in error and SECRET not in error
    ), error
    assert not (tmp_path / "store" / "memory.db").exists()  # no SQLite store was made instead


def test_the_right_password_opens_the_store(
    cluster: PostgresCluster, admin: object, password_user: str, tmp_path: Path
) -> None:
    """The refusal above is about the password: the same user with the right one gets in."""
    name = f"kept_{uuid.uuid4().hex[:8]}"
    admin.execute(f"CREATE DATABASE {name} OWNER keeper")  # type: ignore[attr-defined]
    try:
        url = f"postgresql://keeper:{SECRET}@127.0.0.1:{cluster.port}/{name}"
        with MemoryManager(tmp_path, agent_id="ada", database_url=url) as memory:
            memory.core_memory_append("human", "opened")
            assert SECRET not in repr(memory.db)
    finally:
        cluster.drop(cluster.url(name))


# ----- connections cut between and during writes
# ----------------------------------------------------


def test_connections_cut_between_writes_lose_and_double_nothing(
    url: str, admin: object, tmp_path: Path
) -> None:
    with MemoryManager(tmp_path, agent_id="ada", database_url=url) as memory:
        for n in range(20):
            assert terminate(admin, url) >= 1
            memory.core_memory_append(
                "human", f"fact {n}"
            )  # the BEGIN on a dead connection is sent again
            memory.store_message("user", f"message {n}")
        value = memory.get_block("human").value
        assert [value.count(f"fact {n}\n") + value.endswith(f"fact {n}") for n in range(20)] == [
            1
        ] * 20
        texts = [m.text for m in memory.get_recent_messages(100)]
        assert texts == [f"message {n}" for n in range(20)]


def test_a_connection_cut_inside_a_write_writes_none_of_it(
    url: str, admin: object, tmp_path: Path
) -> None:
    with (
        MemoryManager(tmp_path, agent_id="ada", database_url=url) as memory,
        observer(tmp_path, url) as witness,
    ):
        before = store_snapshot(witness)
        with pytest.raises(StorageError, match="Nothing was written"), memory.atomic():
            memory.core_memory_append("human", "first half")
            terminate(admin, url)
            memory.core_memory_append("human", "second half")
        assert store_snapshot(witness) == before
        memory.core_memory_append("human", "after")  # the next call reconnects
        assert memory.get_block("human").value.count("after") == 1
        assert "half" not in memory.get_block("human").value


class Relay:
    """A TCP relay between the client and the server that can cut the connection at one message:
    the network failing at the worst moment, made repeatable."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.cut_at: tuple[str, bytes] | None = None
        self.cuts = 0
        self.down_after_cut = 0.0
        """Seconds the relay refuses new connections after a cut (the server unreachable for a
        while)."""
        self._down_until = 0.0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if time.monotonic() < self._down_until:
                client.close()
                continue
            server = socket.create_connection(("127.0.0.1", self.target))
            for source, sink, direction in ((client, server, "up"), (server, client, "down")):
                threading.Thread(
                    target=self._pump, args=(source, sink, direction, (client, server)), daemon=True
                ).start()

    def _pump(
        self,
        source: socket.socket,
        sink: socket.socket,
        direction: str,
        pair: tuple[socket.socket, socket.socket],
    ) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if (
                    self.cut_at is not None
                    and self.cut_at[0] == direction
                    and self.cut_at[1] in data
                ):
                    self.cut_at, self.cuts = None, self.cuts + 1
                    self._down_until = time.monotonic() + self.down_after_cut
                    break  # the message is never delivered
                sink.sendall(data)
        for end in pair:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def wait_until_up(self) -> None:
        """Return once the relay accepts connections again (its time down after a cut is over)."""
        time.sleep(max(0.0, self._down_until - time.monotonic()))

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def relay(cluster: PostgresCluster) -> Iterator[Relay]:
    through = Relay(cluster.port)
    yield through
    through.close()


COMMIT_SENT = b"COMMIT\x00"  # the client's COMMIT statement
COMMIT_DONE = b"C\x00\x00\x00\x0bCOMMIT\x00"  # the server's CommandComplete for it


def test_a_commit_whose_answer_is_lost_counts_once(url: str, relay: Relay, tmp_path: Path) -> None:
    relayed = url.replace(f":{relay.target}/", f":{relay.port}/")
    with MemoryManager(tmp_path, agent_id="ada", database_url=relayed) as memory:
        relay.cut_at = ("down", COMMIT_DONE)  # the server committed; its answer never arrives
        memory.core_memory_append("human", "exactly once")
        assert relay.cuts == 1
        assert memory.get_block("human").value.count("exactly once") == 1
        history = memory.block_history("human")
        assert len(history) == 2 and history[-1].value.count("exactly once") == 1


def test_a_lost_commit_answer_is_looked_up_once_the_server_is_back(
    url: str, relay: Relay, tmp_path: Path
) -> None:
    """A restart cuts connections at COMMIT and refuses new ones for a moment: the lookup keeps
    asking until the server answers (within COMMIT_SETTLE_S), so the write counts once, no error."""
    relayed = url.replace(f":{relay.target}/", f":{relay.port}/")
    with MemoryManager(tmp_path, agent_id="ada", database_url=relayed) as memory:
        relay.cut_at, relay.down_after_cut = ("down", COMMIT_DONE), 0.5
        memory.core_memory_append("human", "exactly once")
        assert relay.cuts == 1
        assert memory.get_block("human").value.count("exactly once") == 1


def test_an_unknowable_commit_is_its_own_error_and_looking_first_avoids_a_double(
    url: str, relay: Relay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unreachable past the lookup's patience: WriteOutcomeUnknownError (a StorageError), whose
    advice, look before repeating, is what keeps a retrying caller from writing twice."""
    monkeypatch.setattr(postgres, "COMMIT_SETTLE_S", 0.2)
    relayed = url.replace(f":{relay.target}/", f":{relay.port}/")
    with MemoryManager(tmp_path, agent_id="ada", database_url=relayed) as memory:
        relay.cut_at, relay.down_after_cut = ("down", COMMIT_DONE), 1.2
        with pytest.raises(WriteOutcomeUnknownError, match="Check .* before repeating it"):
            memory.core_memory_append("human", "maybe")
        relay.wait_until_up()
        if "maybe" not in memory.get_block("human").value:  # the caller looks first, as advised
            memory.core_memory_append("human", "maybe")
        assert memory.get_block("human").value.count("maybe") == 1


def test_a_commit_that_never_arrives_is_reported_as_not_written(
    url: str, relay: Relay, tmp_path: Path
) -> None:
    relayed = url.replace(f":{relay.target}/", f":{relay.port}/")
    with (
        MemoryManager(tmp_path, agent_id="ada", database_url=relayed) as memory,
        observer(tmp_path, url) as witness,
    ):
        before = store_snapshot(witness)
        relay.cut_at = ("up", COMMIT_SENT)  # the COMMIT is lost on the way: the server rolls back
        with pytest.raises(StorageError, match="rolled the write back, so nothing was written"):
            memory.core_memory_append("human", "lost")
        assert relay.cuts == 1
        assert store_snapshot(witness) == before
        memory.core_memory_append("human", "again")
        assert "lost" not in memory.get_block("human").value


def test_a_server_restart_between_writes_is_invisible_and_a_stopped_server_is_named(
    url: str, cluster: PostgresCluster, tmp_path: Path
) -> None:
    with MemoryManager(tmp_path, agent_id="ada", database_url=url) as memory:
        memory.core_memory_append("human", "before the restart")
        cluster.stop_server("fast")
        cluster.start_server()
        assert memory.get_block("human").value.endswith("before the restart")
        memory.core_memory_append("human", "after the restart")
        cluster.stop_server("immediate")  # a crash: no goodbye to the clients
        try:
            with pytest.raises(StorageError, match="No PostgreSQL server is listening"):
                memory.core_memory_append("human", "while down")
            with pytest.raises(StorageError, match="No PostgreSQL server is listening"):
                memory.get_block("human")
        finally:
            cluster.start_server()
        value = memory.get_block("human").value
        assert value.endswith("before the restart\nafter the restart") and "while down" not in value


# ----- a server that will not take writes --------------------------------------------------------


@pytest.mark.parametrize("how", ["read-only database", "select-only role"])
def test_a_read_only_server_or_role_reads_and_names_the_refusal(
    how: str, url: str, admin: object, cluster: PostgresCluster, tmp_path: Path
) -> None:
    with MemoryManager(tmp_path, agent_id="ada", database_url=url) as memory:
        memory.core_memory_append("human", "written before")
    name = url.rsplit("/", 1)[1]
    reader_url = url
    if how == "read-only database":
        admin.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")  # type: ignore[attr-defined]
    else:
        role = f"reader_{uuid.uuid4().hex[:8]}"
        admin.execute(f"CREATE ROLE {role} LOGIN")  # type: ignore[attr-defined]
        with contextlib.closing(__import__("psycopg").connect(url, autocommit=True)) as owner:
            owner.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        reader_url = url.replace("postgresql://postgres@", f"postgresql://{role}@")
    with observer(tmp_path, url) as witness:
        before = store_snapshot(witness)
        with MemoryManager(tmp_path, agent_id="ada", database_url=reader_url) as memory:
            assert memory.get_block("human").value.endswith("written before")
            with pytest.raises(StorageError, match="read-only"):
                memory.core_memory_append("human", "refused")
            outcome = memory.execute_tool(
                "core_memory_append", {"label": "human", "content": "refused"}
            )
            assert outcome.is_error and "read-only" in outcome.text
        listed = cli_run(
            "--storage-dir",
            str(tmp_path),
            "--database-url",
            reader_url,
            "--agent",
            "ada",
            "blocks",
            "show",
            "human",
        )
        assert listed.exit_code == 0 and "written before" in listed.stdout
        error = one_line_error(
            cli_run(
                "--storage-dir",
                str(tmp_path),
                "--database-url",
                reader_url,
                "--agent",
                "ada",
                "blocks",
                "append",
                "human",
                "refused",
            )
        )
        assert "read-only" in error and f"{name}" in error
        assert store_snapshot(witness) == before
    if how == "read-only database":
        admin.execute(f"ALTER DATABASE {name} RESET default_transaction_read_only")  # type: ignore[attr-defined]


# ----- a full disk --------------------------------------------------------------------------------


@contextlib.contextmanager
def small_tmpfs_for_postgres(size: str) -> Iterator[Path]:
    """A tmpfs of `size` the server's user owns (needs root and a kernel that lets us mount)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    where = Path(tempfile.mkdtemp(prefix="memory-agent-full-"))
    account = pwd.getpwnam("postgres")
    mounted = subprocess.run(
        [
            "mount",
            "-t",
            "tmpfs",
            "-o",
            f"size={size},uid={account.pw_uid},gid={account.pw_gid},mode=0700",
            "tmpfs",
            str(where),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        shutil.rmtree(where, ignore_errors=True)
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        shutil.rmtree(where, ignore_errors=True)


def test_a_full_disk_says_disk_full_and_recovers_when_space_returns(
    cluster: PostgresCluster, admin: object, tmp_path: Path
) -> None:
    name = f"full_{uuid.uuid4().hex[:8]}"
    with small_tmpfs_for_postgres("24m") as mount:
        admin.execute(f"CREATE TABLESPACE {name} LOCATION '{mount}'")  # type: ignore[attr-defined]
        admin.execute(f"CREATE DATABASE {name} TABLESPACE {name}")  # type: ignore[attr-defined]
        url = cluster.url(name)
        try:
            with (
                MemoryManager(tmp_path, agent_id="ada", database_url=url) as memory,
                observer(tmp_path, url) as witness,
            ):
                memory.create_block("big", "", limit=10**7)
                before = store_snapshot(witness)
                filler = mount / "filler"
                with contextlib.suppress(OSError), filler.open("wb") as handle:
                    while True:
                        handle.write(os.urandom(65536))
                        handle.flush()
                big = os.urandom(
                    400_000
                ).hex()  # incompressible: TOAST cannot shrink it into the space left
                with pytest.raises(StorageError, match="disk full"):
                    memory.update_block("big", value=big)
                outcome = memory.execute_tool(
                    "core_memory_append", {"label": "big", "content": big}
                )
                assert outcome.is_error and "disk full" in outcome.text
                assert store_snapshot(witness) == before
                filler.unlink()
                assert memory.update_block("big", value=big).version == 2
                assert memory.get_block("big").value == big
        finally:
            cluster.drop(url)
            admin.execute(f"DROP TABLESPACE IF EXISTS {name}")  # type: ignore[attr-defined]
