"""A throwaway PostgreSQL server for tests and benchmarks: a real cluster in a temp dir.

`initdb` + `pg_ctl` from the server binaries (Debian's postgresql-15 puts them in
/usr/lib/postgresql/15/bin, off PATH), listening on 127.0.0.1 at a free port with trust
authentication for local connections only, fsync off (a throwaway cluster needs no durability,
and the tests measure behaviour, not disks). PostgreSQL refuses to run as root, so as root the
cluster runs as the `postgres` system user. `database_url()` creates a fresh database per caller,
so tests never see each other's rows; given a template (`freeze_as_template`), the new database
is a copy of it, which is cheaper than running the same migrations again for every test.
Databases are made and dropped with SQL over one admin connection (psycopg, which any use of a
memory-agent store on PostgreSQL needs anyway): starting `createdb`/`dropdb` per database cost
more than the work itself. `copies_ahead` goes one step further for a test suite: a thread makes
the next copies of the template while tests run, so a test does not wait for one (CREATE
DATABASE ... TEMPLATE checkpoints and copies files: most of a PostgreSQL test's setup time when
made on demand).
"""

from __future__ import annotations

import os
import pwd
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

__all__ = ["PostgresCluster", "PostgresUnavailable", "TemplateCopies", "find_server_binaries"]

SESSIONS_ON = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
"""Sessions connected to a database (the admin connection is on another one)."""

