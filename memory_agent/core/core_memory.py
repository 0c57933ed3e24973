"""Core memory: blocks attached to agents, and the rules every write to them obeys.

Invariants, whatever the write path:
- a block never holds more characters than its limit; a refused write changes nothing;
- every change is one short transaction that writes the block, a history version and a journal
  entry together, so a crash never leaves one without the others;
- an agent only reaches blocks attached to it (the label is looked up through its attachments);
- no agent holds a label `a` and a label `a/...` together (`a` would be a file and a directory of
  the memory tool's tree): create, attach, rename (of a shared block, for every holder) and
  restore refuse it with `LabelConflictError`;
- model-facing edits honour read-only (the block's flag or this agent's attachment); the owner's
  explicit `update_block` does not;
- `replace` and `rethink` are refused when the block changed since this agent last saw it, so an
  agent never overwrites another agent's edit it has not read;
- a block above the caller's clearance (`memory_agent.privacy.sensitivity`, the innermost
  `with_clearance`: private unless said) is not there for it: not listed, not read, not edited
  (BlockNotFoundError, as for a block the agent does not have).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..authors import Author, acting_author
from ..errors import (
    AgentNotFoundError,
    BlockExistsError,
    BlockLimitExceededError,
    BlockNotAttachedError,
    BlockNotFoundError,
    ConfigurationError,
    LabelConflictError,
    NothingToUndoError,
    ReadOnlyBlockError,
    StaleBlockError,
)
from ..privacy.sensitivity import (
    DEFAULT_LEVEL,
    Sensitivity,
    allowed,
    current_clearance,
    parse_level,
    visible_levels,
)
from ..store import journal
from ..store.database import utc_now
from ..store.protocol import Connection, Row, Store
from ..store.text_copies import replace_text
from .blocks import Block, BlockVersion
from .labels import validate_label

__all__ = [
    "BlockRow",
    "CoreMemory",
    "Edit",
    "VersionRow",
    "block_texts",
    "insert_agent_row",
    "insert_attachment_row",
    "insert_block_row",
    "insert_version_row",
    "purge_agent_row",
    "purge_block_rows",
    "redact_text",
]

_SHOWN_EDIT_ACTIONS = (
    "core_memory_append",
    "core_memory_replace",
    "memory_insert",
    "memory_rethink",
)
"""Model-facing edits whose tool result shows the block's whole new value. The memory tool's
`str_replace` and `insert` answer with a snippet or a line, as Anthropic's tool does, so they
are not among them; nor is any owner's write (create, update, undo, restore)."""

_BLOCK_COLUMNS = (
    "b.block_id, b.label, b.value, b.description, b.char_limit, b.is_shared, b.version,"
    " b.created_at, b.updated_at, b.in_prompt, b.sensitivity, b.read_only AS block_read_only,"
    " ab.read_only AS link_read_only, ab.seen_version"
)


@dataclass(frozen=True)
class Edit:
    """A model-facing edit: how to compute the new value, and which checks apply."""

    action: str
    compute: Callable[[Block], str]
    check_stale: bool = False
    reasoning: str | None = None
    expected_version: int | None = None
    """For a writer that is not the agent (the consolidator): refuse with StaleBlockError unless
    the block is still at the version it read, and do not count the write as seen by the agent
    (its model has not been shown the new value)."""


