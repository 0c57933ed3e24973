"""Letta Agent File (`.af`): reading Letta's agent exports, and writing ours in its shape.

An `.af` document has top-level `agents`, `blocks`, `tools`, `groups`, `files`, `sources`,
`mcp_servers` and `metadata`; an agent names its blocks by id (`block_ids`) and carries its
messages. Letta's ids ("agent-0", "block-0") are local to the file, so blocks get fresh ids here,
and agents get their name as id. Block labels, values, limits, descriptions and read-only flags
are taken as they are (a Letta block's limit is often 20000, above our default).

Messages map onto ours as follows (both ways):
- `user` text -> a user message; `assistant` text and `tool_calls` -> an assistant message with
  text and `tool_use` blocks (arguments parsed from their JSON text);
- `tool` (with `tool_call_id`, or `tool_returns`) -> a user message of `tool_result` blocks;
- `system` (Letta's rendered system prompt) -> kept for the record, out of context, like the SDK's
  system messages; the messages not in `in_context_message_ids` are imported out of context.
Tools, groups, files, sources and model configs have no counterpart here and are not imported;
the `.af` we write carries blocks and messages only (no archival passages: the format has none).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..archival.timestamps import to_utc_iso
from ..errors import ImportFormatError, MemoryAgentError
from ..store.database import utc_now
from .records import AgentRecord, AttachmentRecord, BlockRecord, MessageRecord, Snapshot

__all__ = ["is_letta_document", "parse_letta", "to_letta"]

def is_letta_document(document: Any) -> bool:
    return isinstance(document, Mapping) and isinstance(document.get("agents"), list)


# ----- reading ------------------------------------------------------------------------------

def parse_letta(document: Mapping[str, Any], *, default_limit: int) -> Snapshot:
    """The agents, blocks and messages of an `.af` document, as a snapshot to import."""
    if not is_letta_document(document) or not document["agents"]:
        raise ImportFormatError("Not a Letta agent file: it has no 'agents' list, or the list is empty.")
    created = _timestamp(document.get("created_at"), utc_now(), "the file's created_at")
    letta_blocks = _letta_blocks(document.get("blocks"))
    snapshot = Snapshot()
    block_ids: dict[str, str] = {}
    for index, raw in enumerate(document["agents"]):
        if not isinstance(raw, Mapping):
            raise ImportFormatError(f"agents[{index}] must be an object.")
        agent_id = _agent_id(raw, index, {a.agent_id for a in snapshot.agents})
        snapshot.agents.append(AgentRecord(agent_id, _text(raw.get("name")) or None, created))
        for block in _agent_blocks(raw, letta_blocks, index):
            _attach(snapshot, block_ids, agent_id, block, default_limit, created)
        in_context = raw.get("in_context_message_ids")
        for position, message in enumerate(_list(raw.get("messages"), f"agents[{index}].messages")):
            snapshot.messages.extend(_messages(message, agent_id, f"agents[{index}].messages[{position}]",
                                               in_context, created))
    return snapshot


def _letta_blocks(blocks: Any) -> dict[str, Mapping[str, Any]]:
    if blocks is None:
        return {}
    if not isinstance(blocks, list) or not all(isinstance(b, Mapping) for b in blocks):
        raise ImportFormatError("The file's 'blocks' must be a list of objects.")
    return {str(block.get("id")): block for block in blocks}


def _agent_id(raw: Mapping[str, Any], index: int, taken: set[str]) -> str:
    base = _text(raw.get("name")).strip() or _text(raw.get("id")).strip() or f"letta-agent-{index}"
    candidate, suffix = base, 2
    while candidate in taken:
        candidate, suffix = f"{base}-{suffix}", suffix + 1
    return candidate


def _agent_blocks(raw: Mapping[str, Any], letta_blocks: Mapping[str, Mapping[str, Any]],
                  index: int) -> list[Mapping[str, Any]]:
    """The blocks an agent names by id, then any written inline (`memory_blocks`)."""
    found: list[Mapping[str, Any]] = []
    for block_id in _list(raw.get("block_ids"), f"agents[{index}].block_ids"):
        if str(block_id) not in letta_blocks:
            raise ImportFormatError(f"agents[{index}] names block '{block_id}', which the file does not hold.")
        found.append(letta_blocks[str(block_id)])
    for inline in _list(raw.get("memory_blocks"), f"agents[{index}].memory_blocks"):
        if not isinstance(inline, Mapping):
            raise ImportFormatError(f"agents[{index}].memory_blocks must hold objects.")
        found.append(inline)
    return found


def _attach(snapshot: Snapshot, block_ids: dict[str, str], agent_id: str, block: Mapping[str, Any],
            default_limit: int, created: str) -> None:
    """Add the block (once, however many agents name it) and attach it to the agent."""
    letta_id = str(block.get("id") or uuid.uuid4())
    label = _text(block.get("label"))
    if letta_id not in block_ids:
        block_ids[letta_id] = f"block-{uuid.uuid4().hex}"
        snapshot.blocks.append(BlockRecord(
            block_id=block_ids[letta_id], label=label, value=_text(block.get("value")),
            limit=_limit(block.get("limit"), default_limit, label),
            description=None if block.get("description") is None else _text(block.get("description")),
            read_only=bool(block.get("read_only", False)), is_shared=False, owner_agent_id=agent_id,
            version=1, created_at=created, updated_at=created))
    else:  # a second agent names it: it is shared
        position = next(i for i, b in enumerate(snapshot.blocks) if b.block_id == block_ids[letta_id])
        snapshot.blocks[position] = dataclasses.replace(snapshot.blocks[position], is_shared=True)
    snapshot.attachments.append(AttachmentRecord(agent_id, block_ids[letta_id], label, False, created))


def _limit(value: Any, default_limit: int, label: str) -> int:
    if value is None:
        return default_limit
    if isinstance(value, bool) or not isinstance(value, int):
        raise ImportFormatError(f"Block '{label}' has limit {value!r}; a limit is a whole number.")
    return value


def _messages(raw: Any, agent_id: str, where: str, in_context_ids: Any, default_time: str) -> list[MessageRecord]:
    if not isinstance(raw, Mapping):
        raise ImportFormatError(f"{where} must be an object.")
    role = _text(raw.get("role"))
    message_id = str(raw.get("id") or where)
    created = _timestamp(raw.get("created_at"), default_time, where)
    in_context = role != "system" and (not isinstance(in_context_ids, list) or message_id in in_context_ids)
    metadata = {"letta": {k: raw[k] for k in ("id", "name", "model") if raw.get(k) is not None}}

    def record(our_role: str, kind: str, content: str | list[dict[str, Any]]) -> MessageRecord:
        return MessageRecord(message_id=message_id, agent_id=agent_id, role=our_role, message_type=kind,
                             content=content, created_at=created, in_context=in_context, metadata=metadata)

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
            blocks.append({"type": "thinking", "thinking": _text(part.get("reasoning"))})
    return blocks


def _tool_uses(calls: Any, where: str) -> list[dict[str, Any]]:
    uses: list[dict[str, Any]] = []
    for call in _list(calls, f"{where}.tool_calls"):
        if not isinstance(call, Mapping):
            continue
        function = call.get("function") or {}
        if not isinstance(function, Mapping):
            raise ImportFormatError(f"{where}: a tool call's 'function' must be an object with 'name' and "
                                    f"'arguments', got {type(function).__name__}.")
        arguments = function.get("arguments") or "{}"
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            parsed = {"arguments": arguments}
        uses.append({"type": "tool_use", "id": _text(call.get("id")), "name": _text(function.get("name")),
                     "input": parsed if isinstance(parsed, dict) else {"arguments": parsed}})
    return uses


def _tool_results(raw: Mapping[str, Any], parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    returns = [r for r in _list(raw.get("tool_returns"), "a tool message's tool_returns") if isinstance(r, Mapping)]
    if returns:
        return [{"type": "tool_result", "tool_use_id": _text(r.get("tool_call_id") or raw.get("tool_call_id")),
                 "content": _text(r.get("func_response"))} for r in returns]
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


# ----- writing ------------------------------------------------------------------------------

def to_letta(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot as an `.af` document (blocks and messages; see the module doc)."""
    agents = []
    for agent in snapshot.agents:
        links = [a for a in snapshot.attachments if a.agent_id == agent.agent_id]
        own = [m for m in snapshot.messages if m.agent_id == agent.agent_id]
        messages = [letta for source in own for letta in _letta_messages(source)]
        in_context = {f"message-{m.message_id}" for m in own if m.in_context}
        agents.append({
            "name": agent.name or agent.agent_id, "id": agent.agent_id, "description": None,
            "agent_type": "memgpt_v2_agent", "system": "", "block_ids": [a.block_id for a in links],
            "memory_blocks": [], "tools": [], "tool_ids": [], "tool_rules": [], "tags": [],
            "messages": messages, "metadata": {"memory_agent_id": agent.agent_id},
            "in_context_message_ids": [m["id"] for m in messages if m["id"].split("/")[0] in in_context],
        })
    blocks: list[dict[str, Any]] = [{"id": b.block_id, "label": b.label, "value": b.value, "limit": b.limit,
               "description": b.description, "read_only": b.read_only, "metadata": {}}
              for b in snapshot.blocks]
    return {"agents": agents, "groups": [], "blocks": blocks, "files": [], "sources": [], "tools": [],
            "mcp_servers": [], "metadata": {"exported_by": "memory-agent"}, "created_at": utc_now()}


