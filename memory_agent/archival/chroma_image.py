"""A new embedded Chroma directory starts from a copy of the first one this process made.

Why: a Chroma client opened on an empty directory creates `chroma.sqlite3` and runs Chroma's own
migrations on it, about 10 ms more CPU than opening a directory that has one (16 against 7 ms
here), paid for every store a process creates. The file a fresh client leaves holds Chroma's
bookkeeping alone (its migrations, the default tenant and database), the same for every
directory, so the first such file a process makes is kept in memory and written as the next new
directory's `chroma.sqlite3` (`store/whole_file.py`: never over a file another process made).

It is kept only if it is that and nothing more: read through SQLite (a consistent copy even if
another process is writing), and refused when any table outside the bookkeeping holds a row, so a
collection, segment or vector of one store can never reach another. A Chroma version whose fresh
file has other rows just goes without the copy.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

from ..store.whole_file import put_whole

__all__ = ["CHROMA_FILE", "place_fresh_file", "remember_fresh_file"]

logger = logging.getLogger(__name__)

CHROMA_FILE = "chroma.sqlite3"

BOOKKEEPING = frozenset(
    {
        "migrations",
        "tenants",
        "databases",
        "acquire_write",
        "embeddings_queue_config",
        "embedding_fulltext_search_config",
        "embedding_fulltext_search_data",
    }
)
"""Tables a fresh `chroma.sqlite3` may hold rows in; a row anywhere else refuses the copy."""

_lock = threading.Lock()
_image: bytes | None = None


def place_fresh_file(directory: Path) -> bool:
    """Write the kept fresh file into `directory` if it has no `chroma.sqlite3` yet; whether it
    was written."""
    image = _image
    return image is not None and put_whole(directory / CHROMA_FILE, image)


def remember_fresh_file(directory: Path) -> None:
    """Keep `directory`'s `chroma.sqlite3`, which a client has just created, as the fresh file,
    if none is kept yet and it holds Chroma's bookkeeping alone."""
    global _image
    if _image is not None:
        return
    image = _fresh_copy(directory / CHROMA_FILE)
    if image is not None:
        with _lock:
            _image = _image or image


def _fresh_copy(path: Path) -> bytes | None:
    try:
        source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, OSError):
        return None
    try:
        if not hasattr(source, "serialize"):
            return None
        image = bytes(source.serialize())
    except sqlite3.Error as error:
        logger.debug("no copy of a fresh Chroma file (%s)", error)
        return None
    finally:
        source.close()
    return image if only_bookkeeping(image) else None


def only_bookkeeping(image: bytes) -> bool:
    """Whether the database `image` holds rows in Chroma's bookkeeping tables alone."""
    check = sqlite3.connect(":memory:")
    try:
        if not hasattr(check, "deserialize"):
            return False
        check.deserialize(image)
        if check.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            return False
        tables = [
            name
            for (name,) in check.execute(
                "SELECT name FROM sqlite_master"
                " WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
            )
        ]
        for name in tables:
            quoted = name.replace('"', '""')
            if name not in BOOKKEEPING and check.execute(f'SELECT 1 FROM "{quoted}"').fetchone():
                return False
        return True
    except sqlite3.Error:
        return False
    finally:
        check.close()