def _block_from_row(row: Row) -> Block:
    return Block(
        block_id=row["block_id"],
        label=row["label"],
        value=row["value"],
        limit=row["char_limit"],
        read_only=bool(row["block_read_only"] or row["link_read_only"]),
        description=row["description"],
        is_shared=bool(row["is_shared"]),
        version=row["version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        in_prompt=bool(row["in_prompt"]),
        sensitivity=row["sensitivity"],
    )


def _visible_sql(alias: str = "b") -> tuple[str, tuple[str, ...]]:
    """The WHERE fragment keeping the blocks the current clearance allows, and its parameters."""
    levels = visible_levels(current_clearance())
    return f"{alias}.sensitivity IN ({', '.join('?' for _ in levels)})", levels


class CoreMemory:
    """Blocks and attachments in one database; every method names the agent it acts for."""

    def __init__(self, db: Store, *, author: Callable[[], Author | None] = acting_author) -> None:
        """`author` says who acts for each write (the manager's current author); by default the
        innermost `acting_as`."""
        self._db = db
        self._author = author

    # ----- agents -------------------------------------------------------------------------

    def agent_exists(self, agent_id: str) -> bool:
        with self._db.reading() as conn:
            return (
                conn.execute("SELECT 1 FROM agents WHERE agent_id = ?", (agent_id,)).fetchone()
                is not None
            )

    def create_agent(self, agent_id: str, name: str | None = None) -> bool:
        """Create the agent row if missing; returns True when it was created now."""
        now = utc_now()
        with self._db.transaction() as conn:
            created = insert_agent_row(conn, agent_id, name, now)
            if created:
                journal.record(
                    conn,
                    author=self._author(),
                    agent_id=agent_id,
                    action="create_agent",
                    target_type="agent",
                    target_id=agent_id,
                    created_at=now,
                )
            return created

    def _require_agent(self, conn: Connection, agent_id: str) -> None:
        if conn.execute("SELECT 1 FROM agents WHERE agent_id = ?", (agent_id,)).fetchone() is None:
            raise AgentNotFoundError(agent_id)

    # ----- reads --------------------------------------------------------------------------

    def list_blocks(self, agent_id: str) -> list[Block]:
        """The attached blocks the current clearance allows."""
        visible, levels = _visible_sql()
        with self._db.reading() as conn:
            rows = conn.execute(
                f"SELECT {_BLOCK_COLUMNS} FROM agent_blocks ab JOIN blocks b USING (block_id)"
                f" WHERE ab.agent_id = ? AND {visible} ORDER BY ab.attached_at, b.label",
                (agent_id, *levels),
            ).fetchall()
        return [_block_from_row(row) for row in rows]

    def block_sizes(self, agent_id: str) -> dict[str, int]:
        """Each attached block's label and its size in UTF-8 bytes, without reading the values
        into Python (a directory view of thousands of blocks stays cheap); up to the clearance."""
        visible, levels = _visible_sql()
        with self._db.reading() as conn:
            return {
                row[0]: int(row[1])
                for row in conn.execute(
                    "SELECT ab.label, length(CAST(b.value AS BLOB)) FROM agent_blocks ab JOIN "
                    "blocks b"
                    f" USING (block_id) WHERE ab.agent_id = ? AND {visible}",
                    (agent_id, *levels),
                )
            }

    def get_block(self, agent_id: str, label: str) -> Block:
        label = validate_label(label)
        with self._db.reading() as conn:
            return _block_from_row(self._attached_row(conn, agent_id, label))

    def _attached_row(
        self, conn: Connection, agent_id: str, label: str, *, cleared: bool = False
    ) -> Row:
        """The attached block's row; one above the current clearance is missing, unless `cleared`
        (a read-back of what the caller has just written)."""
        row = conn.execute(
            f"SELECT {_BLOCK_COLUMNS} FROM agent_blocks ab JOIN blocks b USING (block_id)"
            " WHERE ab.agent_id = ? AND ab.label = ?",
            (agent_id, label),
        ).fetchone()
        if row is None or not (cleared or allowed(row["sensitivity"], current_clearance())):
            visible, levels = _visible_sql()
            available = [
                r[0]
                for r in conn.execute(
                    "SELECT ab.label FROM agent_blocks ab JOIN blocks b USING (block_id)"
                    f" WHERE ab.agent_id = ? AND {visible} ORDER BY ab.label",
                    (agent_id, *levels),
                )
            ]
            raise BlockNotFoundError(label, agent_id, available)
        return row

    def fingerprint(self, agent_id: str) -> str:
        """Changes whenever any attached block, or the set of attachments, changes: one query."""
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT b.block_id, b.version, b.read_only | ab.read_only, b.in_prompt, b.label, "
                "b.sensitivity"
                " FROM agent_blocks ab JOIN blocks b USING (block_id) WHERE ab.agent_id = ? ORDER "
                "BY b.block_id",
                (agent_id,),
            ).fetchall()
        return ",".join(":".join(str(value) for value in row) for row in rows)

    def changed_by_others(self, agent_id: str, since: Mapping[str, int]) -> list[str]:
        """Ids of attached blocks with a version after `since` (block id -> version) that the
        agent's model did not see whole in a tool result: anything but this agent's
        `_SHOWN_EDIT_ACTIONS` (another agent's edit, the owner's update or undo, a restore, a
        memory-tool edit). A block missing from `since` counts as changed."""
        changed: list[str] = []
        shown_actions = ", ".join("?" * len(_SHOWN_EDIT_ACTIONS))
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT b.block_id, ab.label, b.version FROM agent_blocks ab JOIN blocks b USING "
                "(block_id)"
                " WHERE ab.agent_id = ?",
                (agent_id,),
            ).fetchall()
            for row in rows:
                before = since.get(row["block_id"])
                if before is None:
                    changed.append(row["block_id"])
                elif (
                    row["version"] != before
                    and conn.execute(
                        # Null-safe "written by someone else" spelled in SQL both dialects speak
                        # (SQLite's `IS NOT ?` is a syntax error on PostgreSQL).
                        "SELECT 1 FROM block_history WHERE block_id = ? AND version > ? AND "
                        "version <= ?"
                        " AND (agent_id IS NULL OR agent_id <> ? OR action NOT IN "
                        f"({shown_actions})) LIMIT 1",
                        (row["block_id"], before, row["version"], agent_id, *_SHOWN_EDIT_ACTIONS),
                    ).fetchone()
                    is not None
                ):
                    changed.append(row["block_id"])
        return changed

    def versions(self, agent_id: str) -> dict[str, int]:
        """Each attached block's id and current version."""
        with self._db.reading() as conn:
            return {
                row[0]: int(row[1])
                for row in conn.execute(
                    "SELECT b.block_id, b.version FROM agent_blocks ab JOIN blocks b USING "
                    "(block_id)"
                    " WHERE ab.agent_id = ?",
                    (agent_id,),
                )
            }

    def find_shared_block(self, label: str) -> Block | None:
        """The oldest shared block with this label, if any (used to join shared state)."""
        label = validate_label(label)
        with self._db.reading() as conn:
            row = conn.execute(
                "SELECT b.*, b.read_only AS block_read_only, 0 AS link_read_only, NULL AS "
                "seen_version"
                " FROM blocks b WHERE b.label = ? AND b.is_shared = 1 ORDER BY b.created_at LIMIT "
                "1",
                (label,),
            ).fetchone()
        return None if row is None else _block_from_row(row)

    def history(self, agent_id: str, label: str) -> list[BlockVersion]:
        """Every version of the block, oldest first, with the agent that wrote each."""
        label = validate_label(label)
        with self._db.reading() as conn:
            block_id = self._attached_row(conn, agent_id, label)["block_id"]
            rows = conn.execute(
                "SELECT * FROM block_history WHERE block_id = ? ORDER BY version", (block_id,)
            ).fetchall()
        return [
            BlockVersion(
                block_id=row["block_id"],
                version=row["version"],
                value=row["value"],
                action=row["action"],
                agent_id=row["agent_id"],
                created_at=row["created_at"],
                author_kind=row["author_kind"],
                author=row["author"],
            )
            for row in rows
        ]

    # ----- creating and attaching ---------------------------------------------------------

    def create_block(
        self,
        agent_id: str,
        label: str,
        value: str,
        *,
        limit: int,
        description: str | None = None,
        read_only: bool = False,
        is_shared: bool = False,
        in_prompt: bool = True,
        sensitivity: str = DEFAULT_LEVEL,
    ) -> Block:
        """Create a block owned by `agent_id` and attach it to that agent (at any level: writing a
        secret needs no clearance, reading it back later does)."""
        label = validate_label(label)
        level = parse_level(sensitivity)
        if limit <= 0:
            raise ConfigurationError(
                f"A block limit must be a positive number of characters, got {limit}."
            )
        if len(value) > limit:
            raise BlockLimitExceededError(label, 0, len(value), limit)
        block_id = f"block-{uuid.uuid4().hex}"
        now = utc_now()
        with self._db.transaction() as conn:
            self._require_agent(conn, agent_id)
            if conn.execute(
                "SELECT 1 FROM agent_blocks WHERE agent_id = ? AND label = ?", (agent_id, label)
            ).fetchone():
                raise BlockExistsError(label, agent_id)
            _refuse_path_clash(conn, [agent_id], label)
            insert_block_row(
                conn,
                BlockRow(
                    block_id,
                    label,
                    value,
                    description,
                    limit,
                    read_only,
                    is_shared,
                    in_prompt,
                    agent_id,
                    1,
                    now,
                    now,
                    level,
                ),
            )
            self._save_version(conn, block_id, agent_id, "create", now)
            self._link(conn, agent_id, block_id, label, read_only=False, now=now)
            journal.record(
                conn,
                author=self._author(),
                agent_id=agent_id,
                action="create_block",
                target_type="block",
                target_id=block_id,
                label=label,
                new_value=value,
                created_at=now,
                detail={
                    "limit": limit,
                    "read_only": read_only,
                    "is_shared": is_shared,
                    "in_prompt": in_prompt,
                    "sensitivity": level,
                },
            )
            return _block_from_row(self._attached_row(conn, agent_id, label, cleared=True))

    def attach_block(
        self,
        agent_id: str,
        block_id: str,
        *,
        read_only: bool = False,
        acting_agent_id: str | None = None,
    ) -> Block:
        """Attach an existing block; `read_only` makes it read-only for this agent only."""
        now = utc_now()
        with self._db.transaction() as conn:
            self._require_agent(conn, agent_id)
            row = conn.execute(
                "SELECT label FROM blocks WHERE block_id = ?", (block_id,)
            ).fetchone()
            if row is None:
                raise BlockNotAttachedError(block_id, agent_id)
            label = row["label"]
            existing = conn.execute(
                "SELECT block_id FROM agent_blocks WHERE agent_id = ? AND label = ?",
                (agent_id, label),
            ).fetchone()
            if existing is not None and existing["block_id"] != block_id:
                raise BlockExistsError(label, agent_id)
            if existing is None:
                _refuse_path_clash(conn, [agent_id], label)
                self._link(conn, agent_id, block_id, label, read_only=read_only, now=now)
            else:
                conn.execute(
                    "UPDATE agent_blocks SET read_only = ? WHERE agent_id = ? AND block_id = ?",
                    (int(read_only), agent_id, block_id),
                )
            journal.record(
                conn,
                author=self._author(),
                agent_id=acting_agent_id or agent_id,
                action="attach_block",
                target_type="block",
                target_id=block_id,
                label=label,
                created_at=now,
                detail={"attached_to": agent_id, "read_only": read_only},
            )
            # Attaching needs no clearance (a new agent joins the shared blocks of its settings,
            # secret ones too); what the agent may then read is decided when it reads.
            return _block_from_row(self._attached_row(conn, agent_id, label, cleared=True))

    def detach_block(
        self, agent_id: str, block_id: str, *, acting_agent_id: str | None = None
    ) -> None:
        now = utc_now()
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT label FROM agent_blocks WHERE agent_id = ? AND block_id = ?",
                (agent_id, block_id),
            ).fetchone()
            if row is None:
                raise BlockNotAttachedError(block_id, agent_id)
            conn.execute(
                "DELETE FROM agent_blocks WHERE agent_id = ? AND block_id = ?", (agent_id, block_id)
            )
            journal.record(
                conn,
                author=self._author(),
                agent_id=acting_agent_id or agent_id,
                action="detach_block",
                target_type="block",
                target_id=block_id,
                label=row["label"],
                created_at=now,
                detail={"detached_from": agent_id},
            )

    def delete_block(self, agent_id: str, label: str) -> None:
        """Detach the block from this agent, and delete it once no agent has it attached."""
        label = validate_label(label)
        now = utc_now()
        with self._db.transaction() as conn:
            row = self._attached_row(conn, agent_id, label)
            block_id = row["block_id"]
            conn.execute(
                "DELETE FROM agent_blocks WHERE agent_id = ? AND block_id = ?", (agent_id, block_id)
            )
            still_used = conn.execute(
                "SELECT 1 FROM agent_blocks WHERE block_id = ? LIMIT 1", (block_id,)
            ).fetchone()
            if not still_used:
                conn.execute("DELETE FROM blocks WHERE block_id = ?", (block_id,))
            journal.record(
                conn,
                author=self._author(),
                agent_id=agent_id,
                action="delete_block",
                target_type="block",
                target_id=block_id,
                label=label,
                old_value=row["value"],
                created_at=now,
                detail={
                    "deleted": not still_used,
                    "limit": row["char_limit"],
                    "description": row["description"],
                    "read_only": bool(row["block_read_only"]),
                    "link_read_only": bool(row["link_read_only"]),
                    "is_shared": bool(row["is_shared"]),
                    "in_prompt": bool(row["in_prompt"]),
                    "sensitivity": row["sensitivity"],
                },
            )

    def restore_deleted(self, agent_id: str, label: str) -> Block:
        """Undo this agent's latest delete of `label`.

        A block other agents still hold is attached again, history intact. A block that was
        deleted outright is created again from the journal (its last value, limit, description
        and flags), with a history that starts at a `restore` version. Refused (NothingToUndoError)
        when the agent never deleted a block with that label, or (BlockExistsError) has one again.
        """
        label = validate_label(label)
        now = utc_now()
        with self._db.transaction() as conn:
            self._require_agent(conn, agent_id)
            if conn.execute(
                "SELECT 1 FROM agent_blocks WHERE agent_id = ? AND label = ?", (agent_id, label)
            ).fetchone():
                raise BlockExistsError(label, agent_id)
            entry = conn.execute(
                "SELECT entry_id, target_id, old_value, detail FROM journal WHERE agent_id = ?"
                " AND action = 'delete_block' AND label = ? ORDER BY entry_id DESC LIMIT 1",
                (agent_id, label),
            ).fetchone()
            if entry is None or entry["old_value"] is None:
                raise NothingToUndoError(label)
            _refuse_path_clash(conn, [agent_id], label)
            detail = json.loads(entry["detail"])
            block_id = entry["target_id"]
            kept = conn.execute(
                "SELECT label FROM blocks WHERE block_id = ?", (block_id,)
            ).fetchone()
            if kept is None or kept["label"] != label:
                block_id = f"block-{uuid.uuid4().hex}"
                insert_block_row(
                    conn,
                    BlockRow(
                        block_id,
                        label,
                        entry["old_value"],
                        detail.get("description"),
                        max(int(detail.get("limit") or 0), len(entry["old_value"]), 1),
                        bool(detail.get("read_only")),
                        bool(detail.get("is_shared")),
                        bool(detail.get("in_prompt", True)),
                        agent_id,
                        1,
                        now,
                        now,
                        parse_level(
                            detail.get("sensitivity", DEFAULT_LEVEL),
                            "the deleted block's sensitivity",
                        ),
                    ),
                )
                self._save_version(conn, block_id, agent_id, "restore", now)
            self._link(
                conn,
                agent_id,
                block_id,
                label,
                read_only=bool(detail.get("link_read_only")),
                now=now,
            )
            journal.record(
                conn,
                author=self._author(),
                agent_id=agent_id,
                action="restore_block",
                target_type="block",
                target_id=block_id,
                label=label,
                new_value=entry["old_value"],
                created_at=now,
                detail={
                    "undoes_entry": entry["entry_id"],
                    "recreated": block_id != entry["target_id"],
                },
            )
            return _block_from_row(self._attached_row(conn, agent_id, label))

    def rename_block(self, agent_id: str, label: str, new_label: str) -> Block:
        """Give a block a new label, for every agent it is attached to (a shared block moves for
        all of them). A model-facing change: read-only refuses it, and so does any of those agents
        already having a block with the new label. The version stays; the journal records it."""
        label, new_label = validate_label(label), validate_label(new_label)
        now = utc_now()
        with self._db.transaction() as conn:
            block = _block_from_row(self._attached_row(conn, agent_id, label))
            if block.read_only:
                raise ReadOnlyBlockError(label)
            holders = [
                r[0]
                for r in conn.execute(
                    "SELECT agent_id FROM agent_blocks WHERE block_id = ? ORDER BY agent_id",
                    (block.block_id,),
                )
            ]
            clash = conn.execute(
                "SELECT agent_id FROM agent_blocks WHERE label = ? AND block_id != ? AND agent_id "
                "IN"
                " (SELECT agent_id FROM agent_blocks WHERE block_id = ?) LIMIT 1",
                (new_label, block.block_id, block.block_id),
            ).fetchone()
            if clash is not None:
                raise BlockExistsError(new_label, clash[0])
            _refuse_path_clash(conn, holders, new_label, block.block_id)
            conn.execute(
                "UPDATE blocks SET label = ?, updated_at = ? WHERE block_id = ?",
                (new_label, now, block.block_id),
            )
            conn.execute(
                "UPDATE agent_blocks SET label = ? WHERE block_id = ?", (new_label, block.block_id)
            )
            journal.record(
                conn,
                author=self._author(),
                agent_id=agent_id,
                action="rename_block",
                target_type="block",
                target_id=block.block_id,
                label=new_label,
                created_at=now,
                detail={"old_label": label, "new_label": new_label, "agents": holders},
            )
            return _block_from_row(self._attached_row(conn, agent_id, new_label))

    def _link(
        self,
        conn: Connection,
        agent_id: str,
        block_id: str,
        label: str,
        *,
        read_only: bool,
        now: str,
    ) -> None:
        insert_attachment_row(conn, agent_id, block_id, label, read_only=read_only, attached_at=now)

    # ----- writes -------------------------------------------------------------------------

    def edit(self, agent_id: str, label: str, edit: Edit) -> Block:
        """Apply a model-facing edit: read-only, staleness and the limit are all enforced."""
        label = validate_label(label)
        stale: StaleBlockError | None = None
        with self._db.transaction() as conn:
            row = self._attached_row(conn, agent_id, label)
            block = _block_from_row(row)
            if block.read_only:
                raise ReadOnlyBlockError(label)
            if edit.expected_version is not None and block.version != edit.expected_version:
                stale = StaleBlockError(label, block.value, block.version)
            elif edit.check_stale and self._is_stale(conn, agent_id, block, row["seen_version"]):
                # The refusal shows the current value, so from now on this agent has seen it.
                self._mark_seen(conn, agent_id, block.block_id, block.version)
                stale = StaleBlockError(label, block.value, block.version)
            else:
                new_value = edit.compute(block)
                return self._write(
                    conn,
                    agent_id,
                    block,
                    new_value,
                    edit.action,
                    detail={"reasoning": edit.reasoning} if edit.reasoning else None,
                    mark_seen=edit.expected_version is None,
                )
        raise stale

    def _is_stale(self, conn: Connection, agent_id: str, block: Block, seen: int | None) -> bool:
        """Whether this agent has not seen the block's current version.

        An agent that was never shown the block (attached, never rendered) has seen it only if it
        wrote the current version itself; otherwise a blind rewrite could drop another's edit.
        """
        if seen is not None:
            return bool(seen != block.version)
        author = conn.execute(
            "SELECT agent_id FROM block_history WHERE block_id = ? AND version = ?",
            (block.block_id, block.version),
        ).fetchone()
        return author is None or author["agent_id"] != agent_id

    def update_block(
        self,
        agent_id: str,
        label: str,
        *,
        value: str | None = None,
        description: str | None = None,
        limit: int | None = None,
        read_only: bool | None = None,
        in_prompt: bool | None = None,
        sensitivity: str | None = None,
    ) -> Block:
        """The owner's explicit change: may edit read-only blocks; the limit still holds. A new
        `sensitivity` is journalled on its own (`set_block_sensitivity`, old and new level)."""
        label = validate_label(label)
        level = None if sensitivity is None else parse_level(sensitivity)
        if limit is not None and limit <= 0:
            raise ConfigurationError(
                f"A block limit must be a positive number of characters, got {limit}."
            )
        with self._db.transaction() as conn:
            block = _block_from_row(self._attached_row(conn, agent_id, label))
            new_limit = block.limit if limit is None else limit
            new_value = block.value if value is None else value
            if len(new_value) > new_limit:
                raise BlockLimitExceededError(label, len(block.value), len(new_value), new_limit)
            conn.execute(
                "UPDATE blocks SET description = COALESCE(?, description), char_limit = ?,"
                " read_only = COALESCE(?, read_only), in_prompt = COALESCE(?, in_prompt) WHERE "
                "block_id = ?",
                (
                    description,
                    new_limit,
                    None if read_only is None else int(read_only),
                    None if in_prompt is None else int(in_prompt),
                    block.block_id,
                ),
            )
            if level is not None:
                self._set_level(conn, agent_id, block, level)
            refreshed = _block_from_row(self._attached_row(conn, agent_id, label, cleared=True))
            if level is not None and all(
                item is None for item in (value, description, limit, read_only, in_prompt)
            ):
                return refreshed  # a change of level alone: journalled above, no new version
            return self._write(
                conn,
                agent_id,
                refreshed,
                new_value,
                "update",
                detail={
                    "limit": new_limit,
                    "read_only": read_only,
                    "description": description,
                    "in_prompt": in_prompt,
                },
            )

    def set_sensitivity(self, agent_id: str, label: str, sensitivity: str) -> Block:
        """Relabel a block (for every agent holding it: the level is the block's). The caller must
        be cleared for its current level; any new level is allowed. Journalled; the version
        stays."""
        label = validate_label(label)
        level = parse_level(sensitivity)
        with self._db.transaction() as conn:
            block = _block_from_row(self._attached_row(conn, agent_id, label))
            self._set_level(conn, agent_id, block, level)
            return _block_from_row(self._attached_row(conn, agent_id, label, cleared=True))

    def _set_level(self, conn: Connection, agent_id: str, block: Block, level: Sensitivity) -> None:
        if block.sensitivity == level:
            return
        conn.execute(
            "UPDATE blocks SET sensitivity = ? WHERE block_id = ?", (level, block.block_id)
        )
        journal.record(
            conn,
            author=self._author(),
            agent_id=agent_id,
            action="set_block_sensitivity",
            target_type="block",
            target_id=block.block_id,
            label=block.label,
            old_value=block.sensitivity,
            new_value=level,
            created_at=utc_now(),
        )

    def undo(self, agent_id: str, label: str) -> Block:
        """Restore the version before the current one (repeated undos walk further back)."""
        label = validate_label(label)
        with self._db.transaction() as conn:
            block = _block_from_row(self._attached_row(conn, agent_id, label))
            current = conn.execute(
                "SELECT action FROM block_history WHERE block_id = ? AND version = ?",
                (block.block_id, block.version),
            ).fetchone()
            restored_from = _undo_target(current["action"] if current else "", block.version)
            target = conn.execute(
                "SELECT value FROM block_history WHERE block_id = ? AND version = ?",
                (block.block_id, restored_from),
            ).fetchone()
            if target is None:
                raise NothingToUndoError(label)
            if len(target["value"]) > block.limit:
                raise BlockLimitExceededError(
                    label, len(block.value), len(target["value"]), block.limit
                )
            return self._write(conn, agent_id, block, target["value"], f"undo_to_v{restored_from}")

    def mark_seen(self, agent_id: str, blocks: list[Block]) -> None:
        """Record the versions this agent has just been shown (its system prompt)."""
        if not blocks:
            return
        with self._db.transaction() as conn:
            for block in blocks:
                self._mark_seen(conn, agent_id, block.block_id, block.version)

    def _mark_seen(self, conn: Connection, agent_id: str, block_id: str, version: int) -> None:
        conn.execute(
            "UPDATE agent_blocks SET seen_version = ? WHERE agent_id = ? AND block_id = ?",
            (version, agent_id, block_id),
        )

    def _write(
        self,
        conn: Connection,
        agent_id: str,
        block: Block,
        new_value: str,
        action: str,
        detail: dict[str, object] | None = None,
        *,
        mark_seen: bool = True,
    ) -> Block:
        """The one write path: limit check, new version, history row, journal entry."""
        if len(new_value) > block.limit:
            raise BlockLimitExceededError(
                block.label, len(block.value), len(new_value), block.limit
            )
        now = utc_now()
        conn.execute(
            "UPDATE blocks SET value = ?, version = version + 1, updated_at = ? WHERE block_id = ?",
            (new_value, now, block.block_id),
        )
        self._save_version(conn, block.block_id, agent_id, action, now)
        if mark_seen:
            self._mark_seen(conn, agent_id, block.block_id, block.version + 1)
        journal.record(
            conn,
            author=self._author(),
            agent_id=agent_id,
            action=action,
            target_type="block",
            target_id=block.block_id,
            label=block.label,
            old_value=block.value,
            new_value=new_value,
            created_at=now,
            detail=detail,
        )
        return _block_from_row(self._attached_row(conn, agent_id, block.label, cleared=True))

    def _save_version(
        self, conn: Connection, block_id: str, agent_id: str | None, action: str, now: str
    ) -> None:
        row = conn.execute("SELECT * FROM blocks WHERE block_id = ?", (block_id,)).fetchone()
        insert_version_row(
            conn,
            VersionRow(
                block_id,
                row["version"],
                row["value"],
                row["description"],
                row["char_limit"],
                bool(row["read_only"]),
                agent_id,
                action,
                now,
                author=self._author(),
            ),
        )


