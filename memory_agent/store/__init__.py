"""Storage: the `Store` protocol and its two engines (SQLite, PostgreSQL), migrations, the journal
and keyword search."""

from .database import Database, utc_now
from .migrations import SCHEMA_VERSION
from .protocol import Connection, Store

__all__ = ["SCHEMA_VERSION", "Connection", "Database", "Store", "utc_now"]
