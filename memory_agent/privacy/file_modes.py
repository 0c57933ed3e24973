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

__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "ModeGuard",
    "loose_entries",
    "private_dir",
    "private_file",
    "tighten",
]

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
            return (
                path  # made meanwhile by another process, or a file (the caller's open reports it)
            )
        os.chmod(path, PRIVATE_DIR)  # mkdir's mode is filtered by the umask; this is not
    return path


def private_file(path: Path) -> None:
    """Create an empty file 0600 if it does not exist (never truncates, never changes an existing
    one)."""
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
    """Remove group and other permissions from `root` and everything under it; returns what
    changed."""
    changed: list[Path] = []
    for path, mode in loose_entries(root):
        try:
            os.chmod(path, mode & ~_OTHERS)
        except OSError:
            continue  # not ours to change (another owner): doctor still reports it
        changed.append(path)
    return changed


class ModeGuard:
    """Keeps a directory tree that another library writes into (Chroma's) owner-only, cheaply
    enough to run after every write: a directory whose modification time has not changed since
    the last sweep gained no entry, so only changed directories are listed again (a sweep of an
    unchanged tree is one stat() per directory). Files rewritten in place keep their mode."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._seen: dict[
            str, tuple[int, list[str]]
        ] = {}  # directory -> (mtime_ns, its subdirectories)

    def sweep(self) -> None:
        stack = [os.fspath(self.root)]
        while stack:
            directory = stack.pop()
            try:
                found = os.stat(directory)
            except OSError:
                self._seen.pop(directory, None)
                continue
            cached = self._seen.get(directory)
            if cached is not None and cached[0] == found.st_mtime_ns:
                stack.extend(cached[1])
                continue
            _tighten_one(directory, found.st_mode)
            subdirectories: list[str] = []
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            subdirectories.append(entry.path)
                        elif not entry.is_symlink():
                            _tighten_one(entry.path, entry.stat(follow_symlinks=False).st_mode)
            except OSError:
                continue  # removed meanwhile: the next sweep sees what is there
            self._seen[directory] = (found.st_mtime_ns, subdirectories)
            stack.extend(subdirectories)


def _tighten_one(path: str, mode: int) -> None:
    if stat.S_IMODE(mode) & _OTHERS:
        try:
            os.chmod(path, stat.S_IMODE(mode) & ~_OTHERS)
        except OSError:
            pass  # not ours to change: doctor reports it
