"""What each inspector page shows, gathered through `MemoryManager`'s public API only.

Functions here are synchronous (the app runs them in a worker thread) and return plain
dictionaries for the templates. None of them lists every passage or runs a query per block: the
memory page reads the blocks in one query, the counts in one more, and the attachments of shared
blocks with one query per other agent.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..conversation.recall import StoredMessage, StoredSummary
from ..core.blocks import Block, BlockVersion
from ..core.memory_paths import memory_path
from ..errors import AgentNotFoundError, ConfigurationError
from ..maintenance.admin import list_agent_info
from ..manager import MemoryManager

__all__ = [
    "HISTORY_SHOWN",
    "JOURNAL_SHOWN",
    "PASSAGES_PER_PAGE",
    "SEARCH_MODES",
    "agents_page",
    "block_page",
    "conversation_page",
    "journal_page",
    "memory_page",
    "metrics_page",
    "prompt_page",
    "require_agent",
    "search_page",
]

SEARCH_MODES = ("hybrid", "keyword", "vector", "scored")
PASSAGES_PER_PAGE = 50
JOURNAL_SHOWN = 200
HISTORY_SHOWN = 50
MESSAGES_SHOWN = 200
SEARCH_HITS = 20
DIFF_LIMIT = 40_000
"""Characters of old plus new value above which the journal shows the values, not a diff."""


def require_agent(memory: MemoryManager, agent_id: str) -> None:
    """AgentNotFoundError (a 404 page) for an agent the storage dir does not hold."""
    if agent_id not in memory.list_agents():
        raise AgentNotFoundError(agent_id)


def agents_page(memory: MemoryManager) -> dict[str, Any]:
    rows = []
    for info in list_agent_info(memory):
        newest = memory.journal(agent_id=info.agent_id, limit=1)
        recent = memory.get_recent_messages(1, agent_id=info.agent_id, in_context_only=False)
        times = [
            stamp
            for stamp in (
                newest[0].created_at if newest else None,
                recent[-1].created_at if recent else None,
            )
            if stamp
        ]
        rows.append({"info": info, "last_activity": max(times) if times else None})
    return {"agents": rows}


@dataclass
class _Row:
    """One line of the /memories tree: a directory heading or a block."""

    depth: int
    name: str
    block: Block | None = None
    path: str = ""
    shared_with: list[str] = field(default_factory=list)
    sensitivity: str | None = None


def _tree(blocks: Iterable[Block], shared: dict[str, list[str]]) -> list[_Row]:
    """Blocks sorted by path, with a heading row for each directory the first time it appears."""
    rows: list[_Row] = []
    opened: set[tuple[str, ...]] = set()
    for block in sorted(blocks, key=lambda b: b.label):
        parts = block.label.split("/")
        for depth in range(1, len(parts)):
            directory = tuple(parts[:depth])
            if directory not in opened:
                opened.add(directory)
                rows.append(_Row(depth=depth - 1, name=parts[depth - 1] + "/"))
        rows.append(
            _Row(
                depth=len(parts) - 1,
                name=parts[-1],
                block=block,
                path=memory_path(block.label),
                shared_with=shared.get(block.block_id, []),
                sensitivity=block.sensitivity,
            )
        )
    return rows


def _shared_with(memory: MemoryManager, agent_id: str, blocks: list[Block]) -> dict[str, list[str]]:
    """For each shared block, the other agents it is attached to (one query per other agent, none
    when the agent has no shared block)."""
    shared_ids = {block.block_id for block in blocks if block.is_shared}
    found: dict[str, list[str]] = {block_id: [] for block_id in shared_ids}
    if not shared_ids:
        return found
    for other in memory.list_agents():
        if other == agent_id:
            continue
        for block_id in shared_ids.intersection(memory.block_versions(agent_id=other)):
            found[block_id].append(other)
    return found


def memory_page(memory: MemoryManager, agent_id: str) -> dict[str, Any]:
    require_agent(memory, agent_id)
    blocks = memory.list_blocks(agent_id=agent_id)
    counts = memory.turn_context(agent_id=agent_id)
    shared = _shared_with(memory, agent_id, blocks)
    in_prompt = [block for block in blocks if block.in_prompt]
    return {
        "agent_id": agent_id,
        "rows": _tree(blocks, shared),
        "block_count": len(blocks),
        "in_prompt_count": len(in_prompt),
        "in_prompt_chars": sum(len(block.value) for block in in_prompt),
        "messages": counts.recall_messages,
        "passages": counts.archival_passages,
    }


def _diff(older: str, newer: str) -> list[tuple[str, str]]:
    """Unified diff lines of two versions, each with its kind (add, del, hunk, same) for styling."""
    lines = []
    for line in difflib.unified_diff(
        older.splitlines(), newer.splitlines(), "before", "after", lineterm="", n=2
    ):
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        lines.append((kind, line))
    return lines


def block_page(memory: MemoryManager, agent_id: str, label: str) -> dict[str, Any]:
    require_agent(memory, agent_id)
    block = memory.get_block(label, agent_id=agent_id)
    history: list[BlockVersion] = memory.block_history(label, agent_id=agent_id)
    versions = []
    first_shown = max(0, len(history) - HISTORY_SHOWN)  # diffs only for the versions the page shows
    for index in range(len(history) - 1, first_shown - 1, -1):
        previous = history[index - 1].value if index else ""
        versions.append({"version": history[index], "diff": _diff(previous, history[index].value)})
    return {
        "agent_id": agent_id,
        "block": block,
        "path": memory_path(block.label),
        "versions": versions,
        "hidden_versions": first_shown,
        "sensitivity": block.sensitivity,
        "fill": _fill(block),
    }


def _fill(block: Block) -> dict[str, Any]:
    used = len(block.value)
    return {
        "used": used,
        "limit": block.limit,
        "percent": round(100 * used / block.limit) if block.limit else 0,
    }


def journal_page(memory: MemoryManager, agent_id: str, author_kind: str | None) -> dict[str, Any]:
    require_agent(memory, agent_id)
    entries = memory.journal(agent_id=agent_id, limit=JOURNAL_SHOWN, author_kind=author_kind)
    shown = []
    for entry in entries:
        old, new = entry.old_value, entry.new_value
        # A change of text reads best as a diff; a creation or deletion shows its one value.
        both = old is not None and new is not None and len(old) + len(new) <= DIFF_LIMIT
        shown.append({"entry": entry, "diff": _diff(old or "", new or "") if both else None})
    return {
        "agent_id": agent_id,
        "entries": shown,
        "author_kind": author_kind,
        "limit": JOURNAL_SHOWN,
    }


def conversation_page(memory: MemoryManager, agent_id: str, limit: int) -> dict[str, Any]:
    """The newest `limit` messages in order, each summary placed after the last message it
    replaced."""
    require_agent(memory, agent_id)
    messages: list[StoredMessage] = memory.get_recent_messages(
        limit, agent_id=agent_id, in_context_only=False
    )
    summaries: list[StoredSummary] = memory.list_summaries(agent_id=agent_id)
    shown_ids = {message.message_id for message in messages}
    after: dict[int, list[StoredSummary]] = {}
    earlier: list[StoredSummary] = []
    for summary in summaries:
        if summary.last_message_id is not None and summary.last_message_id in shown_ids:
            after.setdefault(summary.last_message_id, []).append(summary)
        elif (
            messages
            and summary.last_message_id is not None
            and summary.last_message_id > messages[-1].message_id
        ):
            after.setdefault(messages[-1].message_id, []).append(summary)
        else:
            earlier.append(summary)
    items: list[dict[str, Any]] = [{"summary": summary} for summary in earlier]
    covered = max(
        (s.last_message_id for s in summaries if s.last_message_id is not None), default=0
    )
    for message in messages:
        # Out of context and covered by a summary: compaction replaced it. Out of context otherwise:
        # a record that never went to the model (the SDK's result and system messages).
        items.append(
            {
                "message": message,
                "replaced": not message.in_context and message.message_id <= covered,
            }
        )
        items.extend({"summary": summary} for summary in after.get(message.message_id, []))
    total = memory.count_messages(agent_id=agent_id)
    return {
        "agent_id": agent_id,
        "items": items,
        "shown": len(messages),
        "total": total,
        "limit": limit,
        "summaries": len(summaries),
    }


def search_page(
    memory: MemoryManager, agent_id: str, query: str, mode: str, page: int
) -> dict[str, Any]:
    """Hits with every signal's score for a query; without one, the passages a page at a time."""
    require_agent(memory, agent_id)
    if mode not in SEARCH_MODES:
        raise ConfigurationError(
            f"A search mode is one of {', '.join(SEARCH_MODES)}; got {mode[:40]!r}."
        )
    total = memory.turn_context(agent_id=agent_id).archival_passages
    base = {
        "agent_id": agent_id,
        "query": query,
        "mode": mode,
        "modes": SEARCH_MODES,
        "total": total,
        "page": page,
        "per_page": PASSAGES_PER_PAGE,
    }
    if query.strip():
        hits = memory.archival_memory_search(
            query,
            SEARCH_HITS,
            mode=mode,  # type: ignore[arg-type]  # checked above
            agent_id=agent_id,
            explain=True,
            count_access=False,
        )
        return {**base, "hits": hits, "passages": None}
    passages = memory.archival_memory_list(
        PASSAGES_PER_PAGE, page * PASSAGES_PER_PAGE, agent_id=agent_id
    )
    return {
        **base,
        "hits": None,
        "passages": passages,
        "has_next": (page + 1) * PASSAGES_PER_PAGE < total,
    }


