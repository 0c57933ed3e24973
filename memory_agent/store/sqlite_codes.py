"""SQLite's primary result codes that `storage_error` tells apart.

The `sqlite3` module exposes them only from Python 3.11, and this project supports 3.10; the
numbers are part of SQLite's stable C API (https://sqlite.org/rescode.html).
"""

from __future__ import annotations

__all__ = [
    "SQLITE_CANTOPEN",
    "SQLITE_CORRUPT",
    "SQLITE_FULL",
    "SQLITE_IOERR",
    "SQLITE_NOTADB",
    "SQLITE_READONLY",
]

SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26
