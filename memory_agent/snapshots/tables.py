"""Reading a Snapshot out of the database, and writing one into it, in one transaction each way.

An import is all or nothing: every record is checked before the transaction starts (labels,
limits, references between records), and the rows are written in one transaction, so a bad file
or a conflict leaves the storage dir exactly as it was. Values, limits, versions and timestamps are
kept as they are in the snapshot; ids are kept where the target database does not already use
them. Message and summary ids are the database's own (integers), so they are always new and the
summaries' message ranges are mapped to the new ids. Imported passages are 'pending' until their
vectors are written (see `import_into`), so keyword search finds them at once.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..archival import passage_table
from ..archival.chunks import CHUNK_MARK
from ..archival.passages import NewPassage, PreparedPassage, prepare
from ..archival.timestamps import to_utc_iso
from ..authors import Author, acting_as
from ..conversation.recall import insert_message_row, insert_summary_row
from ..core.core_memory import (
    BlockRow,
    VersionRow,
    insert_agent_row,
    insert_attachment_row,
    insert_block_row,
    insert_version_row,
)
from ..core.labels import validate_label
from ..errors import AgentNotFoundError, ConfigurationError, ImportFormatError, MemoryAgentError
from ..privacy.sensitivity import parse_level
from ..prompt.reserved_names import section_tags_in
from ..store import consolidation_log, journal
from ..store.agent_state import BASE_PROMPT_KEY, LETTA_KEY, write_state
from ..store.database import utc_now
from ..store.meta import read_meta, write_meta
from ..store.protocol import Connection, Row, Store
from ..validation import check_int, check_json
from .records import (
    AgentRecord,
    AttachmentRecord,
    BlockRecord,
    BlockVersionRecord,
    JournalRecord,
    MessageRecord,
    PassageRecord,
    Snapshot,
    SummaryRecord,
)

__all__ = ["ImportReport", "read_snapshot", "validate_snapshot", "write_snapshot"]


@dataclass
class ImportReport:
    """What an import wrote; `renamed_ids` counts blocks and passages given fresh ids."""

    agent_ids: list[str] = field(default_factory=list)
    blocks: int = 0
    messages: int = 0
    summaries: int = 0
    passages: int = 0
    journal_entries: int = 0
    duplicate_passages: int = 0
    """Passages skipped because the same agent already had the same text in the file."""
    renamed_ids: int = 0
    vectors_pending: int = 0
    """Passages whose vectors could not be written yet (keyword search finds them already)."""
    limits_raised: list[dict[str, Any]] = field(default_factory=list)
    """Blocks imported with their limit raised to fit their value: `{"label", "limit",
    "raised_to"}`."""
    unattached_blocks: list[str] = field(default_factory=list)
    """Labels of blocks imported unattached, as the file had them (owned by its first agent)."""
    system_prompts: int = 0
    """Agents imported with a base system prompt of their own."""
    not_imported: dict[str, list[str]] = field(default_factory=dict)
    """What the file held that has no counterpart here, by kind (tools, tool_rules, skills, ...)."""
    tools_provided: list[str] = field(default_factory=list)
    """The file's tools that this project's memory tools provide under the same name."""
    warnings: list[str] = field(default_factory=list)
    """What was imported as it is but deserves a look (a system prompt holding the prompt's own
    section tags, which a model may take for the real sections)."""


# ----- reading ------------------------------------------------------------------------------


@contextmanager
def _consistent_read(db: Store) -> Iterator[Connection]:
    """One read transaction, so every table is read at the same commit."""
    with db.reading() as conn:
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")


def read_snapshot(db: Store, agent_ids: Sequence[str]) -> Snapshot:
    """The named agents' memory (in the order named), with every block attached to any of them
    and the unattached blocks they own."""
    with _consistent_read(db) as conn:
        for agent_id in agent_ids:
            if (
                conn.execute("SELECT 1 FROM agents WHERE agent_id = ?", (agent_id,)).fetchone()
                is None
            ):
                raise AgentNotFoundError(agent_id)
        marks = ", ".join("?" for _ in agent_ids)
        ids = tuple(agent_ids)
        attachments = [
            _attachment(r)
            for r in conn.execute(
                f"SELECT * FROM agent_blocks WHERE agent_id IN ({marks}) ORDER BY attached_at, "
                "rowid",
                ids,
            )
        ]
        blocks = [
            _block(r)
            for r in conn.execute(
                "SELECT * FROM blocks WHERE block_id IN"
                f" (SELECT block_id FROM agent_blocks WHERE agent_id IN ({marks}))"
                f" OR (owner_agent_id IN ({marks}) AND block_id NOT IN (SELECT block_id FROM "
                "agent_blocks))"
                " ORDER BY created_at, rowid",
                ids + ids,
            )
        ]
        block_ids = tuple(block.block_id for block in blocks)
        block_marks = ", ".join("?" for _ in block_ids) or "NULL"
        agents = {
            r["agent_id"]: _agent(r)
            for r in conn.execute(f"SELECT * FROM agents WHERE agent_id IN ({marks})", ids)
        }
        return Snapshot(
            agents=[agents[agent_id] for agent_id in dict.fromkeys(agent_ids)],
            blocks=blocks,
            block_history=[
                _version(r)
                for r in conn.execute(
                    f"SELECT * FROM block_history WHERE block_id IN ({block_marks}) ORDER BY "
                    "history_id",
                    block_ids,
                )
            ],
            attachments=attachments,
            messages=[
                _message(r)
                for r in conn.execute(
                    f"SELECT * FROM messages WHERE agent_id IN ({marks}) ORDER BY message_id", ids
                )
            ],
            summaries=[
                _summary(r)
                for r in conn.execute(
                    f"SELECT * FROM summaries WHERE agent_id IN ({marks}) ORDER BY summary_id", ids
                )
            ],
            passages=[
                _passage(r)
                for r in conn.execute(
                    f"SELECT * FROM passages WHERE agent_id IN ({marks}) ORDER BY passage_rowid",
                    ids,
                )
            ],
            journal=[
                _journal(r)
                for r in conn.execute(
                    f"SELECT * FROM journal WHERE agent_id IN ({marks}) ORDER BY entry_id", ids
                )
            ],
        )


def _agent(row: Row) -> AgentRecord:
    state = json.loads(row["metadata"] or "{}")
    letta = state.get(LETTA_KEY)
    return AgentRecord(
        row["agent_id"],
        row["name"],
        row["created_at"],
        state.get(BASE_PROMPT_KEY),
        letta if isinstance(letta, dict) else {},
    )


def _block(row: Row) -> BlockRecord:
    return BlockRecord(
        block_id=row["block_id"],
        label=row["label"],
        value=row["value"],
        limit=row["char_limit"],
        description=row["description"],
        read_only=bool(row["read_only"]),
        is_shared=bool(row["is_shared"]),
        owner_agent_id=row["owner_agent_id"],
        version=row["version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        in_prompt=bool(row["in_prompt"]),
        sensitivity=row["sensitivity"],
    )


def _version(row: Row) -> BlockVersionRecord:
    return BlockVersionRecord(
        block_id=row["block_id"],
        version=row["version"],
        value=row["value"],
        description=row["description"],
        limit=row["char_limit"],
        read_only=bool(row["read_only"]),
        agent_id=row["agent_id"],
        action=row["action"],
        created_at=row["created_at"],
        author_kind=row["author_kind"],
        author=row["author"],
    )


def _attachment(row: Row) -> AttachmentRecord:
    return AttachmentRecord(
        row["agent_id"], row["block_id"], row["label"], bool(row["read_only"]), row["attached_at"]
    )


def _message(row: Row) -> MessageRecord:
    return MessageRecord(
        message_id=row["message_id"],
        agent_id=row["agent_id"],
        role=row["role"],
        message_type=row["message_type"],
        content=json.loads(row["content"]),
        created_at=row["created_at"],
        in_context=bool(row["in_context"]),
        session_id=row["session_id"],
        turn_id=row["turn_id"],
        sdk_uuid=row["sdk_uuid"],
        token_count=row["token_count"],
        metadata=json.loads(row["metadata"]),
    )


def _summary(row: Row) -> SummaryRecord:
    return SummaryRecord(
        summary_id=row["summary_id"],
        agent_id=row["agent_id"],
        summary=row["summary"],
        first_message_id=row["first_message_id"],
        last_message_id=row["last_message_id"],
        model=row["model"],
        tokens_before=row["tokens_before"],
        tokens_after=row["tokens_after"],
        is_fallback=bool(row["is_fallback"]),
        created_at=row["created_at"],
    )


def _passage(row: Row) -> PassageRecord:
    return PassageRecord(
        row["passage_id"],
        row["agent_id"],
        row["content"],
        json.loads(row["tags"]),
        json.loads(row["metadata"]),
        row["created_at"],
        expires_at=row["expires_at"],
        superseded_by=row["superseded_by"],
        importance=float(row["importance"]),
        access_count=int(row["access_count"]),
        last_accessed_at=row["last_accessed_at"],
        provenance=json.loads(row["provenance"]),
        sensitivity=row["sensitivity"],
        context=row["index_context"],
    )


def _journal(row: Row) -> JournalRecord:
    return JournalRecord(
        agent_id=row["agent_id"],
        action=row["action"],
        target_type=row["target_type"],
        target_id=row["target_id"],
        label=row["label"],
        old_value=row["old_value"],
        new_value=row["new_value"],
        detail=json.loads(row["detail"]),
        created_at=row["created_at"],
        author_kind=row["author_kind"],
        author=row["author"],
    )


# ----- checking -----------------------------------------------------------------------------


def validate_snapshot(snapshot: Snapshot) -> None:
    """Refuse a snapshot that could not be written whole, by the live paths' own rules (labels,
    limits, valid text, whole numbers SQLite holds, ISO times); says which record and why."""
    agents = {agent.agent_id for agent in snapshot.agents}
    if not snapshot.agents:
        raise ImportFormatError("The file holds no agent; there is nothing to import.")
    if len(agents) != len(snapshot.agents) or not all(a.strip() for a in agents):
        raise ImportFormatError("The file's agent ids must be unique and not empty.")
    _check_values(snapshot)
    blocks = {block.block_id: block for block in snapshot.blocks}
    _unique("block", [block.block_id for block in snapshot.blocks])
    _unique("passage", [passage.passage_id for passage in snapshot.passages])
    for block in snapshot.blocks:
        _check_block(block)
    for section in ("block_history", "journal"):
        for index, record in enumerate(getattr(snapshot, section)):
            _recorded_author(record, f"{section}[{index}]")
    for version in snapshot.block_history:
        if version.version < 1:
            raise ImportFormatError(
                f"A history row of block '{version.block_id}' has version {version.version}; "
                "versions start at 1."
            )
        if version.limit <= 0:
            raise ImportFormatError(
                f"Version {version.version} of block '{version.block_id}' has limit "
                f"{version.limit}; a limit is a positive number of characters."
            )
    _check_attachments(snapshot, agents, blocks)
    owners: list[MessageRecord | SummaryRecord | PassageRecord] = [
        *snapshot.messages,
        *snapshot.summaries,
        *snapshot.passages,
    ]
    for record in owners:
        if record.agent_id not in agents:
            raise ImportFormatError(
                f"A {type(record).__name__} names agent '{record.agent_id}', "
                "which the file does not hold."
            )
    for message in snapshot.messages:
        if not isinstance(message.content, (str, list)):
            raise ImportFormatError(
                f"Message {message.message_id} has content that is neither text "
                "nor a list of content blocks."
            )
    _prepared_passages(snapshot)
    message_ids = Counter(
        (message.agent_id, str(message.message_id)) for message in snapshot.messages
    )
    for summary in snapshot.summaries:
        for end in (summary.first_message_id, summary.last_message_id):
            count = message_ids[(summary.agent_id, str(end))]
            if end is not None and count != 1:
                found = "does not hold" if not count else "holds more than once"
                raise ImportFormatError(
                    f"Summary {summary.summary_id} covers message {end}, which the file {found}."
                )


def _check_values(snapshot: Snapshot) -> None:
    """Text, numbers and nesting of every record, and every timestamp (see `validation`)."""
    for section in (
        "agents",
        "blocks",
        "block_history",
        "attachments",
        "messages",
        "summaries",
        "passages",
        "journal",
    ):
        for index, record in enumerate(getattr(snapshot, section)):
            where = f"{section}[{index}]"
            try:
                check_json(
                    where, {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
                )
                for name in ("created_at", "updated_at", "attached_at"):
                    if getattr(record, name, None) is not None:
                        to_utc_iso(getattr(record, name))
            except MemoryAgentError as error:
                raise ImportFormatError(f"{where}: {error}") from None


def _recorded_author(record: BlockVersionRecord | JournalRecord, where: str) -> Author | None:
    """The author a record of the file names (None when it names none: files from before
    authors)."""
    if record.author_kind is None and record.author is None:
        return None
    try:
        return Author(record.author_kind, record.author)  # type: ignore[arg-type]  # checked by Author itself
    except ConfigurationError as error:
        raise ImportFormatError(f"{where}: {error}") from None


def _unique(kind: str, ids: list[str]) -> None:
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise ImportFormatError(
                f"The file holds two {kind}s with id '{item}'; ids must be unique."
            )
        seen.add(item)


def _check_attachments(
    snapshot: Snapshot, agents: set[str], blocks: Mapping[str, BlockRecord]
) -> None:
    labels: set[tuple[str, str]] = set()
    for link in snapshot.attachments:
        if link.agent_id not in agents or link.block_id not in blocks:
            raise ImportFormatError(
                f"Attachment of block '{link.block_id}' to agent '{link.agent_id}' names a block "
                "or agent the file does not hold."
            )
        if link.label != blocks[link.block_id].label:
            raise ImportFormatError(
                f"Attachment of block '{link.block_id}' to agent '{link.agent_id}' has label "
                f"{link.label!r}, but the block's label is {blocks[link.block_id].label!r}."
            )
        if (link.agent_id, link.label) in labels:
            raise ImportFormatError(
                f"Agent '{link.agent_id}' has two blocks labelled '{link.label}'."
            )
        labels.add((link.agent_id, link.label))
    for agent_id, label in sorted(labels):
        segments = label.split("/")
        for depth in range(1, len(segments)):
            if (agent_id, parent := "/".join(segments[:depth])) in labels:
                raise ImportFormatError(
                    f"Agent '{agent_id}' has a block '{parent}' and a block '{label}': '{parent}' "
                    "would be a file "
                    f"and a directory at once. Rename one of them in the file (e.g. '{parent}' to "
                    f"'{parent}/index') before importing it."
                )


def _check_block(block: BlockRecord) -> None:
    try:
        normal = validate_label(block.label)
    except MemoryAgentError as error:
        raise ImportFormatError(f"Block '{block.block_id}': {error}") from None
    if normal != block.label:
        raise ImportFormatError(
            f"Block '{block.block_id}' has label '{block.label}'; write it as "
            f"'{normal}' (labels are stored in their normal form, without empty segments)."
        )
    if not isinstance(block.limit, int) or block.limit <= 0:
        raise ImportFormatError(
            f"Block '{block.label}' has limit {block.limit!r}; a limit is a "
            "positive number of characters."
        )
    if len(block.value) > block.limit:
        raise ImportFormatError(
            f"Block '{block.label}' holds {len(block.value)} characters, over "
            f"its limit of {block.limit}; fix the file before importing it."
        )
    if block.version < 1:
        raise ImportFormatError(
            f"Block '{block.label}' has version {block.version}; versions start at 1."
        )
    try:
        parse_level(block.sensitivity, f"Block '{block.label}' sensitivity")
    except MemoryAgentError as error:  # an unknown level is refused, never imported as some level
        raise ImportFormatError(f"{error} Fix the file; nothing was imported.") from None


# ----- writing ------------------------------------------------------------------------------


@dataclass
class _IdMaps:
    agents: dict[str, str]
    blocks: dict[str, str] = field(default_factory=dict)
    messages: dict[tuple[str, str], int] = field(default_factory=dict)
    """(source agent id, source message id) -> new message id."""
    summaries: dict[str, int] = field(default_factory=dict)
    passages: dict[str, str] = field(default_factory=dict)

    def target(self, target_type: str, target_id: str | None) -> str | None:
        """The new id of a journal entry's target (unchanged when it was not imported)."""
        if target_id is None:
            return None
        tables: dict[str, Mapping[str, object]] = {
            "agent": self.agents,
            "block": self.blocks,
            "passage": self.passages,
            "summary": self.summaries,
        }
        return str(tables.get(target_type, {}).get(target_id, target_id))