_HIDDEN_BLOCK = "(a block above your clearance)"


def _refuse_path_clash(
    conn: Connection, agent_ids: list[str], label: str, block_id: str = ""
) -> None:
    """Refuse `label` for these agents when one of them holds a label that it lies inside, or that
    lies inside it (`block_id`, the block being renamed, does not count)."""
    clearance = current_clearance()
    for agent_id in agent_ids:
        for other, level in conn.execute(
            "SELECT ab.label, b.sensitivity FROM agent_blocks ab JOIN blocks b USING (block_id)"
            " WHERE ab.agent_id = ? AND ab.block_id <> ?",
            (agent_id, block_id),
        ).fetchall():
            # Refused all the same, but a block the caller may not see is not named.
            shown = other if allowed(level, clearance) else _HIDDEN_BLOCK
            if label.startswith(other + "/"):
                raise LabelConflictError(label, agent_id, shown, label)
            if other.startswith(label + "/"):
                raise LabelConflictError(label, agent_id, label, shown)


def _undo_target(current_action: str, current_version: int) -> int:
    """The version an undo restores: one before the current one, or before what it restored."""
    if current_action.startswith("undo_to_v"):
        return int(current_action.removeprefix("undo_to_v")) - 1
    return current_version - 1


# ----- row writers (the live paths above and imports share them) -----------------------------


