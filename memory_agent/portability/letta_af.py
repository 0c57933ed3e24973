"""Reading Letta Agent Files (`.af`): every agent, block and message, and a note of the rest.

An `.af` document has top-level `agents`, `blocks`, `tools`, `groups`, `files`, `sources`,
`mcp_servers`, `skills` and `metadata`; an agent names its blocks by id (`block_ids`) and carries
its messages. Letta's ids ("agent-0", "block-0") are local to the file, so blocks get fresh ids
here, and agents get their name as id (or, for a file we exported, the id they had here).

- Blocks: labels (path labels too, `/x` stored as `x`), values, limits, descriptions and read-only
  flags as they are (and, from an export of ours, the on-demand flag and version kept in the
  block's `metadata`, see `letta_export`); a value longer than its limit is kept whole and the
  limit raised to fit (noted). Two blocks with one id, a flag that is not a JSON boolean and a
  limit that is not a positive whole number are refused, naming the block and the field. Blocks
  no agent names are imported unattached, owned by the file's first agent (noted).
- The agent's `system` prompt becomes its base system prompt (`MemoryAwareAgent` uses it when the
  caller sets none); its model configs and type are kept for a later Letta export.
- Groups: their agents keep them (for export); a group's shared blocks are attached to all its
  agents, and a block several agents name is one shared block (`letta_parts`).
- Tools, tool rules, skills, files, sources, MCP servers and group managers have no counterpart
  here: they are listed in the import report, by name.

Messages map onto ours as follows (`letta_export` writes the reverse):
- `user` text -> a user message; `assistant` text, reasoning and `tool_calls` -> an assistant
  message with text, `thinking` and `tool_use` blocks (arguments parsed from their JSON text);
- `tool` (with `tool_call_id`, or `tool_returns`) -> a user message of `tool_result` blocks;
- `system` (Letta's rendered system prompt) -> kept for the record, out of context, like the SDK's
  system messages; the messages not in `in_context_message_ids` are imported out of context. A
  system message that is exactly the agent's `system` (our own exports write one) is not stored
  twice: it is the base prompt;
- the rows an export of ours kept in `metadata.memory_agent_records` (the SDK's result and status
  records) go back in their place, after the message each followed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from ..core.labels import validate_label
from ..errors import ImportFormatError, MemoryAgentError
from ..privacy.sensitivity import DEFAULT_LEVEL
from ..snapshots.records import AgentRecord, BlockRecord, MessageRecord, PassageRecord, Snapshot
from ..snapshots.values import DEFAULT_IMPORTANCE, to_utc_iso, utc_now
from .letta_export import IN_PROMPT_KEY, PASSAGES_KEY, RECORDS_KEY, SENSITIVITY_KEY, VERSION_KEY
from .letta_parts import (
    OUR_AGENT_ID_KEY,
    OUR_CREATED_AT_KEY,
    add_groups,
    agent_details,
    attach_block,
    note_not_imported,
)

__all__ = ["is_letta_document", "parse_letta"]


def is_letta_document(document: Any) -> bool:
    return isinstance(document, Mapping) and isinstance(document.get("agents"), list)


# ----- reading ------------------------------------------------------------------------------


def parse_letta(document: Mapping[str, Any], *, default_limit: int) -> Snapshot:
    """Every agent, block and message of an `.af` document, as a snapshot to import.

    What has no counterpart here is listed in `snapshot.notes` (see `letta_parts`).
    """
    if not is_letta_document(document) or not document["agents"]:
        raise ImportFormatError(
            "Not a Letta agent file: it has no 'agents' list, or the list is empty."
        )
    created = _timestamp(document.get("created_at"), utc_now(), "the file's created_at")
    letta_blocks = _letta_blocks(document.get("blocks"))
    snapshot = Snapshot()
    block_ids: dict[str, str] = {}
    agent_ids: dict[str, str] = {}
    for index, raw in enumerate(document["agents"]):
        if not isinstance(raw, Mapping):
            raise ImportFormatError(f"agents[{index}] must be an object.")
        agent_id = _agent_id(raw, index, {a.agent_id for a in snapshot.agents})
        agent_ids[str(raw.get("id", f"agents[{index}]"))] = agent_id
        system = raw.get("system") if isinstance(raw.get("system"), str) else None
        born = _timestamp(
            _metadata(raw).get(OUR_CREATED_AT_KEY), created, f"agents[{index}].metadata"
        )
        snapshot.agents.append(
            AgentRecord(
                agent_id, _text(raw.get("name")) or None, born, system or None, agent_details(raw)
            )
        )
        for block in _agent_blocks(raw, letta_blocks, index):
            _attach(snapshot, block_ids, agent_id, block, default_limit, created)
        in_context = raw.get("in_context_message_ids")
        records = _records(raw, agent_id, index, created)
        snapshot.messages.extend(records.pop(None, []))
        for position, message in enumerate(_list(raw.get("messages"), f"agents[{index}].messages")):
            if not _is_base_prompt(
                message, system
            ):  # else the agent's `system`, kept as its base prompt
                snapshot.messages.extend(
                    _messages(
                        message,
                        agent_id,
                        f"agents[{index}].messages[{position}]",
                        in_context,
                        created,
                    )
                )
            if isinstance(message, Mapping):
                snapshot.messages.extend(records.pop(str(message.get("id")), []))
        if records:
            raise ImportFormatError(
                f"agents[{index}].metadata.{RECORDS_KEY} places rows after message(s) "
                f"{', '.join(map(str, records))}, which the agent does not hold."
            )
        snapshot.passages.extend(_passages(raw, agent_id, index, created))
    for letta_id, block in letta_blocks.items():
        if letta_id not in block_ids:
            _add_block(
                snapshot, block_ids, snapshot.agents[0].agent_id, block, default_limit, created
            )
    add_groups(snapshot, document.get("groups"), agent_ids, block_ids, created)
    in_file = {block_ids[letta_id]: position for position, letta_id in enumerate(letta_blocks)}
    snapshot.blocks.sort(
        key=lambda b: in_file.get(b.block_id, len(in_file))
    )  # the file's order, then inline
    attached = {link.block_id for link in snapshot.attachments}
    snapshot.notes.unattached_blocks = [
        b.label for b in snapshot.blocks if b.block_id not in attached
    ]
    note_not_imported(snapshot.notes, document)
    return snapshot


def _is_base_prompt(message: Any, system: str | None) -> bool:
    if not isinstance(message, Mapping) or message.get("role") != "system":
        return False
    return "\n".join(p.get("text", "") for p in _parts(message) if p["type"] == "text") == (
        system or ""
    )


def _passages(
    raw: Mapping[str, Any], agent_id: str, index: int, created: str
) -> list[PassageRecord]:
    """Archival passages an export of ours carried in the agent's metadata (`letta_export`)."""
    items = _metadata(raw).get(PASSAGES_KEY)
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise ImportFormatError(
            f"agents[{index}].metadata.{PASSAGES_KEY} must be a list of objects."
        )
    return [
        PassageRecord(
            _passage_id(item.get("id")),
            agent_id,
            _text(item.get("content")),
            item.get("tags") or [],
            item.get("metadata") or {},
            _timestamp(item.get("created_at"), created, f"agents[{index}] passage {position}"),
            # Our lifecycle fields (absent from older exports); checked like any insert.
            expires_at=item.get("expires_at"),
            superseded_by=item.get("superseded_by"),
            importance=item.get("importance", DEFAULT_IMPORTANCE),
            access_count=item.get("access_count", 0),
            last_accessed_at=item.get("last_accessed_at"),
            provenance=item.get("provenance") or {},
            sensitivity=item.get("sensitivity", DEFAULT_LEVEL),
            context=item.get("context") or "",
        )
        for position, item in enumerate(items)
    ]


