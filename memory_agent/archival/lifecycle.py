"""A passage's life after it is written: superseded, restored, re-weighted, re-tagged, expired.

Each change is one short transaction that also journals it. The journal entry's `old_value` and
`new_value` are JSON objects of the raw stored values of the columns that changed (tags and
metadata as their JSON text, importance as a float, ids and times as text or null), so a rollback
writes `old_value` back with `passage_table.update_columns` and gets the row byte for byte.
`detail` carries the caller's extra fields (e.g. who made the change and in which session).

Superseding never deletes: the old passage stays stored, linked to its successor, and search
leaves it out unless asked. Deleting (or purging) a passage that others were superseded by hands
them on to its own successor, or makes them current again when it had none, so no link dangles.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ArchivalError
from ..privacy.sensitivity import Sensitivity, allowed, current_clearance, parse_level
from ..store import journal
from ..store.database import utc_now
from ..store.protocol import Connection, Store
from . import passage_table
from .passages import Passage, check_importance, encode_metadata, encode_provenance, normalise_tags

__all__ = [
    "change_columns",
    "deleted_detail",
    "journal_change",
    "purge_expired",
    "restore",
    "set_importance",
    "set_sensitivity",
    "supersede",
    "unlink_successor",
    "update",
]

Detail = Mapping[str, Any] | None


def journal_change(
    conn: Connection,
    agent_id: str,
    passage_id: str,
    action: str,
    before: Mapping[str, object],
    after: Mapping[str, object],
    now: str,
    detail: Detail,
) -> None:
    """Journal a change of a passage's columns with their raw old and new values."""
    journal.record(
        conn,
        agent_id=agent_id,
        action=action,
        target_type="passage",
        target_id=passage_id,
        old_value=json.dumps(dict(before), ensure_ascii=False, sort_keys=True),
        new_value=json.dumps(dict(after), ensure_ascii=False, sort_keys=True),
        created_at=now,
        detail={**(detail or {}), "columns": sorted(after)},
    )


def change_columns(
    conn: Connection,
    agent_id: str,
    passage_id: str,
    action: str,
    after: Mapping[str, object],
    now: str,
    detail: Detail,
) -> bool:
    """Write the columns that differ and journal them; False (nothing written) when none differ."""
    stored = passage_table.column_values(conn, passage_id)
    changed = {column: value for column, value in after.items() if stored[column] != value}
    if not changed:
        return False
    passage_table.update_columns(conn, passage_id, changed)
    journal_change(
        conn, agent_id, passage_id, action, {c: stored[c] for c in changed}, changed, now, detail
    )
    return True


def _require(conn: Connection, agent_id: str, passage_id: str, what: str) -> Passage:
    passage = passage_table.fetch_one(conn, agent_id, passage_id)
    if passage is None:
        raise ArchivalError(
            f"Agent '{agent_id}' has no archival passage '{passage_id}' ({what}); nothing was "
            "changed. Search or list archival memory for the exact id."
        )
    return passage


def _require_visible(conn: Connection, agent_id: str, passage_id: str, what: str) -> Passage:
    """The passage a change is about: one above the current clearance (`with_clearance`) is missing,
    as for every read, since the change would return it and edit what the caller may not see."""
    passage = passage_table.fetch_one(conn, agent_id, passage_id)
    if passage is None or not allowed(passage.sensitivity, current_clearance()):
        raise ArchivalError(
            f"Agent '{agent_id}' has no archival passage '{passage_id}' it may see ({what}); "
            "nothing was changed. Search or list archival memory for the exact id (with "
            "allow_secret for secret passages)."
        )
    return passage


def supersede(db: Store, agent_id: str, old_id: str, new_id: str, detail: Detail = None) -> Passage:
    """Mark `old_id` as superseded by `new_id`; returns the old passage as now stored."""
    if old_id == new_id:
        raise ArchivalError(f"A passage cannot supersede itself ('{old_id}'); nothing was changed.")
    now = utc_now()
    with db.transaction() as conn:
        passage_table.require_agent(conn, agent_id)
        _require_visible(conn, agent_id, old_id, "the passage to supersede")
        successor = _require(conn, agent_id, new_id, "the successor")
        if successor.expires_at is not None and successor.expires_at <= now:
            raise ArchivalError(
                f"The successor '{new_id}' expired at {successor.expires_at}; an expired passage "
                "cannot replace "
                f"'{old_id}' (search would treat '{old_id}' as current anyway). Nothing was "
                "changed. Supersede "
                "by a passage that is still live."
            )
        chain = passage_table.successor_chain(conn, agent_id, new_id)
        if old_id in chain:
            raise ArchivalError(
                f"'{new_id}' is already superseded (through {' -> '.join(chain)}) by '{old_id}'; "
                "superseding "
                f"'{old_id}' by it would make a cycle. Restore '{new_id}' first. Nothing was "
                "changed."
            )
        change_columns(
            conn, agent_id, old_id, "supersede_passage", {"superseded_by": new_id}, now, detail
        )
        return _require(conn, agent_id, old_id, "after the change")