def write_snapshot(
    db: Store,
    snapshot: Snapshot,
    *,
    agent_id: str | None = None,
    author: Author | None = None,
    default_agent_key: str | None = None,
) -> ImportReport:
    """Write the snapshot as new agents; `agent_id` renames the file's only agent.

    Refuses (writing nothing) when an agent id is already used in this storage dir. Journal
    entries and block versions keep the author the file gives them; the rest (and the
    `import_agent` entries) are by `author`, `Author.importer("snapshot")` by default. With
    `default_agent_key`, a storage dir without a default agent gets the first imported agent as
    its default (the meta row under that key), in the same transaction as the rows.
    """
    with acting_as(author or Author.importer("snapshot")):
        return _write_snapshot(db, snapshot, agent_id, default_agent_key)


def _write_snapshot(
    db: Store, snapshot: Snapshot, agent_id: str | None, default_agent_key: str | None
) -> ImportReport:
    validate_snapshot(snapshot)
    passages = _prepared_passages(snapshot)
    maps = _IdMaps(_agent_targets(snapshot, agent_id))
    notes = snapshot.notes
    report = ImportReport(
        agent_ids=list(maps.agents.values()),
        limits_raised=list(notes.limits_raised),
        unattached_blocks=list(notes.unattached_blocks),
        not_imported={kind: list(names) for kind, names in notes.not_imported.items()},
        tools_provided=list(notes.tools_provided),
    )
    now = utc_now()
    with db.transaction() as conn:
        _insert_agents(conn, snapshot, maps)
        _insert_blocks(conn, snapshot, maps, report)
        _write_agent_state(conn, snapshot, maps, report)
        _insert_messages(conn, snapshot, maps, report)
        _insert_summaries(conn, snapshot, maps, report)
        _insert_passages(conn, passages, maps, report, now)
        _insert_journal(conn, snapshot, maps, report, now)
        if default_agent_key is not None and read_meta(conn, default_agent_key) is None:
            write_meta(conn, default_agent_key, report.agent_ids[0])
    return report