def _passage_id(value: Any) -> str:
    """The passage's id in an export of ours (supersession links name it), else a new one."""
    return value if isinstance(value, str) and value.strip() else f"passage-{uuid.uuid4()}"


_RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "role": (str,),
    "message_type": (str,),
    "content": (str, list),
    "session_id": (str, type(None)),
    "turn_id": (str, type(None)),
    "sdk_uuid": (str, type(None)),
    "token_count": (int, type(None)),
    "metadata": (dict,),
}


def _records(
    raw: Mapping[str, Any], agent_id: str, index: int, created: str
) -> dict[str | None, list[MessageRecord]]:
    """The rows an export of ours kept in `RECORDS_KEY`, by the id of the message each followed."""
    items = _metadata(raw).get(RECORDS_KEY)
    if items is None:
        return {}
    where = f"agents[{index}].metadata.{RECORDS_KEY}"
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise ImportFormatError(f"{where} must be a list of objects.")
    placed: dict[str | None, list[MessageRecord]] = {}
    for position, item in enumerate(items):
        here = f"{where}[{position}]"
        for name, kinds in _RECORD_FIELDS.items():
            value = item.get(name, {} if name == "metadata" else None)
            if not isinstance(value, kinds) or (name == "token_count" and isinstance(value, bool)):
                raise ImportFormatError(
                    f"{here} field '{name}' is {_preview(repr(value))}; expected "
                    f"{' or '.join('null' if k is type(None) else k.__name__ for k in kinds)}."
                )
        after = item.get("after")
        placed.setdefault(None if after is None else str(after), []).append(
            MessageRecord(
                message_id=f"{here}",
                agent_id=agent_id,
                role=item["role"],
                message_type=item["message_type"],
                content=item["content"],
                created_at=_timestamp(item.get("created_at"), created, here),
                in_context=_boolean(item.get("in_context"), True, f"{here} field 'in_context'"),
                session_id=item.get("session_id"),
                turn_id=item.get("turn_id"),
                sdk_uuid=item.get("sdk_uuid"),
                token_count=item.get("token_count"),
                metadata=dict(item.get("metadata") or {}),
            )
        )
    return placed