def restore(db: Store, agent_id: str, passage_id: str, detail: Detail = None) -> Passage:
    """Make a superseded passage current again (its successor stays as it is)."""
    with db.transaction() as conn:
        _require_visible(conn, agent_id, passage_id, "the passage to restore")
        change_columns(
            conn,
            agent_id,
            passage_id,
            "restore_passage",
            {"superseded_by": None},
            utc_now(),
            detail,
        )
        return _require(conn, agent_id, passage_id, "after the change")


def set_importance(
    db: Store, agent_id: str, passage_id: str, importance: float, detail: Detail = None
) -> Passage:
    value = check_importance(importance)
    with db.transaction() as conn:
        _require_visible(conn, agent_id, passage_id, "the passage to re-weight")
        change_columns(
            conn,
            agent_id,
            passage_id,
            "set_passage_importance",
            {"importance": value},
            utc_now(),
            detail,
        )
        return _require(conn, agent_id, passage_id, "after the change")


def update(
    db: Store,
    agent_id: str,
    passage_id: str,
    *,
    tags: Iterable[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    detail: Detail = None,
) -> tuple[Passage, bool]:
    """Replace the given fields (None: leave it); returns the passage and whether its tags changed
    (the caller then rewrites its vector, whose record carries the tags for filtering)."""
    after: dict[str, object] = {}
    if tags is not None:
        after["tags"] = json.dumps(list(normalise_tags(tags)), ensure_ascii=False)
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            raise ArchivalError(
                f"Passage metadata must be a mapping, got {type(metadata).__name__}."
            )
        after["metadata"] = encode_metadata(metadata)
    if provenance is not None:
        after["provenance"] = encode_provenance(provenance)
    with db.transaction() as conn:
        before = _require_visible(conn, agent_id, passage_id, "the passage to update")
        change_columns(conn, agent_id, passage_id, "update_passage", after, utc_now(), detail)
        passage = _require(conn, agent_id, passage_id, "after the change")
        tags_changed = passage.tags != before.tags
        if tags_changed:
            passage_table.mark_pending(conn, [passage_id])
            passage = _require(conn, agent_id, passage_id, "after the change")
    return passage, tags_changed


def set_sensitivity(
    db: Store,
    agent_id: str,
    passage_id: str,
    level: Sensitivity,
    clearance: Sensitivity,
    detail: Detail = None,
) -> Passage:
    """Relabel a passage (journalled as `set_passage_sensitivity` with the old and new level).

    Refused, with nothing changed, when `clearance` does not allow the passage's current level (it
    is then reported missing, as everywhere else). Any new level is allowed: making a passage
    stricter needs no clearance, and lowering one needs the clearance to read it first."""
    parse_level(level)
    with db.transaction() as conn:
        current = passage_table.fetch_one(conn, agent_id, passage_id)
        if current is None or not allowed(current.sensitivity, clearance):
            raise ArchivalError(
                f"Agent '{agent_id}' has no archival passage '{passage_id}' it may see; nothing "
                "was changed. List archival memory for the exact id (with --allow-secret for "
                "secret passages)."
            )
        change_columns(
            conn,
            agent_id,
            passage_id,
            "set_passage_sensitivity",
            {"sensitivity": level},
            utc_now(),
            detail,
        )
        return _require(conn, agent_id, passage_id, "after the change")


def unlink_successor(
    conn: Connection, agent_id: str, passage: Passage, now: str, detail: Detail
) -> None:
    """Before `passage` is deleted: hand the passages it superseded on to its own successor (or make
    them current when it has none), journalled, so no `superseded_by` names a missing passage."""
    for predecessor in passage_table.superseded_by_rows(conn, passage.passage_id):
        successor = (
            passage.superseded_by if passage.superseded_by != predecessor.passage_id else None
        )
        change_columns(
            conn,
            agent_id,
            predecessor.passage_id,
            "supersede_passage",
            {"superseded_by": successor},
            now,
            {**(detail or {}), "reason": f"successor {passage.passage_id} deleted"},
        )


def purge_expired(
    db: Store, agent_id: str | None, detail: Detail = None
) -> dict[str, list[Passage]]:
    """Delete every passage expired by now (of one agent, or of all) in one transaction, journalled
    with everything needed to restore it; returns the deleted passages by agent (the caller removes
    their vectors, every chunk of each)."""
    now = utc_now()
    deleted: dict[str, list[Passage]] = {}
    with db.transaction() as conn:
        if agent_id is not None:
            passage_table.require_agent(conn, agent_id)
        for passage in passage_table.expired_rows(conn, agent_id, now):
            unlink_successor(conn, passage.agent_id, passage, now, detail)
            passage_table.delete_row(conn, passage.agent_id, passage.passage_id)
            journal.record(
                conn,
                agent_id=passage.agent_id,
                action="purge_passage",
                target_type="passage",
                target_id=passage.passage_id,
                old_value=passage.content,
                created_at=now,
                detail={**(detail or {}), **deleted_detail(passage)},
            )
            deleted.setdefault(passage.agent_id, []).append(passage)
    return deleted


def deleted_detail(passage: Passage) -> dict[str, Any]:
    """What a journal entry of a deleted passage keeps besides its content."""
    return {
        "tags": list(passage.tags),
        "metadata": passage.metadata,
        "created_at": passage.created_at,
        "expires_at": passage.expires_at,
        "superseded_by": passage.superseded_by,
        "importance": passage.importance,
        "provenance": passage.provenance,
        "sensitivity": passage.sensitivity,
    }