def _letta_messages(message: MessageRecord) -> list[dict[str, Any]]:
    """One of our messages as Letta messages (a user turn of tool results becomes one per result)."""
    base = {"type": "message", "created_at": message.created_at}
    number = f"message-{message.message_id}"
    blocks = _as_blocks(message.content)
    if message.role == "assistant":
        return [{**base, "id": number, "role": "assistant", "content": _letta_parts(blocks),
                 "tool_calls": _letta_calls(blocks) or None}]
    if message.role == "system" and message.message_type == "system":
        return [{**base, "id": number, "role": "system", "content": _letta_parts(blocks)}]
    if message.role != "user":
        return []  # the SDK's result and status records have no Letta counterpart
    results = [b for b in blocks if b.get("type") == "tool_result"]
    out = [{**base, "id": f"{number}/{i}", "role": "tool", "tool_call_id": r.get("tool_use_id"),
            "content": [{"type": "text", "text": _result_text(r.get("content"))}]}
           for i, r in enumerate(results)]
    parts = _letta_parts(blocks)
    if parts or not results:
        out.insert(0, {**base, "id": number, "role": "user", "content": parts})
    return out


def _as_blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _letta_parts(blocks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif block.get("type") == "thinking":
            parts.append({"type": "reasoning", "reasoning": block.get("thinking", "")})
    return parts


def _letta_calls(blocks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": b.get("id"), "type": "function",
             "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input", {}), ensure_ascii=False)}}
            for b in blocks if b.get("type") == "tool_use"]


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return _text(content)