def _agent_targets(snapshot: Snapshot, agent_id: str | None) -> dict[str, str]:
    if agent_id is None:
        return {agent.agent_id: agent.agent_id for agent in snapshot.agents}
    if len(snapshot.agents) != 1:
        raise ConfigurationError(
            f"The file holds {len(snapshot.agents)} agents; an agent id can only "
            "be chosen when it holds one. Import it without one."
        )
    return {snapshot.agents[0].agent_id: agent_id}


def _insert_agents(conn: Connection, snapshot: Snapshot, maps: _IdMaps) -> None:
    for agent in snapshot.agents:
        target = maps.agents[agent.agent_id]
        if conn.execute("SELECT 1 FROM agents WHERE agent_id = ?", (target,)).fetchone():
            raise ConfigurationError(
                f"Agent '{target}' already exists in this storage dir; nothing was imported. "
                "Import under another id (--agent NEW_ID) or into another storage dir."
            )
        insert_agent_row(conn, target, agent.name, agent.created_at)


def _write_agent_state(
    conn: Connection, snapshot: Snapshot, maps: _IdMaps, report: ImportReport
) -> None:
    """Each agent's base prompt and Letta details, with the agent and block ids its groups name
    mapped to the ones written here."""
    for agent in snapshot.agents:
        if not agent.system_prompt and not agent.letta:
            continue
        target = maps.agents[agent.agent_id]
        letta = dict(agent.letta)
        if isinstance(letta.get("groups"), list):
            letta["groups"] = [
                _mapped_group(group, maps) for group in letta["groups"] if isinstance(group, dict)
            ]
        write_state(
            conn, target, {BASE_PROMPT_KEY: agent.system_prompt or None, LETTA_KEY: letta or None}
        )
        report.system_prompts += bool(agent.system_prompt)
        if tags := section_tags_in(agent.system_prompt or ""):
            report.warnings.append(
                f"The system prompt of agent '{target}' holds "
                f"{', '.join(f'<{tag}>' for tag in tags)}, "
                "a section memory-agent writes itself; a model may take that text for the real "
                "section. "
                "Review the prompt and remove or rename those tags."
            )