SEARCH_DIRS = [Path(f"/usr/lib/postgresql/{v}/bin") for v in (17, 16, 15, 14)]


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here (binaries or driver missing): the reason says
    which."""


def find_server_binaries() -> Path:
    """The directory holding initdb, pg_ctl, createdb and dropdb (PG_BIN overrides the search)."""
    candidates = [Path(os.environ["PG_BIN"])] if os.environ.get("PG_BIN") else []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for directory in [*candidates, *SEARCH_DIRS]:
        if all(
            (directory / program).is_file()
            for program in ("initdb", "pg_ctl", "createdb", "dropdb")
        ):
            return directory
    raise PostgresUnavailable(
        "PostgreSQL server binaries (initdb, pg_ctl) not found; install postgresql-15 "
        "(apt-get install postgresql-15) or set PG_BIN"
    )


def _identifier(name: str) -> str:
    """A database name as made here (letters, digits, underscores), refused otherwise: the name is
    spliced into SQL, since CREATE DATABASE takes no parameters."""
    if not name.replace("_", "").isalnum() or not name.isascii():
        raise ValueError(f"not a database name made by PostgresCluster: {name!r}")
    return name


def _database_of(url: str) -> str:
    """The name of the database a URL made here points at (checked as `_identifier` does)."""
    return _identifier(url.rsplit("/", 1)[1])


def _create_statement(prefix: str, template: str | None) -> tuple[str, str]:
    """A fresh database name and the CREATE DATABASE statement making it (a copy of `template`)."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    copy = f" TEMPLATE {_identifier(template)} STRATEGY FILE_COPY" if template else ""
    return name, f"CREATE DATABASE {name}{copy}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresCluster:
    """Start with `start()`, hand out databases with `database_url()`, end with `stop()`."""

    def __init__(self, base: Path | None = None) -> None:
        self.bin = find_server_binaries()
        self.root = Path(tempfile.mkdtemp(prefix="memory-agent-pg-", dir=base))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = "postgres"
        self._run_as: list[str] = []
        if os.geteuid() == 0:
            try:
                account = pwd.getpwnam("postgres")
            except KeyError as error:
                raise PostgresUnavailable(
                    "running as root and no 'postgres' user to run the server as"
                ) from error
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self._run_as = ["runuser", "-u", "postgres", "--"]
        self.started = False
        self._admin: Any = None

    def _run(self, *args: str) -> None:
        result = subprocess.run(
            [*self._run_as, *args], check=False, capture_output=True, text=True, timeout=120
        )
        if result.returncode != 0:
            raise PostgresUnavailable(
                f"{Path(args[0]).name} failed: {(result.stderr or result.stdout).strip()[-800:]}"
            )

    def start(self) -> PostgresCluster:
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        for attempt in (1, 2, 3):
            try:
                self.start_server()
                return self
            except PostgresUnavailable:
                # The free port found was taken before the server bound it (another process,
                # another pytest-xdist worker starting its own cluster): try another one.
                log = self.root / "server.log"
                taken = log.is_file() and "could not bind" in log.read_text(errors="replace")
                if not taken or attempt == 3:
                    raise
                self.port = _free_port()
        return self

    def start_server(self) -> None:
        """Start the server on an initialised cluster (again, after `stop_server`)."""
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c "
            f"unix_socket_directories={self.root}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
            " -c shared_buffers=64MB"
        )
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        self.started = True

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the server but keep its data (tests of a server that goes away and comes back)."""
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"
        )
        self.started = False

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def database_url(self, prefix: str = "t", *, template: str | None = None) -> str:
        """A new database on this cluster, and its URL: empty, or a copy of `template` (a database
        frozen by `freeze_as_template`)."""
        name, statement = _create_statement(prefix, template)
        self._sql(statement)
        return self.url(name)

    def copies_ahead(self, template: str, ahead: int = 2) -> TemplateCopies:
        """Copies of `template` made in advance by a thread (see `TemplateCopies`)."""
        return TemplateCopies(self, template, ahead)

    def freeze_as_template(self, url: str) -> str:
        """Turn a database made by `database_url` (its connections closed) into a template nobody
        can connect to, so every copy `database_url(template=...)` makes is the same; its name."""
        name = _database_of(url)
        self._sql(f"ALTER DATABASE {name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
        return name

    def drop(self, url: str) -> None:
        """Drop a database made by `database_url` (its connections are ended first).

        Why it first waits for the database's sessions to end: a client that has just closed its
        connection leaves a server process that takes a few milliseconds more to exit, and DROP
        DATABASE, finding it, sleeps 100 ms before it looks again. Asking pg_stat_activity every
        few milliseconds instead made a drop after a test's store closed 10 ms instead of 42 ms
        (30 drops each way, another thread copying the template meanwhile, 2 quiet cores). A
        session that stays past DROP_WAIT_S is ended by the DROP's FORCE as before."""
        name = _database_of(url)
        deadline = time.monotonic() + self.DROP_WAIT_S
        while self._sql(SESSIONS_ON, (name,)) and time.monotonic() < deadline:
            time.sleep(0.003)
        self._sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    DROP_WAIT_S = 1.0
    """How long `drop` waits for a database's sessions to end by themselves."""

    def _sql(self, statement: str, params: tuple[str, ...] | None = None) -> int:
        """Run one statement on the admin connection, opened again if the server restarted since;
        the first column of its first row, if it returns rows, else 0."""
        import psycopg  # the optional driver: every user of a cluster opens stores with it anyway

        for attempt in (1, 2):
            if self._admin is None or self._admin.closed or self._admin.broken:
                try:
                    self._admin = psycopg.connect(self.url(), autocommit=True, connect_timeout=30)
                except psycopg.Error as error:
                    raise PostgresUnavailable(f"cannot connect to the cluster: {error}") from error
            try:
                cursor = self._admin.execute(statement, params)
                row = cursor.fetchone() if cursor.description else None
                return int(row[0]) if row else 0
            except psycopg.Error as error:
                if attempt == 1 and self._admin.broken:
                    continue  # the server went away and came back (a test restarted it): reconnect
                raise PostgresUnavailable(
                    f"{statement.split(' WITH ')[0]} failed: {error}"
                ) from error
        raise AssertionError("unreachable: the second attempt returns or raises")

    def stop(self) -> None:
        """Stop the server and delete the cluster."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if self.started:
            subprocess.run(
                [
                    *self._run_as,
                    str(self.bin / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
                check=False,
                capture_output=True,
                timeout=120,
            )
            self.started = False
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class TemplateCopies:
    """Copies of a frozen template, made ahead of need by a thread of its own.

    `take()` hands out a ready copy (or waits for the one being made, or makes one itself when the
    thread cannot: the server is down, say); `release(url)` gives it back to be dropped. Each copy
    is still a database of its own, a copy of the frozen template, so tests stay as isolated as with
    `database_url(template=...)`; only the waiting moves off the test's path. The thread has its
    own connection, opened again when a test restarts the server under it. Drops stay on the
    caller's path: a DROP DATABASE in the thread, beside the next test, left bytes that test
    forgot readable in its data files after its CHECKPOINT (tests/integration/test_forget.py)."""

    WAIT_S = 20.0
    """How long `take()` waits for the thread before making the copy itself."""

    DROP_BATCH = 16
    """Copies released before they are dropped together (at about 8 MB each, in the cluster's
    folder)."""

    def __init__(self, cluster: PostgresCluster, template: str, ahead: int = 2) -> None:
        self._cluster = cluster
        self._template = _identifier(template)
        self._ready: queue.Queue[str] = queue.Queue()
        self._jobs: queue.Queue[bool] = queue.Queue()  # True: make a copy; False: stop
        self._connection: Any = None
        self._released: list[str] = []
        for _ in range(max(1, ahead)):
            self._jobs.put(True)
        self._thread = threading.Thread(target=self._work, name="pg-template-copies", daemon=True)
        self._thread.start()

    def take(self) -> str:
        """The URL of a fresh copy of the template, the caller's alone."""
        try:
            url = self._ready.get(timeout=self.WAIT_S if self._thread.is_alive() else 0)
        except queue.Empty:
            return self._cluster.database_url(template=self._template)
        self._jobs.put(True)
        return url

    def release(self, url: str) -> None:
        """Give back a copy taken: it is dropped with the next DROP_BATCH released ones.

        Why not at once: a test's connections have just closed, and their server processes take
        a few milliseconds more to exit, which a DROP must wait for (`PostgresCluster.drop`). By
        the time a batch is dropped, the earlier copies' processes are long gone. The batch is
        dropped here, on the caller's path (in a test's teardown), never beside a running test
        (see the class's docstring). A batch that cannot be dropped now (a test stopped the
        server) is tried again with the next one."""
        self._released.append(url)
        if len(self._released) >= self.DROP_BATCH:
            try:
                self._drop_released()
            except PostgresUnavailable:
                pass  # the server is down for now (a test's doing): the next batch tries again

    def _drop_released(self) -> None:
        while self._released:
            self._cluster.drop(self._released[0])
            self._released.pop(0)

    def close(self) -> None:
        """Stop the thread and drop the copies released; copies still unused go with the
        cluster."""
        self._jobs.put(False)
        self._thread.join(timeout=60)
        if self._connection is not None:
            self._connection.close()
        try:
            self._drop_released()
        except PostgresUnavailable:
            pass  # the server is gone: its databases go with the cluster

    def _work(self) -> None:
        while self._jobs.get():
            name, statement = _create_statement("t", self._template)
            if self._run(statement):
                self._ready.put(self._cluster.url(name))
            else:
                self._jobs.put(True)  # try again after the jobs queued meanwhile

    def _run(self, statement: str) -> bool:
        """Run one statement on the thread's connection, reconnecting (the server restarted) and
        retrying a few times; False when it still failed (the copy is then tried again later)."""
        import psycopg

        for attempt in range(5):
            try:
                if self._connection is None or self._connection.closed:
                    self._connection = psycopg.connect(
                        self._cluster.url(), autocommit=True, connect_timeout=10
                    )
                self._connection.execute(statement)
                return True
            except psycopg.Error:
                if self._connection is not None:
                    self._connection.close()
                    self._connection = None
                threading.Event().wait(0.2 * (attempt + 1))
        return False