def _letta_blocks(blocks: Any) -> dict[str, Mapping[str, Any]]:
    """The file's blocks by id; two blocks with one id are refused (one of them would be lost)."""
    if blocks is None:
        return {}
    if not isinstance(blocks, list) or not all(isinstance(b, Mapping) for b in blocks):
        raise ImportFormatError("The file's 'blocks' must be a list of objects.")
    found: dict[str, Mapping[str, Any]] = {}
    positions: dict[str, int] = {}
    for index, block in enumerate(blocks):
        block_id = str(block.get("id"))
        if block_id in found:
            raise ImportFormatError(
                f"blocks[{index}] has id '{_preview(block_id)}', like "
                f"blocks[{positions[block_id]}]; block ids must be unique in a file. "
                "Give each block its own id."
            )
        found[block_id], positions[block_id] = block, index
    return found


def _agent_id(raw: Mapping[str, Any], index: int, taken: set[str]) -> str:
    """Our id of an exported agent of ours (kept in its metadata), else its name or Letta id."""
    ours = _metadata(raw).get(OUR_AGENT_ID_KEY)
    base = (
        (_text(ours).strip() if isinstance(ours, str) else "")
        or _text(raw.get("name")).strip()
        or _text(raw.get("id")).strip()
        or f"letta-agent-{index}"
    )
    candidate, suffix = base, 2
    while candidate in taken:
        candidate, suffix = f"{base}-{suffix}", suffix + 1
    return candidate