def _mapped_group(group: dict[str, Any], maps: _IdMaps) -> dict[str, Any]:
    config = dict(group.get("manager_config") or {})
    if "manager_agent_id" in config:
        config["manager_agent_id"] = maps.agents.get(
            str(config["manager_agent_id"]), config["manager_agent_id"]
        )
    return {
        **group,
        "manager_config": config,
        "agent_ids": [maps.agents.get(str(a), a) for a in group.get("agent_ids") or []],
        "shared_block_ids": [
            maps.blocks.get(str(b), b) for b in group.get("shared_block_ids") or []
        ],
    }


def _free_id(
    conn: Connection,
    table: str,
    column: str,
    wanted: str,
    fresh: Callable[[], str],
    report: ImportReport,
    *,
    taken: bool = False,
) -> str:
    """`wanted` if the table does not use it yet (and it is not `taken` otherwise: a passage id
    with `chunks.CHUNK_MARK` would read as another passage's chunk), else a fresh id."""
    if (
        not taken
        and conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ?", (wanted,)).fetchone() is None
    ):
        return wanted
    report.renamed_ids += 1
    return fresh()


def _insert_blocks(
    conn: Connection, snapshot: Snapshot, maps: _IdMaps, report: ImportReport
) -> None:
    for block in snapshot.blocks:
        new_id = _free_id(
            conn, "blocks", "block_id", block.block_id, lambda: f"block-{uuid.uuid4().hex}", report
        )
        maps.blocks[block.block_id] = new_id
        insert_block_row(
            conn,
            BlockRow(
                new_id,
                block.label,
                block.value,
                block.description,
                block.limit,
                block.read_only,
                block.is_shared,
                block.in_prompt,
                maps.agents.get(block.owner_agent_id or ""),
                block.version,
                block.created_at,
                block.updated_at,
                parse_level(block.sensitivity),
            ),
        )
        report.blocks += 1
    _insert_history(conn, snapshot, maps)
    for link in snapshot.attachments:
        insert_attachment_row(
            conn,
            maps.agents[link.agent_id],
            maps.blocks[link.block_id],
            link.label,
            read_only=link.read_only,
            attached_at=link.attached_at,
        )


