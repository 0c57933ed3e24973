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
more than the work itself.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

__all__ = ["PostgresCluster", "PostgresUnavailable", "find_server_binaries"]

SEARCH_DIRS = [Path(f"/usr/lib/postgresql/{v}/bin") for v in (17, 16, 15, 14)]


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here (binaries or driver missing): the reason says which."""


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
        self.start_server()
        return self

    def start_server(self) -> None:
        """Start the server on an initialised cluster (again, after `stop_server`)."""
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root}"
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
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        copy = f" TEMPLATE {_identifier(template)} STRATEGY FILE_COPY" if template else ""
        self._sql(f"CREATE DATABASE {name}{copy}")
        return self.url(name)

    def freeze_as_template(self, url: str) -> str:
        """Turn a database made by `database_url` (its connections closed) into a template nobody
        can connect to, so every copy `database_url(template=...)` makes is the same; its name."""
        name = _identifier(url.rsplit("/", 1)[1])
        self._sql(f"ALTER DATABASE {name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
        return name

    def drop(self, url: str) -> None:
        """Drop a database made by `database_url` (its connections are ended first)."""
        self._sql(f"DROP DATABASE IF EXISTS {_identifier(url.rsplit('/', 1)[1])} WITH (FORCE)")

    def _sql(self, statement: str) -> None:
        """Run one statement on the admin connection, opened again if the server restarted since."""
        import psycopg  # the optional driver: every user of a cluster opens stores with it anyway

        for attempt in (1, 2):
            if self._admin is None or self._admin.closed or self._admin.broken:
                try:
                    self._admin = psycopg.connect(self.url(), autocommit=True, connect_timeout=30)
                except psycopg.Error as error:
                    raise PostgresUnavailable(f"cannot connect to the cluster: {error}") from error
            try:
                self._admin.execute(statement)
                return
            except psycopg.Error as error:
                if attempt == 1 and self._admin.broken:
                    continue  # the server went away and came back (a test restarted it): reconnect
                raise PostgresUnavailable(
                    f"{statement.split(' WITH ')[0]} failed: {error}"
                ) from error

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