def _metadata(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """An agent's `metadata`, where an export of ours keeps its id, creation time and passages."""
    metadata = raw.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def _agent_blocks(
    raw: Mapping[str, Any], letta_blocks: Mapping[str, Mapping[str, Any]], index: int
) -> list[Mapping[str, Any]]:
    """The blocks an agent names by id, then any written inline (`memory_blocks`)."""
    found: list[Mapping[str, Any]] = []
    for block_id in _list(raw.get("block_ids"), f"agents[{index}].block_ids"):
        if str(block_id) not in letta_blocks:
            raise ImportFormatError(
                f"agents[{index}] names block '{block_id}', which the file does not hold."
            )
        found.append(letta_blocks[str(block_id)])
    for position, inline in enumerate(
        _list(raw.get("memory_blocks"), f"agents[{index}].memory_blocks")
    ):
        if not isinstance(inline, Mapping):
            raise ImportFormatError(f"agents[{index}].memory_blocks must hold objects.")
        if inline.get("id") is not None and str(inline["id"]) in letta_blocks:
            raise ImportFormatError(
                f"agents[{index}].memory_blocks[{position}] has id "
                f"'{_preview(str(inline['id']))}', which a block of the file's 'blocks' has "
                "too; block ids must be unique in a file."
            )
        found.append(inline)
    return found


def _attach(
    snapshot: Snapshot,
    block_ids: dict[str, str],
    agent_id: str,
    block: Mapping[str, Any],
    default_limit: int,
    created: str,
) -> None:
    """Add the block (once, however many agents name it) and attach it to the agent."""
    letta_id = str(block.get("id") or uuid.uuid4())
    if letta_id not in block_ids:
        _add_block(snapshot, block_ids, agent_id, block, default_limit, created, letta_id)
    attach_block(snapshot, agent_id, block_ids[letta_id], created)


def _add_block(
    snapshot: Snapshot,
    block_ids: dict[str, str],
    owner: str,
    block: Mapping[str, Any],
    default_limit: int,
    created: str,
    letta_id: str | None = None,
) -> None:
    """The block as ours: its label in normal form, its limit raised (and noted) if its value is
    longer, so that nothing of it is cut."""
    letta_id = letta_id or str(block.get("id"))
    raw_label = _text(block.get("label"))
    try:
        label = validate_label(raw_label)
    except MemoryAgentError as error:
        raise ImportFormatError(f"Block '{letta_id}': {error}") from None
    value = _text(block.get("value"))
    limit = _limit(block.get("limit"), default_limit, label)
    if len(value) > limit:
        snapshot.notes.limits_raised.append(
            {"label": label, "limit": limit, "raised_to": len(value)}
        )
        limit = len(value)
    metadata = block.get("metadata")
    ours: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
    block_ids[letta_id] = f"block-{uuid.uuid4().hex}"
    snapshot.blocks.append(
        BlockRecord(
            block_id=block_ids[letta_id],
            label=label,
            value=value,
            limit=limit,
            description=None
            if block.get("description") is None
            else _text(block.get("description")),
            read_only=_boolean(block.get("read_only"), False, f"Block '{label}' field 'read_only'"),
            is_shared=False,
            owner_agent_id=owner,
            version=_version(
                ours.get(VERSION_KEY), f"Block '{label}' field 'metadata.{VERSION_KEY}'"
            ),
            created_at=created,
            updated_at=created,
            in_prompt=_boolean(
                ours.get(IN_PROMPT_KEY), True, f"Block '{label}' field 'metadata.{IN_PROMPT_KEY}'"
            ),
            sensitivity=ours.get(SENSITIVITY_KEY, DEFAULT_LEVEL),
        )
    )


def _limit(value: Any, default_limit: int, label: str) -> int:
    if value is None:
        return default_limit
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ImportFormatError(
            f"Block '{label}' field 'limit' is {_preview(repr(value))}; a limit is a positive "
            "whole number of characters. Fix the file before importing it."
        )
    return value


def _boolean(value: Any, default: bool, where: str) -> bool:
    """A true/false field: absent or null is the default, anything but a JSON boolean is refused
    (the string "false" is truthy, so reading it as a flag would invert it)."""
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ImportFormatError(
            f"{where} is {_preview(repr(value))}; it must be true or false (a JSON boolean, "
            "without quotes). Fix the file before importing it."
        )
    return value


def _version(value: Any, where: str) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ImportFormatError(
            f"{where} is {_preview(repr(value))}; a block version is a whole number from 1."
        )
    return value


def _preview(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _messages(
    raw: Any, agent_id: str, where: str, in_context_ids: Any, default_time: str
) -> list[MessageRecord]:
    if not isinstance(raw, Mapping):
        raise ImportFormatError(f"{where} must be an object.")
    role = _text(raw.get("role"))
    message_id = str(raw.get("id") or where)
    created = _timestamp(raw.get("created_at"), default_time, where)
    in_context = role != "system" and (
        not isinstance(in_context_ids, list) or message_id in in_context_ids
    )
    metadata = {"letta": {k: raw[k] for k in ("id", "name", "model") if raw.get(k) is not None}}

    def record(our_role: str, kind: str, content: str | list[dict[str, Any]]) -> MessageRecord:
        return MessageRecord(
            message_id=message_id,
            agent_id=agent_id,
            role=our_role,
            message_type=kind,
            content=content,
            created_at=created,
            in_context=in_context,
            metadata=metadata,
        )

    parts = _parts(raw)
    if role == "assistant":
        return [record("assistant", "assistant", parts + _tool_uses(raw.get("tool_calls"), where))]
    if role == "tool":
        return [record("user", "tool_result", _tool_results(raw, parts))]
    text = "\n".join(p.get("text", "") for p in parts if p["type"] == "text")
    if role == "system":
        return [record("system", "system", text)]
    return [record(role or "user", role or "user", text)]


def _parts(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Letta content (a string, or a list of typed parts) as our content blocks."""
    content = raw.get("content")
    if content is None:
        content = raw.get("text") or ""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text":
            blocks.append({"type": "text", "text": _text(part.get("text"))})
        elif part.get("type") in ("reasoning", "omitted_reasoning") and part.get("reasoning"):
            thinking = {"type": "thinking", "thinking": _text(part.get("reasoning"))}
            if isinstance(part.get("signature"), str):
                thinking["signature"] = part["signature"]
            blocks.append(thinking)
    return blocks


def _tool_uses(calls: Any, where: str) -> list[dict[str, Any]]:
    uses: list[dict[str, Any]] = []
    for call in _list(calls, f"{where}.tool_calls"):
        if not isinstance(call, Mapping):
            continue
        function = call.get("function") or {}
        if not isinstance(function, Mapping):
            raise ImportFormatError(
                f"{where}: a tool call's 'function' must be an object with 'name' and "
                f"'arguments', got {type(function).__name__}."
            )
        arguments = function.get("arguments") or "{}"
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            parsed = {"arguments": arguments}
        uses.append(
            {
                "type": "tool_use",
                "id": _text(call.get("id")),
                "name": _text(function.get("name")),
                "input": parsed if isinstance(parsed, dict) else {"arguments": parsed},
            }
        )
    return uses


def _tool_results(raw: Mapping[str, Any], parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    returns = [
        r
        for r in _list(raw.get("tool_returns"), "a tool message's tool_returns")
        if isinstance(r, Mapping)
    ]
    if returns:
        return [
            {
                "type": "tool_result",
                "tool_use_id": _text(r.get("tool_call_id") or raw.get("tool_call_id")),
                "content": _text(r.get("func_response")),
                **({"is_error": True} if r.get("status") == "error" else {}),
            }
            for r in returns
        ]
    text = "\n".join(p.get("text", "") for p in parts if p["type"] == "text")
    return [{"type": "tool_result", "tool_use_id": _text(raw.get("tool_call_id")), "content": text}]


def _list(value: Any, where: str) -> list[Any]:
    """A list field of the file (absent or null means empty); anything else is refused."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportFormatError(f"{where} must be a list, got {type(value).__name__}.")
    return value


def _timestamp(value: Any, default: str, where: str) -> str:
    if value in (None, ""):
        return default
    try:
        return to_utc_iso(value)
    except MemoryAgentError:
        raise ImportFormatError(f"{where}: '{value}' is not an ISO-8601 time.") from None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
