"""The parts of a Letta agent file beyond blocks and messages: agent details, groups, the rest.

Kept (in the agent's state, for a later Letta export): the agent's type, model and embedding
configs, description, and the groups it belongs to. A group's agents share its shared blocks, so
those are attached to every agent of the group; a block that several agents name is one shared
block already. What nothing here can run (tools, tool rules, skills, files, sources, MCP servers,
a group's manager) is listed by name in `Snapshot.notes`, so the import report names it; tools
the memory tools provide under the same name (`memory_insert`, `conversation_search`, ...) are
listed apart.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Mapping
from typing import Any

from ..snapshots.records import AttachmentRecord, ImportNotes, Snapshot
from ..tools import ARCHIVAL_TOOLS, CORE_MEMORY_TOOLS

__all__ = [
    "OUR_AGENT_ID_KEY",
    "OUR_CREATED_AT_KEY",
    "add_groups",
    "agent_details",
    "attach_block",
    "note_not_imported",
]

OUR_AGENT_ID_KEY = "memory_agent_id"
"""Key of an exported agent's `metadata` holding its id here (so a re-import keeps it)."""
OUR_CREATED_AT_KEY = "memory_agent_created_at"
"""Key of an exported agent's `metadata` holding when it was created here."""

_KEPT_CONFIGS = ("llm_config", "embedding_config")
_OUR_TOOLS = frozenset(spec.name for spec in CORE_MEMORY_TOOLS + ARCHIVAL_TOOLS)


def agent_details(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What a Letta export of this agent needs again: type, model configs, description."""
    details: dict[str, Any] = {
        key: dict(raw[key]) for key in _KEPT_CONFIGS if isinstance(raw.get(key), Mapping)
    }
    for key in ("agent_type", "description", "model", "embedding"):
        if isinstance(raw.get(key), str) and raw[key]:
            details[key] = raw[key]
    return json.loads(json.dumps(details, default=str))  # plain JSON, whatever the file held


def attach_block(snapshot: Snapshot, agent_id: str, block_id: str, attached_at: str) -> None:
    """Attach a block of the snapshot to an agent once; a block two agents hold is shared."""
    if any(a.agent_id == agent_id and a.block_id == block_id for a in snapshot.attachments):
        return
    position = next(i for i, b in enumerate(snapshot.blocks) if b.block_id == block_id)
    block = snapshot.blocks[position]
    if any(a.block_id == block_id for a in snapshot.attachments) and not block.is_shared:
        snapshot.blocks[position] = block = dataclasses.replace(block, is_shared=True)
    snapshot.attachments.append(
        AttachmentRecord(agent_id, block_id, block.label, False, attached_at)
    )


def add_groups(
    snapshot: Snapshot,
    groups: Any,
    agent_ids: Mapping[str, str],
    block_ids: Mapping[str, str],
    created: str,
) -> None:
    """Each group: its shared blocks attached to all its agents, the group kept by each of them."""
    for raw in groups if isinstance(groups, list) else []:
        if not isinstance(raw, Mapping):
            continue
        config = (
            dict(raw["manager_config"]) if isinstance(raw.get("manager_config"), Mapping) else {}
        )
        manager = agent_ids.get(str(config.get("manager_agent_id")))
        if "manager_agent_id" in config:
            config["manager_agent_id"] = manager
        members = [agent_ids[str(a)] for a in raw.get("agent_ids") or [] if str(a) in agent_ids]
        shared = [
            block_ids[str(b)] for b in raw.get("shared_block_ids") or [] if str(b) in block_ids
        ]
        group = {
            "key": f"group-{uuid.uuid4().hex}",
            "description": str(raw.get("description") or ""),
            "manager_config": config,
            "agent_ids": members,
            "shared_block_ids": shared,
        }
        participants = list(dict.fromkeys([*([manager] if manager else []), *members]))
        for agent in snapshot.agents:
            if agent.agent_id in participants:
                agent.letta.setdefault("groups", []).append(group)
        for agent_id in participants:
            for block_id in shared:
                if not _holds_other_block_labelled(snapshot, agent_id, block_id):
                    attach_block(snapshot, agent_id, block_id, created)
        kind = config.get("manager_type") or "round_robin"
        who = ", ".join(participants) or "no agent"
        note = f"{raw.get('id', 'group')}: {kind} manager of {who} (kept for export; not run here)"
        snapshot.notes.skip("group_managers", [note])


def _holds_other_block_labelled(snapshot: Snapshot, agent_id: str, block_id: str) -> bool:
    """Whether the agent already has another block under this block's label (it keeps its own)."""
    label = next(b.label for b in snapshot.blocks if b.block_id == block_id)
    return any(
        a.agent_id == agent_id and a.label == label and a.block_id != block_id
        for a in snapshot.attachments
    )


def note_not_imported(notes: ImportNotes, document: Mapping[str, Any]) -> None:
    """Name everything in the file that has no counterpart here."""
    tools = _names(document.get("tools"), "name")
    notes.tools_provided = [name for name in tools if name in _OUR_TOOLS]
    notes.skip("tools", [name for name in tools if name not in _OUR_TOOLS])
    notes.skip("skills", _names(document.get("skills"), "name"))
    notes.skip("files", _names(document.get("files"), "file_name"))
    notes.skip("sources", _names(document.get("sources"), "name"))
    notes.skip("mcp_servers", _names(document.get("mcp_servers"), "server_name"))
    for raw in document.get("agents") or []:
        if not isinstance(raw, Mapping):
            continue
        who = str(raw.get("name") or raw.get("id") or "agent")
        rules = [r for r in raw.get("tool_rules") or [] if isinstance(r, Mapping)]
        notes.skip(
            "tool_rules",
            [f"{who}: {r.get('type', 'rule')} on {r.get('tool_name', '?')}" for r in rules],
        )


def _names(items: Any, key: str) -> list[str]:
    if not isinstance(items, list):
        return []
    return [
        str(item.get(key) or item.get("id") or "?") if isinstance(item, Mapping) else "?"
        for item in items
    ]
