"""A new SQLite store put in place whole, at the current schema, instead of migrated step by step.

Why: running every migration on a new file costs about 14 ms of CPU (SQLite reloads the whole
schema after each of some twenty ALTER TABLEs), paid for every store a process creates: a test
suite, a college of agents in one process, each storage dir a CLI makes. The migrations stay the
one definition of the schema: a process runs them once, on a database in memory, and copies that
database's bytes into each new file it makes.

The copy is written beside memory.db, synced, and hard-linked into place: a link fails when any
file is there already, so a store another process created meanwhile (even an empty file it has
just opened) is never overwritten. Anything that does not go this way (an encrypted store, a file
or a log already there, a file system without hard links, an interpreter without
`sqlite3.Connection.serialize`) takes the ordinary path: SQLite creates the file and `migrate`
runs on it, as before.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sqlite3
import tempfile
from pathlib import Path

from ..errors import StorageError
from .migrations import migrate

__all__ = ["place_new_store"]

logger = logging.getLogger(__name__)


@functools.cache
def migrated_image() -> bytes | None:
    """The bytes of an empty database at the current schema, made once per process; None when
    this interpreter cannot serialize a database."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        if not hasattr(conn, "serialize"):
            return None
        conn.execute("PRAGMA foreign_keys = ON")  # as a store's own connection migrates

        def begin() -> None:
            conn.execute("BEGIN IMMEDIATE")

        migrate(conn, begin, "A new store's image")
        return bytes(conn.serialize())
    except (sqlite3.Error, StorageError) as error:
        logger.warning("no image for new stores (%s): each is migrated in place", error)
        return None
    finally:
        conn.close()


def place_new_store(path: Path) -> bool:
    """Put an empty, migrated database at `path` if nothing is there (no file, no -wal); whether
    it was put. The caller opens `path` as usual either way."""
    if os.path.lexists(path) or os.path.lexists(f"{path}-wal"):
        return False
    image = migrated_image()
    if image is None:
        return False
    try:
        descriptor, staged = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.new-")
    except OSError:
        return False  # SQLite's own open names the problem (no permission, a full disk, ...)
    try:
        with os.fdopen(descriptor, "wb") as handle:  # mkstemp's mode: 0600, as private_file's
            handle.write(image)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(staged, path)
    except FileExistsError:
        return False  # another process made the store first: it is opened as it is
    except OSError as error:
        logger.debug("a new store's image was not put at %s (%s): migrating in place", path, error)
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(staged)
    _sync_directory(path.parent)
    return True


def _sync_directory(directory: Path) -> None:
    """Make the new name durable: after a crash the store is there whole or not at all."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
