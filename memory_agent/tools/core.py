"""Letta's core-memory tools (append, replace, insert, rethink) as the model sees them.

Each `ToolSpec.run` calls one public `MemoryManager` method, so the model and the Python API share
one code path.
"""

from __future__ import annotations

from .spec import ToolSpec

__all__ = ["CORE_MEMORY_TOOLS"]

_LABEL = {
    "type": "string",
    "description": (
        "Label of the memory block, e.g. 'human', 'persona' or a path such as "
        "'system/human/family'."
    ),
}

CORE_MEMORY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="core_memory_append",
        description=(
            "Append text to the end of one of your core memory blocks, on a new line. Use it to "
            "remember new facts about the user or yourself that you will need in every "
            "conversation."
        ),
        properties={
            "label": _LABEL,
            "content": {"type": "string", "description": "Text to append."},
        },
        required=("label", "content"),
        run=lambda memory, a, agent: memory.core_memory_append(
            a["label"], a["content"], agent_id=agent
        ),
    ),
    ToolSpec(
        name="core_memory_replace",
        description=(
            "Replace an exact piece of text in a core memory block. old_content must occur exactly "
            "once in the block; an empty new_content deletes it."
        ),
        properties={
            "label": _LABEL,
            "old_content": {"type": "string", "description": "Exact text to replace."},
            "new_content": {"type": "string", "description": "Replacement text."},
        },
        required=("label", "old_content", "new_content"),
        run=lambda memory, a, agent: memory.core_memory_replace(
            a["label"], a["old_content"], a["new_content"], agent_id=agent
        ),
    ),
    ToolSpec(
        name="memory_insert",
        description=(
            "Insert text into a core memory block on a new line after the first occurrence "
            "(case-insensitive) of insert_after, or at the end when insert_after is omitted."
        ),
        properties={
            "label": _LABEL,
            "text": {"type": "string", "description": "Text to insert."},
            "insert_after": {"type": "string", "description": "Existing text to insert after."},
        },
        required=("label", "text"),
        run=lambda memory, a, agent: memory.memory_insert(
            a["label"], a["text"], a.get("insert_after"), agent_id=agent
        ),
    ),
    ToolSpec(
        name="memory_rethink",
        description=(
            "Rewrite a core memory block completely, for reorganising or condensing it. Give your "
            "reasoning; it is kept in the journal and in archival memory."
        ),
        properties={
            "label": _LABEL,
            "new_value": {
                "type": "string",
                "description": "The complete new content of the block.",
            },
            "reasoning": {"type": "string", "description": "Why the block is being rewritten."},
        },
        required=("label", "new_value"),
        run=lambda memory, a, agent: memory.memory_rethink(
            a["label"], a["new_value"], a.get("reasoning"), agent_id=agent
        ),
    ),
)
