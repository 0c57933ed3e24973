"""Writing Letta Agent Files (`.af`) that Letta itself accepts.

The rules are those of Letta's agent-file schema (`letta/schemas/agent_file.py`, 0.16.8) and of
its import check (`AgentSerializationManager._validate_schema`):

- ids are `<kind>-<integer>`, unique across the whole file: `agent-0`, `block-0`, `group-0`, and
  `message-0` numbered across all agents (a message of ours that becomes two Letta messages, e.g.
  text plus tool results, takes two numbers);
- `in_context_message_ids` name messages of the same agent and start with its system message;
  an agent with no stored Letta system message gets one holding its base system prompt (which a
  re-import recognises and does not store twice);
- reasoning parts carry `is_native`; tool results are `tool` messages with `tool_returns`;
- every agent has `llm_config`, `embedding_config`, `model` and `embedding` (the imported agent's
  own configs when it came from Letta, else the configured Claude model and the MiniLM embedder);
- agent names are limited to letters, digits, spaces, `_`, `-` and `'` (others become `_`); the
  agent's id and creation time here travel in `metadata.memory_agent_id` and
  `metadata.memory_agent_created_at`, so a re-import keeps them;
- groups the agents belonged to are written back with their members and manager; their shared
  blocks are named in each agent's `block_ids` (Letta checks `shared_block_ids` as database ids,
  so that list is left empty).

What the format has no place for travels in documented extensions, which Letta keeps as opaque
metadata and this project reads back:
- archival passages in `metadata.memory_agent_passages` of their agent (`{id, content, tags,
  metadata, created_at, expires_at, superseded_by, importance, access_count, last_accessed_at,
  provenance, sensitivity}` each);
- the rows of ours with no Letta counterpart (the SDK's `result` and `system:*` status records) in
  `metadata.memory_agent_records` of their agent, each with every field of the stored row and
  `after`, the id of the Letta message it followed (null: before the first), so a re-import puts
  it back in its place;
- a block's on-demand flag, version and sensitivity level in the block's `metadata`
  (`memory_agent_in_prompt`, `memory_agent_version`, `memory_agent_sensitivity`), and each passage's
  level as `sensitivity` beside its other fields, so a re-import never makes a secret laxer.
Summaries, the journal and block history are not written (the project's JSON export carries
everything).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from itertools import count
from typing import Any

from ..snapshots.records import AgentRecord, MessageRecord, PassageRecord, Snapshot
from ..snapshots.values import utc_now
from .letta_parts import OUR_AGENT_ID_KEY, OUR_CREATED_AT_KEY

__all__ = [
    "DEFAULT_MODEL",
    "IN_PROMPT_KEY",
    "PASSAGES_KEY",
    "RECORDS_KEY",
    "SENSITIVITY_KEY",
    "VERSION_KEY",
    "to_letta",
]

DEFAULT_MODEL = "claude-sonnet-4-5"
PASSAGES_KEY = "memory_agent_passages"
"""Key of an exported agent's `metadata` holding its archival passages (an extension of ours)."""
RECORDS_KEY = "memory_agent_records"
"""Key of an exported agent's `metadata` holding its rows that have no Letta message form."""
IN_PROMPT_KEY = "memory_agent_in_prompt"
"""Key of an exported block's `metadata`: false for an on-demand block."""
VERSION_KEY = "memory_agent_version"
SENSITIVITY_KEY = "memory_agent_sensitivity"
"""Key of an exported block's `metadata`: its sensitivity level here (absent: private)."""
"""Key of an exported block's `metadata`: its version here."""

_NAME_REFUSED = re.compile(r"[^\w '\-]")


def to_letta(snapshot: Snapshot, *, model: str | None = None) -> dict[str, Any]:
    """The snapshot as an `.af` document Letta validates (see the module doc)."""
    agent_ids = {agent.agent_id: f"agent-{i}" for i, agent in enumerate(snapshot.agents)}
    block_ids = {block.block_id: f"block-{i}" for i, block in enumerate(snapshot.blocks)}
    numbers = count()
    agents = [
        _agent(agent, snapshot, agent_ids, block_ids, numbers, model or DEFAULT_MODEL)
        for agent in snapshot.agents
    ]
    groups = _groups(snapshot.agents, agent_ids)
    for group in groups:
        manager = group["manager_config"].get("manager_agent_id")
        for agent in agents:
            if agent["id"] == manager:
                agent["group_ids"].append(group["id"])
    blocks: list[dict[str, Any]] = [
        {
            "id": block_ids[b.block_id],
            "label": b.label,
            "value": b.value,
            "limit": b.limit,
            "description": b.description,
            "read_only": b.read_only,
            "metadata": {
                IN_PROMPT_KEY: b.in_prompt,
                VERSION_KEY: b.version,
                SENSITIVITY_KEY: b.sensitivity,
            },
            "is_template": False,
            "template_name": None,
            "preserve_on_migration": False,
        }
        for b in snapshot.blocks
    ]
    return {
        "agents": agents,
        "groups": groups,
        "blocks": blocks,
        "files": [],
        "sources": [],
        "tools": [],
        "mcp_servers": [],
        "skills": [],
        "metadata": {"exported_by": "memory-agent"},
        "created_at": utc_now(),
    }