def _insert_history(conn: Connection, snapshot: Snapshot, maps: _IdMaps) -> None:
    """The versions in the file, and the current one when the file has no row for it (so that
    history and undo work on imported blocks)."""
    known = {(v.block_id, v.version) for v in snapshot.block_history}
    current = [
        BlockVersionRecord(
            b.block_id,
            b.version,
            b.value,
            b.description,
            b.limit,
            b.read_only,
            b.owner_agent_id,
            "import",
            b.updated_at,
        )
        for b in snapshot.blocks
        if (b.block_id, b.version) not in known
    ]
    for version in [*snapshot.block_history, *current]:
        if version.block_id not in maps.blocks:
            continue
        insert_version_row(
            conn,
            VersionRow(
                maps.blocks[version.block_id],
                version.version,
                version.value,
                version.description,
                version.limit,
                version.read_only,
                maps.agents.get(version.agent_id or "", version.agent_id),
                version.action,
                version.created_at,
                author=_recorded_author(version, "block_history"),
            ),
        )


def _insert_messages(
    conn: Connection, snapshot: Snapshot, maps: _IdMaps, report: ImportReport
) -> None:
    for message in snapshot.messages:
        new_id = insert_message_row(
            conn,
            maps.agents[message.agent_id],
            message.role,
            message.message_type,
            message.content,
            session_id=message.session_id,
            turn_id=message.turn_id,
            sdk_uuid=message.sdk_uuid,
            token_count=message.token_count,
            metadata=message.metadata,
            in_context=message.in_context,
            created_at=message.created_at,
        )
        if new_id is None:
            raise ImportFormatError(
                f"Message {message.message_id} of agent '{message.agent_id}' repeats the "
                f"sdk_uuid {message.sdk_uuid!r} of an earlier one; fix the file before "
                "importing it."
            )
        maps.messages[(message.agent_id, str(message.message_id))] = new_id
        report.messages += 1


