"""What a PostgreSQL failure means for the person or agent who hit it, in one sentence each.

libpq reports a failed connection as text with no SQLSTATE (the server's FATAL message is inside
it), so the connection causes people actually meet are recognised here by their text: nothing
listening, a host name that does not resolve, a refused password, a database or role missing, a
timeout. Failures after connecting carry a SQLSTATE: a read-only server or role and a full disk
get the same words as on SQLite ("read-only", "disk full"), so callers and tests see one kind
of error whatever the backend.

Every message names the server as host, port, database and user, never the password.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import StorageError
from ..privacy.redaction import redact_url, scrub

__all__ = ["Target", "connect_error", "server_condition"]

READ_ONLY_TRANSACTION = "25006"
INSUFFICIENT_PRIVILEGE = "42501"
DISK_FULL = "53100"
OUT_OF_MEMORY = "53200"


class Target:
    """Where a URL points, for messages: host, port, database and user (the password is dropped)."""

    def __init__(self, url: str) -> None:
        try:
            from psycopg.conninfo import conninfo_to_dict

            parts = conninfo_to_dict(url)
        except Exception:  # noqa: BLE001 - a URL libpq cannot parse is reported by connect() itself
            parts = {}
        # libpq's reading of a malformed URL can put part of the password in any field: scrubbed.
        self.host = scrub(str(parts.get("host") or "localhost"), url)
        self.port = scrub(str(parts.get("port") or "5432"), url)
        self.database = scrub(str(parts.get("dbname") or parts.get("user") or ""), url)
        self.user = scrub(str(parts.get("user") or ""), url)

    def __str__(self) -> str:
        return f"database '{self.database}' on {self.host}:{self.port}"


_SERVER_MESSAGE = re.compile(r"FATAL:\s+(.*)")


def connect_error(url: str, target: Target, error: BaseException) -> StorageError:
    """One StorageError for a connection that could not be made: the cause, then what to do.

    libpq's text may quote the URL it could not parse (an IPv6 host missing its bracket) or the
    word of a password it read as a keyword: it is scrubbed of every secret part first."""
    display = redact_url(url)
    text = scrub(str(error), url)
    fatal = _SERVER_MESSAGE.search(text)
    reason = (fatal.group(1) if fatal else text.rsplit("failed: ", 1)[-1]).strip().splitlines()[0]
    if "does not exist" in reason and "database" in reason:
        advice = (
            f"Create it (createdb -h {target.host} -p {target.port} {target.database}, or CREATE "
            "DATABASE), "
            "or correct the database name in MEMORY_DATABASE_URL (--database-url)."
        )
    elif "password authentication failed" in reason or "no password supplied" in reason:
        advice = (
            f"The server refused user '{target.user}' with the password given: correct the user or "
            "password "
            "in MEMORY_DATABASE_URL (--database-url), or in ~/.pgpass."
        )
    elif "role" in reason and "does not exist" in reason:
        advice = (
            f"Create the role '{target.user}' on the server, or correct the user in "
            "MEMORY_DATABASE_URL "
            "(--database-url)."
        )
    elif "no pg_hba.conf entry" in reason:
        advice = (
            "The server does not accept this client, user and database: add a pg_hba.conf "
            "entry on the server."
        )
    elif "Connection refused" in text or "No such file or directory" in text:
        advice = (
            f"No PostgreSQL server is listening at {target.host}:{target.port}: start the server, "
            "or correct "
            "the host and port in MEMORY_DATABASE_URL (--database-url)."
        )
    elif "resolve host" in text or "could not translate host name" in text:
        advice = (
            f"The host name '{target.host}' does not resolve: correct the host in "
            "MEMORY_DATABASE_URL "
            "(--database-url)."
        )
    elif "timeout" in text.lower():
        advice = (
            f"The server at {target.host}:{target.port} did not answer in time: check that it runs "
            "and that "
            "the network lets this host reach it."
        )
    elif "starting up" in reason or "shutting down" in reason or "recovery" in reason:
        advice = "The server is starting, stopping or recovering: try again in a moment."
    elif "connection info string" in text or "URI" in text or "invalid" in text:
        advice = (
            "libpq cannot read the URL: percent-encode special characters of the password (# ? / @ "
            ": and "
            "space), close an IPv6 host's [brackets], and quote keyword values holding spaces."
        )
    else:
        advice = (
            "Check MEMORY_DATABASE_URL (--database-url: host, port, user, database) and that the "
            "server "
            "runs."
        )
    return StorageError(
        f"Cannot connect to PostgreSQL at {display} ({target}, user '{target.user}'): {reason}. "
        f"{advice} Nothing was read or written."
    )


def server_condition(display: str, error: Any) -> StorageError | None:
    """The StorageError for a server that cannot take writes now (read-only, disk full), else
    None."""
    state = getattr(error, "sqlstate", None)
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    if state == READ_ONLY_TRANSACTION:
        return StorageError(
            f"The PostgreSQL database {display} is read-only ({first}); nothing was written. "
            "Point MEMORY_DATABASE_URL at the primary server, or turn off "
            "default_transaction_read_only for this database or role."
        )
    if state == INSUFFICIENT_PRIVILEGE:
        return StorageError(
            f"The PostgreSQL user of {display} lacks a privilege here, so memory is read-only "
            f"(or closed) to it ({first}); nothing was written. Grant it SELECT, INSERT, "
            "UPDATE and DELETE on memory-agent's tables and USAGE on their sequences, or use "
            "a user who has them."
        )
    if state == DISK_FULL or "No space left on device" in str(error):
        return StorageError(
            f"The disk of the PostgreSQL server holding {display} is full (disk full: {first}); "
            "nothing was written. Free space on the server and try again: memory-agent carries on "
            "by itself once there is room."
        )
    if state == OUT_OF_MEMORY:
        return StorageError(
            f"The PostgreSQL server holding {display} ran out of memory ({first}); nothing was "
            "written. Try again, or give the server more memory."
        )
    return None
