"""A new SQLite store put in place whole, at the current schema, instead of migrated step by step.

Why: running every migration on a new file costs about 14 ms of CPU (SQLite reloads the whole
schema after each of some twenty ALTER TABLEs), paid for every store a process creates: a test
suite, a college of agents in one process, each storage dir a CLI makes. The migrations stay the
one definition of the schema: a process runs them once, on a database in memory, and writes that
database's bytes as each new file it makes (`store/whole_file.py`: never over a file another
process made, never seen part written).

Anything that does not go this way (an encrypted store, a file or a leftover log already there, a
system without unnamed files, an interpreter without `sqlite3.Connection.serialize`) takes the
ordinary path: SQLite creates the file and `migrate` runs on it, as before.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
from pathlib import Path

from ..errors import StorageError
from .migrations import migrate
from .whole_file import free_for, put_whole

__all__ = ["migrated_image", "place_new_store"]

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
    """Put an empty, migrated database at `path` if nothing is there (no file, no leftover log:
    `store/whole_file.py`); whether it was put. The caller opens `path` as usual either way."""
    if not free_for(path):
        return False  # an existing store (most opens): no image is made for it
    image = migrated_image()
    return image is not None and put_whole(path, image)