def _insert_summaries(
    conn: Connection, snapshot: Snapshot, maps: _IdMaps, report: ImportReport
) -> None:
    for summary in snapshot.summaries:
        first = maps.messages.get((summary.agent_id, str(summary.first_message_id)))
        last = maps.messages.get((summary.agent_id, str(summary.last_message_id)))
        new_id = insert_summary_row(
            conn,
            maps.agents[summary.agent_id],
            summary.summary,
            first_message_id=first,
            last_message_id=last,
            model=summary.model,
            tokens_before=summary.tokens_before,
            tokens_after=summary.tokens_after,
            is_fallback=summary.is_fallback,
            created_at=summary.created_at,
        )
        if summary.summary_id is not None:
            maps.summaries[str(summary.summary_id)] = new_id
        report.summaries += 1


def _prepared_passages(snapshot: Snapshot) -> list[tuple[PassageRecord, PreparedPassage]]:
    """Every passage checked by archival memory's own rules, before anything is written."""
    prepared = []
    owners = {passage.passage_id: passage.agent_id for passage in snapshot.passages}
    for index, passage in enumerate(snapshot.passages):
        try:
            item = prepare(
                NewPassage(
                    passage.content,
                    passage.tags,
                    passage.metadata,
                    passage.created_at,
                    expires_at=passage.expires_at,
                    importance=passage.importance,
                    provenance=passage.provenance,
                    sensitivity=passage.sensitivity,
                    context=passage.context,
                )
            )
            check_int("access_count", passage.access_count, minimum=0)
            last = (
                None if passage.last_accessed_at is None else to_utc_iso(passage.last_accessed_at)
            )
            prepared.append(
                (
                    passage,
                    dataclasses.replace(
                        item, access_count=passage.access_count, last_accessed_at=last
                    ),
                )
            )
        except MemoryAgentError as error:
            raise ImportFormatError(f"passages[{index}] ({passage.passage_id}): {error}") from None
        if passage.superseded_by is not None and (
            not isinstance(passage.superseded_by, str)
            or owners.get(passage.superseded_by) != passage.agent_id
        ):
            raise ImportFormatError(
                f"passages[{index}] ({passage.passage_id}) is superseded by "
                f"'{passage.superseded_by}', which is not a passage of the same agent in the file."
            )
    _refuse_supersession_cycles(prepared)
    return prepared