@dataclass(frozen=True)
class BlockRow:
    """Every column of a `blocks` row."""

    block_id: str
    label: str
    value: str
    description: str | None
    limit: int
    read_only: bool
    is_shared: bool
    in_prompt: bool
    owner_agent_id: str | None
    version: int
    created_at: str
    updated_at: str
    sensitivity: Sensitivity = DEFAULT_LEVEL


@dataclass(frozen=True)
class VersionRow:
    """Every column of a `block_history` row."""

    block_id: str
    version: int
    value: str
    description: str | None
    limit: int
    read_only: bool
    agent_id: str | None
    action: str
    created_at: str
    author: Author | None = None
    """Who wrote this version; None takes the current `acting_as` author (if any)."""


def insert_agent_row(conn: Connection, agent_id: str, name: str | None, created_at: str) -> bool:
    """The one writer of an agent row; False (nothing written) when the agent exists."""
    cursor = conn.execute(
        "INSERT OR IGNORE INTO agents (agent_id, name, created_at) VALUES (?, ?, ?)",
        (agent_id, name, created_at),
    )
    return bool(cursor.rowcount)


def insert_block_row(conn: Connection, row: BlockRow) -> None:
    """The one writer of a block row."""
    conn.execute(
        "INSERT INTO blocks (block_id, label, value, description, char_limit, read_only,"
        " is_shared, in_prompt, owner_agent_id, version, created_at, updated_at, sensitivity)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row.block_id,
            row.label,
            row.value,
            row.description,
            row.limit,
            int(row.read_only),
            int(row.is_shared),
            int(row.in_prompt),
            row.owner_agent_id,
            row.version,
            row.created_at,
            row.updated_at,
            row.sensitivity,
        ),
    )


