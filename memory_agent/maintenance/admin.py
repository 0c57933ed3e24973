"""Administration of a storage dir: which agents it holds, opening one, creating and deleting one.

`MemoryManager(...)` creates whatever it is pointed at (the storage dir, the agent and its default
blocks), which is right for an agent's own code and wrong for a person inspecting memory: a typo in
an agent id must be an error, not a new empty agent. `open_agent` is the strict counterpart: it
opens an existing storage dir and agent, or says which one is missing and what to do.

Deleting an agent removes everything that is only its own in one transaction (its messages,
summaries, passages, attachments, and the blocks no other agent still has attached) and writes a
journal entry; blocks shared with other agents stay with them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..archival import ArchivalMemory, VectorConfig
from ..authors import Author, acting_author
from ..errors import AgentNotFoundError, ConfigurationError, StorageError
from ..manager import DEFAULT_AGENT_KEY, MemoryManager
from ..privacy.encryption_key import EncryptionKey
from ..settings import Settings
from ..snapshots import ImportReport, Snapshot, restore_snapshot, validate_snapshot
from ..store import cipher, journal, passage_fts
from ..store.backend import open_store
from ..store.database import DATABASE_FILENAME, Database, check_not_orphaned, utc_now
from ..store.meta import read_meta, write_meta
from ..store.protocol import Connection, Row, Store

__all__ = [
    "AgentInfo",
    "DATABASE_FILENAME",
    "agent_info",
    "create_agent",
    "default_agent_id",
    "delete_agent",
    "init_storage",
    "list_agent_info",
    "open_agent",
    "open_database",
    "reencrypt_storage",
    "restore_into",
    "set_default_agent",
    "storage_path",
]


@dataclass(frozen=True)
class AgentInfo:
    """One agent of a storage dir, with how much memory it holds."""

    agent_id: str
    name: str | None
    created_at: str
    blocks: int
    messages: int
    passages: int
    summaries: int
    is_default: bool


_INFO_SQL = (
    "SELECT a.agent_id, a.name, a.created_at,"
    " (SELECT COUNT(*) FROM agent_blocks ab WHERE ab.agent_id = a.agent_id) AS blocks,"
    " (SELECT COUNT(*) FROM messages m WHERE m.agent_id = a.agent_id) AS messages,"
    " (SELECT COUNT(*) FROM passages p WHERE p.agent_id = a.agent_id) AS passages,"
    " (SELECT COUNT(*) FROM summaries s WHERE s.agent_id = a.agent_id) AS summaries"
    " FROM agents a"
)


def storage_path(storage_dir: str | Path | None, settings: Settings) -> Path:
    """The storage dir to use: the one given, else PERSIST_DIRECTORY, else ~/.memory_agent."""
    return Path(storage_dir).expanduser() if storage_dir is not None else settings.persist_directory


def open_database(
    storage_dir: Path,
    *,
    create: bool = False,
    database_url: str | None = None,
    encryption_key: EncryptionKey | None = None,
) -> Store:
    """The storage dir's database; without `create`, a missing one is an error, not a new file.

    With a PostgreSQL `database_url` the server holds the data (its schema is created on first use);
    `encryption_key` opens an encrypted SQLite store (see `store.cipher`)."""
    if database_url:
        return open_store(storage_dir, database_url, create=create)
    path = storage_dir / DATABASE_FILENAME
    check_not_orphaned(path)
    if not create and not path.is_file():
        raise StorageError(
            f"No memory-agent storage at {storage_dir}. Create it with 'memory-agent init' (or "
            "start with "
            "'memory-agent chat' or a command that adds memory, such as 'blocks set' or "
            "'remember'), "
            "or point --storage-dir (PERSIST_DIRECTORY) at an existing storage dir."
        )
    return Database(path, encryption_key=encryption_key)


def default_agent_id(db: Store) -> str | None:
    """The agent a storage dir opens when none is named (set by the first MemoryManager)."""
    with db.reading() as conn:
        return read_meta(conn, DEFAULT_AGENT_KEY)


def set_default_agent(db: Store, agent_id: str) -> None:
    """Make `agent_id` the agent opened when none is named."""
    with db.transaction() as conn:
        _require_agent(conn, agent_id)
        write_meta(conn, DEFAULT_AGENT_KEY, agent_id)


def _database_of(source: Store | MemoryManager) -> Store:
    return source.database if isinstance(source, MemoryManager) else source


def list_agent_info(source: Store | MemoryManager) -> list[AgentInfo]:
    """Every agent of the storage dir (of a database, or of an open manager), oldest first."""
    db = _database_of(source)
    default = default_agent_id(db)
    with db.reading() as conn:
        rows = conn.execute(f"{_INFO_SQL} ORDER BY a.created_at, a.agent_id").fetchall()
    return [_info(row, default) for row in rows]


def agent_info(source: Store | MemoryManager, agent_id: str) -> AgentInfo:
    """One agent of the storage dir (of a database, or of an open manager) with its counts."""
    db = _database_of(source)
    default = default_agent_id(db)
    with db.reading() as conn:
        row = conn.execute(f"{_INFO_SQL} WHERE a.agent_id = ?", (agent_id,)).fetchone()
    if row is None:
        raise AgentNotFoundError(agent_id)
    return _info(row, default)


def restore_into(
    snapshot: Snapshot,
    storage_dir: str | Path | None = None,
    *,
    settings: Settings | None = None,
    agent_id: str | None = None,
    embedding_function: Any = None,
    author: Author | None = None,
) -> ImportReport:
    """Write a snapshot into a storage dir (created if needed) as new agents, without opening a
    manager (which would create an agent of its own): `MemoryManager.restore` for a storage dir
    nobody has opened. The snapshot is checked before the store is opened, so a refused one
    creates no store either; the rows are one transaction; the first restored agent becomes the
    default of a storage dir that has none. `embedding_function` is the one the storage dir's
    agents use (default: offline MiniLM)."""
    settings = settings or Settings.from_env()
    directory = storage_path(storage_dir, settings)
    validate_snapshot(snapshot)
    with open_database(
        directory,
        create=True,
        database_url=settings.database_url,
        encryption_key=settings.encryption_key,
    ) as db:
        vectors = VectorConfig.from_settings(settings, directory)
        return restore_snapshot(
            db,
            snapshot,
            lambda: ArchivalMemory(db, vectors, embedding_function),
            agent_id=agent_id,
            author=author,
            default_agent_key=DEFAULT_AGENT_KEY,
        )


def _info(row: Row, default: str | None) -> AgentInfo:
    return AgentInfo(
        agent_id=row["agent_id"],
        name=row["name"],
        created_at=row["created_at"],
        blocks=row["blocks"],
        messages=row["messages"],
        passages=row["passages"],
        summaries=row["summaries"],
        is_default=row["agent_id"] == default,
    )


def open_agent(
    storage_dir: str | Path | None = None,
    agent_id: str | None = None,
    *,
    settings: Settings | None = None,
) -> MemoryManager:
    """A MemoryManager on an existing agent of an existing storage dir; never creates either.

    The agent is `agent_id`, else AGENT_ID, else the storage dir's default agent.
    """
    settings = settings or Settings.from_env()
    directory = storage_path(storage_dir, settings)
    with open_database(
        directory, database_url=settings.database_url, encryption_key=settings.encryption_key
    ) as db:
        chosen = agent_id or settings.agent_id or default_agent_id(db)
        if chosen is None:
            raise ConfigurationError(
                f"The storage dir {directory} has no default agent. Name one with --agent "
                "(see 'memory-agent agents list'), or run 'memory-agent init'."
            )
        agent_info(db, chosen)  # raises AgentNotFoundError
    return MemoryManager(directory, agent_id=chosen, settings=settings)


def init_storage(
    storage_dir: str | Path | None = None,
    agent_id: str | None = None,
    *,
    settings: Settings | None = None,
    persona: str | None = None,
    human: str | None = None,
    make_default: bool = True,
    default_existing: bool = True,
) -> tuple[AgentInfo, bool]:
    """Create the storage dir and the agent if missing (idempotent); returns it and whether it is
    new.

    The agent is `agent_id`, else AGENT_ID, else the default agent, else a generated id; it
    becomes the default agent when the storage dir has none, unless `make_default` is False (the
    offline demo's agent: a later command that names no agent must not land in the demo's memory),
    or the agent already existed and `default_existing` is False.
    """
    settings = settings or Settings.from_env()
    directory = storage_path(storage_dir, settings)
    with open_database(
        directory,
        create=True,
        database_url=settings.database_url,
        encryption_key=settings.encryption_key,
    ) as db:
        chosen = agent_id or settings.agent_id or default_agent_id(db)
        existed = chosen is not None and _agent_exists(db, chosen)
    # `default_existing=False` (a command that only creates what is missing): an agent that was
    # already there is left as it was, so a refused command on it changes nothing.
    with _open_creating(
        directory,
        chosen,
        settings,
        persona,
        human,
        make_default=make_default and (default_existing or not existed),
    ) as memory:
        return agent_info(memory.db, memory.agent_id), not existed


def create_agent(
    storage_dir: str | Path | None,
    agent_id: str,
    *,
    settings: Settings | None = None,
    name: str | None = None,
    persona: str | None = None,
    human: str | None = None,
) -> AgentInfo:
    """Create a new agent with the default blocks; an existing id is refused, not reused."""
    settings = settings or Settings.from_env()
    directory = storage_path(storage_dir, settings)
    if not agent_id.strip():
        raise ConfigurationError("An agent id must not be empty.")
    with open_database(
        directory,
        create=True,
        database_url=settings.database_url,
        encryption_key=settings.encryption_key,
    ) as db:
        if _agent_exists(db, agent_id):
            raise ConfigurationError(
                f"Agent '{agent_id}' already exists in this storage dir. Pick another id, "
                "or delete it first (memory-agent agents delete)."
            )
    with _open_creating(directory, agent_id, settings, persona, human) as memory:
        if name:
            with memory.db.transaction() as conn:
                conn.execute("UPDATE agents SET name = ? WHERE agent_id = ?", (name, agent_id))
        return agent_info(memory.db, agent_id)


def _open_creating(
    directory: Path,
    agent_id: str | None,
    settings: Settings,
    persona: str | None,
    human: str | None,
    *,
    make_default: bool = True,
) -> MemoryManager:
    """A manager that creates the agent (with these first block values) if it is missing."""
    settings = dataclasses.replace(
        settings,
        default_persona=persona or settings.default_persona,
        default_human=human or settings.default_human,
    )
    memory = MemoryManager(directory, agent_id=agent_id, settings=settings)
    if make_default and default_agent_id(memory.db) is None:
        set_default_agent(memory.db, memory.agent_id)
    return memory


def _agent_exists(db: Store, agent_id: str) -> bool:
    with db.reading() as conn:
        return (
            conn.execute("SELECT 1 FROM agents WHERE agent_id = ?", (agent_id,)).fetchone()
            is not None
        )


def delete_agent(db: Store, agent_id: str) -> AgentInfo:
    """Delete the agent and what is only its own (see the module doc); returns what it held.
    Journalled as the current `acting_as` author, else a person (the OS user), as the Python API.

    Its passages' vectors are dropped by the next archival reconcile (they are orphans then;
    searches already ignore them).
    """
    info = agent_info(db, agent_id)
    with db.transaction() as conn:
        block_ids = [
            r[0]
            for r in conn.execute(
                "SELECT block_id FROM agent_blocks WHERE agent_id = ?", (agent_id,)
            )
        ]
        # Cascades: attachments, messages (their FTS rows by trigger), summaries, passages; the
        # agent's own passage index is dropped whole.
        passage_fts.drop_agent_index(conn, agent_id)
        conn.execute("DELETE FROM agents WHERE agent_id = ?", (agent_id,))
        orphans = [
            block_id
            for block_id in block_ids
            if conn.execute(
                "SELECT 1 FROM agent_blocks WHERE block_id = ? LIMIT 1", (block_id,)
            ).fetchone()
            is None
        ]
        conn.executemany("DELETE FROM blocks WHERE block_id = ?", [(b,) for b in orphans])
        conn.execute("DELETE FROM meta WHERE key = ? AND value = ?", (DEFAULT_AGENT_KEY, agent_id))
        journal.record(
            conn,
            author=acting_author() or Author.person(),
            agent_id=agent_id,
            action="delete_agent",
            target_type="agent",
            target_id=agent_id,
            created_at=utc_now(),
            detail={
                "blocks_deleted": len(orphans),
                "messages": info.messages,
                "passages": info.passages,
                "summaries": info.summaries,
            },
        )
    return info


def _require_agent(conn: Connection, agent_id: str) -> None:
    if conn.execute("SELECT 1 FROM agents WHERE agent_id = ?", (agent_id,)).fetchone() is None:
        raise AgentNotFoundError(agent_id)


def reencrypt_storage(
    storage_dir: Path,
    old: EncryptionKey | None,
    new: EncryptionKey | None,
    *,
    database_url: str | None = None,
) -> str:
    """Rewrite the storage dir's SQLite database under `new` (None: plain), read with `old`.

    What `memory-agent rekey` runs: a rotation, the encryption of a plain store, or a decryption.
    Refused for PostgreSQL (the server encrypts its data at rest) and while another process uses
    the store. Returns what was done, in words."""
    if database_url:
        raise ConfigurationError(
            "rekey applies to a SQLite store: on PostgreSQL, encryption at rest is the server's "
            "job "
            "(docs/encryption.md says what to configure)."
        )
    if new is not None and old is not None and new == old:
        raise ConfigurationError(
            "The new key is the key the store already has; nothing was changed."
        )
    path = Path(storage_dir) / DATABASE_FILENAME
    if cipher.store_kind(path) == "absent":
        raise StorageError(
            f"No memory-agent storage at {storage_dir}; there is nothing to re-encrypt."
        )
    cipher.reencrypt(path, old, new)
    if old is None:
        return "encrypted"
    return "decrypted" if new is None else "rekeyed"
