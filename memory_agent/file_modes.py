"""Owner-only files: the storage dir is 0700 and every file memory-agent creates in it 0600.

Memory holds whatever the user told the agent, so nobody else on the machine should read it,
whatever the process's umask (0o022 would make new files world-readable, 0o000 world-writable).
The database file is created here with its mode before SQLite opens it; SQLite gives its -wal and
-shm files the database's mode. Files made by others' code (Chroma's) are tightened after they
write. `loose_entries` is what `doctor` reports and `tighten` what `doctor --repair` does.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "loose_entries", "private_dir", "private_file", "tighten"]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
_OTHERS = 0o077  # group and other bits: none of them belongs on memory's files


def private_dir(path: Path) -> Path:
    """Create the directory (and missing parents) if absent; one created here is 0700 whatever
    the umask. An existing directory is left as it is (`doctor` reports a loose one)."""
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            return path  # made meanwhile by another process, or a file (the caller's open reports it)
        os.chmod(path, PRIVATE_DIR)  # mkdir's mode is filtered by the umask; this is not
    return path


def private_file(path: Path) -> None:
    """Create an empty file 0600 if it does not exist (never truncates, never changes an existing one)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return
    try:
        os.fchmod(descriptor, PRIVATE_FILE)
    finally:
        os.close(descriptor)


def loose_entries(root: Path) -> list[tuple[Path, int]]:
    """`root` and everything under it that group or others may use: (path, permission bits)."""
    found: list[tuple[Path, int]] = []
    if not root.exists():
        return found
    for path in (root, *sorted(root.rglob("*"))):
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue  # removed while we looked
        if not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & _OTHERS:
            found.append((path, stat.S_IMODE(mode)))
    return found


def tighten(root: Path) -> list[Path]:
    """Remove group and other permissions from `root` and everything under it; returns what changed."""
    changed: list[Path] = []
    for path, mode in loose_entries(root):
        try:
            os.chmod(path, mode & ~_OTHERS)
        except OSError:
            continue  # not ours to change (another owner): doctor still reports it
        changed.append(path)
    return changed