def insert_attachment_row(
    conn: Connection,
    agent_id: str,
    block_id: str,
    label: str,
    *,
    read_only: bool,
    attached_at: str,
) -> None:
    """The one writer of an `agent_blocks` row (a block attached to an agent under a label)."""
    conn.execute(
        "INSERT INTO agent_blocks (agent_id, block_id, label, read_only, attached_at) VALUES (?, "
        "?, ?, ?, ?)",
        (agent_id, block_id, label, int(read_only), attached_at),
    )


def insert_version_row(conn: Connection, row: VersionRow) -> None:
    """The one writer of a `block_history` row."""
    who = row.author if row.author is not None else acting_author()
    conn.execute(
        "INSERT INTO block_history (block_id, version, value, description, char_limit,"
        " read_only, agent_id, action, created_at, author_kind, author) VALUES (?, ?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?)",
        (
            row.block_id,
            row.version,
            row.value,
            row.description,
            row.limit,
            int(row.read_only),
            row.agent_id,
            row.action,
            row.created_at,
            who.kind if who else None,
            who.name if who else None,
        ),
    )


# ----- forgetting (see memory_agent.forgetting): deletes and rewrites, never inserts --------------


def block_texts(conn: Connection, block_id: str) -> list[str]:
    """Every value the block has held: its current value and each saved version."""
    rows = conn.execute(
        "SELECT value FROM blocks WHERE block_id = ? UNION SELECT value FROM block_history"
        " WHERE block_id = ?",
        (block_id, block_id),
    ).fetchall()
    return [row[0] for row in rows]


