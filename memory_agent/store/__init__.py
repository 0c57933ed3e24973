"""SQLite storage: the database, its migrations, the journal and FTS query handling."""

from .database import Database, utc_now
from .migrations import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "Database", "utc_now"]
