"""A file put in place whole or not at all, and never over one that is there.

Why: a new store's files can be written from a ready image instead of built step by step
(`store/new_store_image.py`, `archival/chroma_image.py`), but another process may be creating the
same file at that moment, or already have it open. The bytes go to a file with no name yet
(`O_TMPFILE`), are synced, and the file is then linked to the target's name: a link fails when any
file has that name, so nothing another process made is ever replaced, no process ever sees the
file part written, and a crash leaves no second name behind. Where the system has no unnamed
files (not Linux, or a file system without them), nothing is put and the caller makes the file
its ordinary way.

A log or journal left beside a missing file (`-wal`, `-journal`) also means nothing is put: SQLite
would replay it into the new file, where its ordinary open of a missing file sets it aside.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

__all__ = ["free_for", "fsync_path", "put_whole"]

logger = logging.getLogger(__name__)

LEFTOVERS = ("-wal", "-journal")
"""SQLite's files beside a database that, found without it, keep a new one from being put."""


def free_for(path: Path) -> bool:
    """Whether `put_whole` may write `path`: neither it nor a leftover log of it exists. Callers
    ask first so as not to make their data for a file that is there (the usual case)."""
    return not any(os.path.lexists(f"{path}{suffix}") for suffix in ("", *LEFTOVERS))


def put_whole(path: Path, data: bytes) -> bool:
    """Write `data` as the new file `path` (mode 0600) if it is `free_for` it; whether it was
    written. Any failure (no unnamed files, no permission, a full disk) writes nothing and answers
    False."""
    if not free_for(path):
        return False
    unnamed = getattr(os, "O_TMPFILE", None)
    if unnamed is None:
        return False
    try:
        descriptors = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False  # no /proc: an unnamed file could not be given a name
    try:
        descriptor = os.open(path.parent, unnamed | os.O_WRONLY, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            # linkat(AT_SYMLINK_FOLLOW) on the descriptor's entry: the unnamed file gets `path`.
            os.link(str(handle.fileno()), path, src_dir_fd=descriptors, follow_symlinks=True)
    except FileExistsError:
        return False  # another process made the file first: it is used as it is
    except OSError as error:
        logger.debug("%s was not put in place whole (%s)", path, error)
        return False  # no unnamed files here, no permission, a full disk: nothing was written
    finally:
        os.close(descriptors)
    with contextlib.suppress(OSError):
        fsync_path(path.parent)  # the new name durable: after a crash, the whole file or none
    return True


def fsync_path(path: Path) -> None:
    """Sync a file or a directory (a directory's entries: a rename or link made durable)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