def purge_block_rows(conn: Connection, block_id: str) -> tuple[list[str], int]:
    """Delete the block outright: every agent's attachment, its saved versions, the block itself.
    Returns the agents it was attached to and how many versions went. Unjournalled: the caller
    records only that it forgot."""
    agents = [
        row[0]
        for row in conn.execute(
            "SELECT agent_id FROM agent_blocks WHERE block_id = ? ORDER BY agent_id", (block_id,)
        )
    ]
    versions = conn.execute("DELETE FROM block_history WHERE block_id = ?", (block_id,)).rowcount
    conn.execute("DELETE FROM agent_blocks WHERE block_id = ?", (block_id,))
    conn.execute("DELETE FROM blocks WHERE block_id = ?", (block_id,))
    return agents, max(versions, 0)


def redact_text(conn: Connection, texts: list[str], agent_ids: Sequence[str]) -> int:
    """Replace copies of these texts by the mark in the values and saved versions of the blocks
    attached to these agents (never another agent's memory)."""
    marks = ", ".join("?" for _ in agent_ids)
    where = f"AND block_id IN (SELECT block_id FROM agent_blocks WHERE agent_id IN ({marks}))"
    return replace_text(
        conn, "blocks", "value", texts, where=where, params=list(agent_ids)
    ) + replace_text(conn, "block_history", "value", texts, where=where, params=list(agent_ids))


def purge_agent_row(conn: Connection, agent_id: str) -> None:
    """Delete the agent row; its attachments, messages, summaries, passages and consolidation
    sessions go with it by cascade (its passage keyword index must be dropped first)."""
    conn.execute("DELETE FROM agents WHERE agent_id = ?", (agent_id,))
