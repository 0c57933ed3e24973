"""A new embedded Chroma directory starts from a copy of a fresh `chroma.sqlite3`.

Why: a Chroma client opened on an empty directory creates `chroma.sqlite3` and runs Chroma's own
migrations on it, about 10 ms more CPU than opening a directory that has one (16 against 7 ms
here), paid for every store a process creates. The file a fresh client leaves holds Chroma's
bookkeeping alone (its migrations, the default tenant and database), the same for every
directory. So the first time a process needs a new directory, it opens a client on an empty
directory of its own (private, temporary: no other process can write there, so nothing of any
store can be in it), keeps that file's bytes, and writes them as each new directory's
`chroma.sqlite3` (`store/whole_file.py`: never over a file another process made).

The bytes are read through SQLite and kept only if no table outside the bookkeeping holds a row:
a Chroma version whose fresh file is different just goes without the copy.
"""

from __future__ import annotations

import logging
import sqlite3
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from ..store.whole_file import free_for, put_whole

__all__ = ["BOOKKEEPING", "CHROMA_FILE", "only_bookkeeping", "place_fresh_file"]

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
_made = False
_image: bytes | None = None


def place_fresh_file(directory: Path, open_fresh: Callable[[Path], None]) -> bool:
    """Write a fresh `chroma.sqlite3` into `directory` if it has none; whether it was written.

    `open_fresh(scratch)` opens (and releases) a Chroma client on the empty directory `scratch`:
    it is called once per process, for the first new directory."""
    if not free_for(directory / CHROMA_FILE):
        return False
    image = _fresh_image(open_fresh)
    return image is not None and put_whole(directory / CHROMA_FILE, image)


def _fresh_image(open_fresh: Callable[[Path], None]) -> bytes | None:
    global _made, _image
    with _lock:
        if not _made:
            _made = True
            _image = _made_in_private(open_fresh)
        return _image


def _made_in_private(open_fresh: Callable[[Path], None]) -> bytes | None:
    """The file a fresh client leaves in a private temporary directory, if it is bookkeeping
    alone."""
    with tempfile.TemporaryDirectory(prefix="memory-agent-chroma-") as scratch:  # mode 0700
        try:
            open_fresh(Path(scratch))
            source = sqlite3.connect(f"{(Path(scratch) / CHROMA_FILE).as_uri()}?mode=ro", uri=True)
        except Exception as error:  # Chroma's or SQLite's: the copy is an optimisation only
            logger.debug("no fresh Chroma file to copy (%s)", error)
            return None
        try:
            image = bytes(source.serialize()) if hasattr(source, "serialize") else None
        except sqlite3.Error:
            image = None
        finally:
            source.close()
    return image if image is not None and only_bookkeeping(image) else None


def only_bookkeeping(image: bytes) -> bool:
    """Whether the database `image` is sound and holds rows in Chroma's bookkeeping tables
    alone."""
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