def _refuse_supersession_cycles(prepared: list[tuple[PassageRecord, PreparedPassage]]) -> None:
    """Check the links as they will be stored: passages of one agent with the same text are folded
    into one (see `_insert_passages`), so a chain that is acyclic in the file can close into a cycle
    once two of its members are one passage. The whole import is refused in that case, and when a
    folded passage would be given two different successors."""
    canonical: dict[str, str] = {}
    first: dict[tuple[str, str], str] = {}
    for passage, item in prepared:
        canonical[passage.passage_id] = first.setdefault(
            (passage.agent_id, item.content_hash), passage.passage_id
        )
    successor: dict[str, str] = {}
    for passage, _ in prepared:
        if passage.superseded_by is None:
            continue
        node, target = canonical[passage.passage_id], canonical[passage.superseded_by]
        if node == target:
            continue  # a passage superseded by its own duplicate: the fold drops the link
        if successor.setdefault(node, target) != target:
            raise ImportFormatError(
                f"Passage '{passage.passage_id}' has the same text as '{node}', so both are stored "
                "as one passage, "
                f"but they are superseded by different passages ('{successor[node]}' and "
                f"'{target}'). Give the "
                "duplicates one successor (or remove one of them); nothing was imported."
            )
    for start in successor:
        path, current = [start], successor.get(start)
        while current is not None:
            if current in path:
                merged = {kept for pid, kept in canonical.items() if pid != kept}
                folded = (
                    " once passages with identical text are stored as one"
                    if merged & set(path)
                    else ""
                )
                raise ImportFormatError(
                    f"Passage '{start}' is superseded in a cycle "
                    f"({' -> '.join([*path, current])}){folded}; a passage "
                    "cannot be replaced by one it replaced. Fix the superseded_by links; nothing "
                    "was imported."
                )
            path.append(current)
            current = successor.get(current)


