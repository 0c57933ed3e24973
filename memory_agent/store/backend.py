"""Which database a storage dir uses: SQLite in the dir (the default) or a PostgreSQL server.

The choice is made once, here, from the database URL (`MEMORY_DATABASE_URL`, the CLI's
`--database-url`, `MemoryManager(database_url=...)`); everything above the store sees the same
`Store` protocol (`store.protocol`) either way.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigurationError
from ..privacy.encryption_key import EncryptionKey
from ..privacy.redaction import redact_url
from ..validation import check_path
from .database import DATABASE_FILENAME, Database
from .postgres import PostgresDatabase, is_postgres_url
from .protocol import Store

__all__ = ["open_store"]


def open_store(
    storage_dir: Path,
    database_url: str | None = None,
    *,
    create: bool = True,
    encryption_key: EncryptionKey | None = None,
) -> Store:
    """The store for `storage_dir`: the PostgreSQL server at `database_url`, else its SQLite file.

    Without `create`, a PostgreSQL database where memory-agent never ran is an error (SQLite's
    equivalent, a missing file, is checked by the caller, which knows the storage dir's rules).

    Typed as the `Store` protocol, which both engines implement (mypy checks it; the conformance
    suite, tests/integration/test_store_protocol.py, holds them to the same behaviour).

    `encryption_key` encrypts the SQLite file (see `store.cipher`); a PostgreSQL server encrypts
    its data at rest itself (docs/encryption.md), so there the key only keeps text out of the
    vector store, which is the vector store's business, and is not used here."""
    storage_dir = check_path("The storage dir", storage_dir)
    if not database_url:
        return Database(storage_dir / DATABASE_FILENAME, encryption_key=encryption_key)
    if not is_postgres_url(database_url):
        raise ConfigurationError(
            f"MEMORY_DATABASE_URL must be a postgresql:// URL, got {redact_url(database_url)!r}. "
            "Leave it unset to keep SQLite in the storage dir."
        )
    return PostgresDatabase(database_url, Path(storage_dir), create=create)
