"""A file put in place whole or not at all, and never over one that is there.

Why: a new store's files can be written from a ready image instead of built step by step
(`store/new_store_image.py`, `archival/chroma_image.py`), but another process may be creating the
same file at that moment, or already have it open. The bytes go to a file of their own beside the
target, are synced, and are hard-linked to the target's name: a link fails when any file has that
name, so nothing another process made is ever replaced, and no process ever sees the file part
written.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

__all__ = ["put_whole"]

logger = logging.getLogger(__name__)


def put_whole(path: Path, data: bytes) -> bool:
    """Write `data` as the new file `path` (mode 0600) if no file of that name exists; whether it
    was written. Any failure (no hard links on this file system, no permission, a full disk)
    writes nothing and answers False: the caller then makes the file its ordinary way."""
    if os.path.lexists(path):
        return False
    try:
        descriptor, staged = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.new-")
    except OSError:
        return False
    try:
        with os.fdopen(descriptor, "wb") as handle:  # mkstemp's mode: owner-only
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(staged, path)
    except FileExistsError:
        return False  # another process made the file first: it is used as it is
    except OSError as error:
        logger.debug("%s was not put in place whole (%s)", path, error)
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(staged)
    _sync_directory(path.parent)
    return True


def _sync_directory(directory: Path) -> None:
    """Make the new name durable: after a crash the file is there whole or not at all."""
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
