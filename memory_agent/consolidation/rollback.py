"""Undoing a consolidation session: every block and passage it changed goes back, in one
transaction, or nothing does.

The session's changes are the journal entries it authored (`Author.consolidator(session_id)`)
between its start and finish markers, which only the engine writes (an imported row or a
person's `--author` cannot make an entry the session's own).
For each item they touched, the value before the session's first change is restored: a block's
text (as a new version: history only grows), a passage's `superseded_by`, tags, metadata,
provenance (their stored JSON text comes back byte for byte), importance and expiry, and passages
the session created are deleted. If any later journal entry (anyone's) touched one of those items,
the rollback is refused with an error naming the item, and nothing changes: a rollback never
loses a later edit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..archival import lifecycle
from ..authors import Author, acting_as
from ..errors import ConsolidationError, RollbackRefusedError
from ..store import consolidation_log
from ..store.consolidation_log import ConsolidationSession
from ..store.database import utc_now
from ..store.protocol import Connection
from .ops import MemoryOps

__all__ = ["ROLLBACK_ACTION", "rollback_session"]

ROLLBACK_ACTION = "rollback_consolidation"
_RESTORABLE = {
    "superseded_by",
    "tags",
    "metadata",
    "provenance",
    "importance",
    "expires_at",
    "sensitivity",
}


@dataclass
class _Item:
    """One block or passage the session touched."""

    target_type: str
    target_id: str
    label: str | None
    first_old_value: str | None
    last_entry: int
    created: bool = False
    old_columns: dict[str, Any] = field(default_factory=dict)


def rollback_session(ops: MemoryOps, session_id: str) -> ConsolidationSession:
    """Restore what session `session_id` changed (see the module docstring).

    The checks run inside the same write transaction as the restores, so no edit can slip in
    between the check for later edits and the rollback."""
    with ops.atomic():
        with ops.database.transaction() as conn:
            session = _finished_session(conn, session_id)
            items = _items(conn, session_id, _own_entries(conn, session_id))
            for item in items:
                _refuse_if_edited_later(conn, session_id, item)
        with acting_as(Author.consolidator(f"{session_id}:rollback")):
            for item in items:
                if item.target_type == "block":
                    _restore_block(ops, session.agent_id, item)
                elif not item.created:
                    _restore_passage(ops, session.agent_id, session_id, item)
            for item in items:
                if item.target_type == "passage" and item.created:
                    ops.archival_memory_delete(item.target_id, agent_id=session.agent_id)
        with ops.database.transaction() as conn:
            consolidation_log.mark_rolled_back(conn, session_id, utc_now())
            rolled_back = consolidation_log.read_row(conn, session_id)
    assert rolled_back is not None
    return rolled_back


def _finished_session(conn: Connection, session_id: str) -> ConsolidationSession:
    session = consolidation_log.read_row(conn, session_id)
    if session is None:
        raise ConsolidationError(
            f"No consolidation session '{session_id}'; nothing was changed. "
            "List them with 'memory-agent consolidations list'."
        )
    if session.status == "rolled_back":
        raise ConsolidationError(
            f"Consolidation {session_id} was already rolled back at "
            f"{session.rolled_back_at}; nothing was changed."
        )
    if session.status == "running":
        raise ConsolidationError(
            f"Consolidation {session_id} is still running (or its process died before "
            "it finished); nothing was changed. Try again when it has finished."
        )
    return session


def _refuse_if_edited_later(conn: Connection, session_id: str, item: _Item) -> None:
    later = conn.execute(
        "SELECT action, author_kind, author, created_at FROM journal WHERE target_type = ? AND "
        "target_id = ?"
        " AND entry_id > ? ORDER BY entry_id LIMIT 1",
        (item.target_type, item.target_id, item.last_entry),
    ).fetchone()
    if later is not None:
        who = (
            f"{later['author_kind']} {later['author']}"
            if later["author_kind"]
            else "an unknown author"
        )
        raise RollbackRefusedError(
            session_id, _name(item), f"{later['action']} by {who} at {later['created_at']}"
        )
    unknown = set(item.old_columns) - _RESTORABLE
    if unknown:
        raise ConsolidationError(
            f"Consolidation {session_id} changed {', '.join(sorted(unknown))} of "
            f"{_name(item)}, which a rollback cannot restore; nothing was changed."
        )


def _name(item: _Item) -> str:
    if item.target_type == "block":
        return f"block '{item.label}' ({item.target_id})"
    return f"passage {item.target_id}"


def _own_entries(conn: Connection, session_id: str) -> tuple[int, int]:
    """The journal entry ids between the session's start and finish markers (only the engine writes
    them): an entry outside them that names the session as author (imported, say) is not its own."""
    bounds = consolidation_log.session_entry_range(conn, session_id)
    if bounds is None or bounds[1] is None:
        raise ConsolidationError(
            f"Consolidation {session_id} has no journal markers of its start and finish, so "
            "its own changes cannot be told from entries that only claim its name; nothing "
            "was changed. Undo its changes by hand ('memory-agent journal')."
        )
    return bounds[0], bounds[1]


def _items(conn: Connection, session_id: str, bounds: tuple[int, int]) -> list[_Item]:
    """The items the session touched, in the order it first touched them, with their old state."""
    items: dict[tuple[str, str], _Item] = {}
    rows = conn.execute(
        "SELECT entry_id, action, target_type, target_id, label, old_value FROM journal"
        " WHERE author_kind = 'consolidator' AND author = ? AND entry_id > ? AND entry_id < ?"
        " ORDER BY entry_id",
        (session_id, *bounds),
    ).fetchall()
    for row in rows:
        if row["target_type"] not in ("block", "passage") or row["target_id"] is None:
            continue
        key = (row["target_type"], row["target_id"])
        item = items.get(key)
        if item is None:
            item = items[key] = _Item(
                row["target_type"],
                row["target_id"],
                row["label"],
                row["old_value"],
                row["entry_id"],
                created=row["action"] == "insert_passage",
            )
        item.last_entry = row["entry_id"]
        item.label = row["label"] or item.label
        if (
            row["target_type"] == "passage"
            and row["action"] != "insert_passage"
            and row["old_value"]
        ):
            for column, value in json.loads(row["old_value"]).items():
                item.old_columns.setdefault(column, value)
    return list(items.values())


def _restore_block(ops: MemoryOps, agent_id: str, item: _Item) -> None:
    assert item.label is not None
    block = ops.get_block(item.label, agent_id=agent_id)
    if block.block_id != item.target_id:
        raise ConsolidationError(
            f"Block '{item.label}' of agent '{agent_id}' is no longer the block the session "
            "changed; nothing was changed."
        )
    old = item.first_old_value or ""
    ops.edit_block(
        item.label,
        lambda _block: old,
        action=ROLLBACK_ACTION,
        expected_version=block.version,
        agent_id=agent_id,
    )


def _restore_passage(ops: MemoryOps, agent_id: str, session_id: str, item: _Item) -> None:
    columns = item.old_columns
    detail = {"rollback_of": session_id}
    if "superseded_by" in columns:
        old = columns["superseded_by"]
        if old is None:
            ops.restore_passage(item.target_id, agent_id=agent_id, journal_detail=detail)
        else:
            ops.supersede_passage(item.target_id, old, agent_id=agent_id, journal_detail=detail)
    fields: dict[str, Any] = {}
    if "tags" in columns:
        fields["tags"] = json.loads(columns["tags"])
    if "metadata" in columns:
        fields["metadata"] = _mapping(columns["metadata"])
    if "provenance" in columns:
        fields["provenance"] = _mapping(columns["provenance"])
    if fields:
        ops.update_passage(item.target_id, agent_id=agent_id, journal_detail=detail, **fields)
    if "importance" in columns:
        ops.set_passage_importance(
            item.target_id, columns["importance"], agent_id=agent_id, journal_detail=detail
        )
    if "expires_at" in columns:
        with ops.database.transaction() as conn:
            lifecycle.change_columns(
                conn,
                agent_id,
                item.target_id,
                "restore_passage_expiry",
                {"expires_at": columns["expires_at"]},
                utc_now(),
                detail,
            )
    if "sensitivity" in columns:  # a merge made the survivor as strict as its strictest part
        with ops.database.transaction() as conn:
            lifecycle.change_columns(
                conn,
                agent_id,
                item.target_id,
                "restore_passage_sensitivity",
                {"sensitivity": columns["sensitivity"]},
                utc_now(),
                detail,
            )


def _mapping(text: str | None) -> Mapping[str, Any]:
    return json.loads(text) if text else {}