def _agent(
    agent: AgentRecord,
    snapshot: Snapshot,
    agent_ids: Mapping[str, str],
    block_ids: Mapping[str, str],
    numbers: Iterator[int],
    model: str,
) -> dict[str, Any]:
    own = [m for m in snapshot.messages if m.agent_id == agent.agent_id]
    messages, in_context, records = _messages(agent, own, numbers)
    letta = agent.letta
    llm_config = letta.get("llm_config") or _llm_config(model)
    embedding_config = letta.get("embedding_config") or _embedding_config()
    metadata: dict[str, Any] = {
        OUR_AGENT_ID_KEY: agent.agent_id,
        OUR_CREATED_AT_KEY: agent.created_at,
    }
    passages = [_passage(p) for p in snapshot.passages if p.agent_id == agent.agent_id]
    if passages:
        metadata[PASSAGES_KEY] = passages
    if records:
        metadata[RECORDS_KEY] = records
    return {
        "id": agent_ids[agent.agent_id],
        "name": _name(agent.name or agent.agent_id),
        "description": letta.get("description"),
        "agent_type": letta.get("agent_type") or "memgpt_v2_agent",
        "system": agent.system_prompt or "",
        "block_ids": [
            block_ids[a.block_id] for a in snapshot.attachments if a.agent_id == agent.agent_id
        ],
        "memory_blocks": [],
        "tools": [],
        "tool_ids": [],
        "source_ids": [],
        "tool_rules": [],
        "tags": [],
        "files_agents": [],
        "group_ids": [],
        "include_base_tools": False,
        "include_base_tool_rules": False,
        "llm_config": llm_config,
        "embedding_config": embedding_config,
        "model": letta.get("model")
        or _handle(
            llm_config.get("handle"), llm_config.get("model_endpoint_type"), llm_config.get("model")
        ),
        "embedding": letta.get("embedding")
        or _handle(
            embedding_config.get("handle"),
            embedding_config.get("embedding_endpoint_type"),
            embedding_config.get("embedding_model"),
        ),
        "metadata": metadata,
        "messages": messages,
        "in_context_message_ids": in_context,
    }


def _name(name: str) -> str:
    cleaned = _NAME_REFUSED.sub("_", name).strip()
    return cleaned or "agent"


def _handle(handle: Any, provider: Any, model: Any) -> str:
    if isinstance(handle, str) and "/" in handle.strip("/"):
        return handle
    return f"{provider or 'anthropic'}/{model or DEFAULT_MODEL}"


def _llm_config(model: str) -> dict[str, Any]:
    return {
        "model": model,
        "model_endpoint_type": "anthropic",
        "model_endpoint": "https://api.anthropic.com/v1",
        "provider_name": "anthropic",
        "context_window": 200000,
        "handle": f"anthropic/{model}",
        "temperature": 0.7,
        "max_tokens": 8192,
        "put_inner_thoughts_in_kwargs": False,
        "enable_reasoner": False,
    }


def _embedding_config() -> dict[str, Any]:
    return {
        "embedding_endpoint_type": "hugging-face",
        "embedding_endpoint": None,
        "embedding_model": "all-MiniLM-L6-v2",
        "embedding_dim": 384,
        "embedding_chunk_size": 300,
        "handle": "hugging-face/all-MiniLM-L6-v2",
    }


def _passage(passage: PassageRecord) -> dict[str, Any]:
    return {
        "id": passage.passage_id,
        "content": passage.content,
        "tags": list(passage.tags),
        "metadata": passage.metadata,
        "created_at": passage.created_at,
        "expires_at": passage.expires_at,
        "superseded_by": passage.superseded_by,
        "importance": passage.importance,
        "access_count": passage.access_count,
        "last_accessed_at": passage.last_accessed_at,
        "provenance": passage.provenance,
        "sensitivity": passage.sensitivity,
        "context": passage.context,
    }


# ----- messages -----------------------------------------------------------------------------


