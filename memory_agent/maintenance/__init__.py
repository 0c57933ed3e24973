"""Looking after a storage dir: its agents (create, open, delete, re-encrypt) and `doctor`'s
checks and repairs on SQLite and PostgreSQL."""