def prompt_page(memory: MemoryManager, agent_id: str) -> dict[str, Any]:
    """The system text the agent would send now: its base prompt (when it has one) and the rendered
    memory, joined as `MemoryAwareAgent` joins them. Rendering here marks nothing as seen."""
    require_agent(memory, agent_id)
    base = memory.get_base_system_prompt(agent_id=agent_id)
    rendered = memory.get_system_prompt_addition(agent_id=agent_id, mark_seen=False)
    text = rendered if not base else f"{base}\n\n{rendered}"
    tools = memory.get_tools_definitions()
    return {
        "agent_id": agent_id,
        "text": text,
        "tokens": memory.count_tokens(text),
        "has_base": base is not None,
        "tool_tokens": memory.count_tokens(json.dumps(tools, ensure_ascii=False)),
        "tool_count": len(tools),
    }


_USAGE_FIELDS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


def metrics_page(memory: MemoryManager, agent_id: str) -> dict[str, Any]:
    """What was recorded: the API's usage of each turn the agent ran (its result messages), every
    compaction's tokens before and after, and the consolidation sessions."""
    require_agent(memory, agent_id)
    turns = []
    for message in memory.all_messages(agent_id=agent_id):
        if message.message_type != "result":
            continue
        usage = message.metadata.get("usage") if isinstance(message.metadata, dict) else None
        row: dict[str, Any] = {
            "at": message.created_at,
            "session": message.session_id,
            "cost": message.metadata.get("total_cost_usd")
            if isinstance(message.metadata, dict)
            else None,
        }
        for name in _USAGE_FIELDS:
            value = usage.get(name) if isinstance(usage, dict) else None
            row[name] = value if isinstance(value, int) else None
        turns.append(row)
    summaries = memory.list_summaries(agent_id=agent_id)
    sessions = memory.list_consolidations(agent_id=agent_id, limit=20)
    totals = {name: sum(row[name] or 0 for row in turns) for name in _USAGE_FIELDS}
    return {
        "agent_id": agent_id,
        "turns": turns[-200:],
        "turn_count": len(turns),
        "totals": totals,
        "summaries": summaries,
        "sessions": sessions,
        "fields": _USAGE_FIELDS,
    }