def _messages(
    agent: AgentRecord, own: Sequence[MessageRecord], numbers: Iterator[int]
) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    """The agent's messages as Letta's, the in-context ids (its system message first), and the rows
    with no Letta form (`RECORDS_KEY`), each naming the Letta message it followed."""
    messages: list[dict[str, Any]] = []
    in_context: list[str] = []
    records: list[dict[str, Any]] = []
    system_id: str | None = None
    if not any(_is_letta_system(m) for m in own):
        system_id = f"message-{next(numbers)}"
        messages.append(
            {
                "type": "message",
                "id": system_id,
                "role": "system",
                "created_at": agent.created_at,
                "content": [{"type": "text", "text": agent.system_prompt or ""}],
            }
        )
    for message in own:
        converted = _letta_messages(message, numbers)
        if not converted:
            records.append(_record(message, messages[-1]["id"] if messages else None))
        for letta in converted:
            messages.append(letta)
            if _is_letta_system(message):
                system_id = letta["id"]
            elif message.in_context:
                in_context.append(letta["id"])
    return messages, ([system_id] if system_id else []) + in_context, records


def _record(message: MessageRecord, after: str | None) -> dict[str, Any]:
    """A row with no Letta form, whole: every stored field but its id, and where it stood."""
    return {
        "after": after,
        "role": message.role,
        "message_type": message.message_type,
        "content": message.content,
        "created_at": message.created_at,
        "in_context": message.in_context,
        "session_id": message.session_id,
        "turn_id": message.turn_id,
        "sdk_uuid": message.sdk_uuid,
        "token_count": message.token_count,
        "metadata": message.metadata,
    }


def _is_letta_system(message: MessageRecord) -> bool:
    return message.role == "system" and message.message_type == "system"


def _letta_messages(message: MessageRecord, numbers: Iterator[int]) -> list[dict[str, Any]]:
    """One of our messages as Letta messages (a user turn of text and tool results becomes two)."""
    base = {"type": "message", "created_at": message.created_at}
    blocks = _as_blocks(message.content)
    if message.role == "assistant":
        return [
            {
                **base,
                "id": f"message-{next(numbers)}",
                "role": "assistant",
                "content": _letta_parts(blocks),
                "tool_calls": _letta_calls(blocks) or None,
            }
        ]
    if _is_letta_system(message):
        return [
            {
                **base,
                "id": f"message-{next(numbers)}",
                "role": "system",
                "content": _letta_parts(blocks),
            }
        ]
    if message.role != "user":
        return []  # the SDK's result and status records have no Letta counterpart
    out: list[dict[str, Any]] = []
    parts = _letta_parts(blocks)
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if parts or not results:
        out.append({**base, "id": f"message-{next(numbers)}", "role": "user", "content": parts})
    if results:
        returns = [
            {
                "tool_call_id": str(r.get("tool_use_id") or ""),
                "status": "error" if r.get("is_error") else "success",
                "func_response": _result_text(r.get("content")),
            }
            for r in results
        ]
        out.append(
            {
                **base,
                "id": f"message-{next(numbers)}",
                "role": "tool",
                "tool_call_id": returns[0]["tool_call_id"],
                "tool_returns": returns,
                "content": [{"type": "text", "text": r["func_response"]} for r in returns],
            }
        )
    return out


def _as_blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _letta_parts(blocks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif block.get("type") == "thinking":
            part = {
                "type": "reasoning",
                "is_native": True,
                "reasoning": str(block.get("thinking", "")),
            }
            if isinstance(block.get("signature"), str):
                part["signature"] = block["signature"]
            parts.append(part)
    return parts


def _letta_calls(blocks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "id": str(b.get("id") or ""),
            "type": "function",
            "function": {
                "name": str(b.get("name") or ""),
                "arguments": json.dumps(b.get("input", {}), ensure_ascii=False),
            },
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "" if content is None else json.dumps(content, ensure_ascii=False)


# ----- groups -------------------------------------------------------------------------------


def _groups(agents: Sequence[AgentRecord], agent_ids: Mapping[str, str]) -> list[dict[str, Any]]:
    """The groups the exported agents belong to, once each, naming only exported agents."""
    seen: dict[str, dict[str, Any]] = {}
    for agent in agents:
        for group in agent.letta.get("groups") or []:
            if not isinstance(group, Mapping) or group.get("key") in seen:
                continue
            config = dict(group.get("manager_config") or {})
            if "manager_agent_id" in config:
                if config["manager_agent_id"] not in agent_ids:
                    continue  # its manager is not in this file: Letta could not rebuild it
                config["manager_agent_id"] = agent_ids[config["manager_agent_id"]]
            config.setdefault("manager_type", "round_robin")
            seen[str(group.get("key"))] = {
                "id": f"group-{len(seen)}",
                "description": str(group.get("description") or ""),
                "agent_ids": [agent_ids[a] for a in group.get("agent_ids") or [] if a in agent_ids],
                "manager_config": config,
                "shared_block_ids": [],
                "project_id": None,
                "hidden": None,
            }
    return list(seen.values())