def _insert_passages(
    conn: Connection,
    passages: list[tuple[PassageRecord, PreparedPassage]],
    maps: _IdMaps,
    report: ImportReport,
    now: str,
) -> None:
    seen: dict[tuple[str, str], str] = {}
    for passage, item in passages:
        agent_id = maps.agents[passage.agent_id]
        if (agent_id, item.content_hash) in seen:
            maps.passages[passage.passage_id] = seen[(agent_id, item.content_hash)]
            report.duplicate_passages += 1
            continue
        new_id = _free_id(
            conn,
            "passages",
            "passage_id",
            passage.passage_id,
            lambda: f"passage-{uuid.uuid4()}",
            report,
            taken=CHUNK_MARK in passage.passage_id,
        )
        seen[(agent_id, item.content_hash)] = new_id
        if passage_table.insert_row(conn, new_id, agent_id, item, item.created_at or now) is None:
            report.duplicate_passages += (
                1  # not reached: imported agents are new and `seen` caught repeats
            )
            continue
        maps.passages[passage.passage_id] = new_id
        report.passages += 1
    # Supersession links name passages by id, so they are written once every passage has its new id.
    for passage, _ in passages:
        new_id = maps.passages[passage.passage_id]
        if passage.superseded_by is not None and maps.passages[passage.superseded_by] != new_id:
            passage_table.update_columns(
                conn, new_id, {"superseded_by": maps.passages[passage.superseded_by]}
            )


def _insert_journal(
    conn: Connection, snapshot: Snapshot, maps: _IdMaps, report: ImportReport, now: str
) -> None:
    for index, entry in enumerate(snapshot.journal):
        session = (entry.author or "").split(":")[0]
        if entry.author_kind == "consolidator" and consolidation_log.session_exists(conn, session):
            raise ImportFormatError(
                f"journal[{index}] claims to be written by consolidation session '{session}' of "
                "this storage; "
                "only that session writes as it (its rollback trusts them). Remove the row or give "
                "it another "
                "author; nothing was imported."
            )
        journal.record(
            conn,
            agent_id=maps.agents.get(entry.agent_id or "", entry.agent_id),
            action=entry.action,
            target_type=entry.target_type,
            target_id=maps.target(entry.target_type, entry.target_id),
            label=entry.label,
            old_value=entry.old_value,
            new_value=entry.new_value,
            detail=entry.detail,
            created_at=entry.created_at,
            author=_recorded_author(entry, "journal"),
        )
        report.journal_entries += 1
    for source, target in maps.agents.items():
        journal.record(
            conn,
            agent_id=target,
            action="import_agent",
            target_type="agent",
            target_id=target,
            created_at=now,
            detail={"source_agent_id": source},
        )
