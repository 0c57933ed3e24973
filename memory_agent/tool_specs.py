"""The model-facing memory tools: name, description, input schema and the manager call behind each.

This is the single definition of the tools. `get_tools_definitions()` serves it as Anthropic tool
schemas, and the SDK adapter (`memory_agent.tools`) serves the same specs as an in-process MCP
server, so a tool can never mean one thing to the model and another to the code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import ConfigurationError
from .validation import check_json

if TYPE_CHECKING:
    from .manager import MemoryManager

__all__ = ["CORE_MEMORY_TOOLS", "ToolArgumentError", "ToolSpec", "validate_arguments"]


class ToolArgumentError(ConfigurationError):
    """The model sent arguments that do not match the tool's schema."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    properties: Mapping[str, Mapping[str, Any]]
    required: Sequence[str]
    run: Callable[[MemoryManager, Mapping[str, Any], str], str] = field(repr=False)
    """Calls the manager for one agent: (manager, validated arguments, agent_id) -> result text."""

    @property
    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {name: dict(schema) for name, schema in self.properties.items()},
            "required": list(self.required),
            "additionalProperties": False,
        }

    def definition(self) -> dict[str, Any]:
        """The Anthropic Messages API tool schema."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def validate_arguments(spec: ToolSpec, arguments: object) -> dict[str, Any]:
    """Check required fields, JSON types and schema bounds; unknown fields are refused so typos
    surface, and text must be valid Unicode (see `validation`)."""
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError(f"{spec.name} takes an object of arguments.")
    check_json(f"{spec.name} arguments", arguments)
    missing = [name for name in spec.required if arguments.get(name) is None]
    if missing:
        raise ToolArgumentError(f"{spec.name} is missing required argument(s): {', '.join(missing)}.")
    unknown = sorted(set(arguments) - set(spec.properties))
    if unknown:
        raise ToolArgumentError(
            f"{spec.name} does not take {', '.join(unknown)}; it takes {', '.join(spec.properties)}."
        )
    clean: dict[str, Any] = {}
    for name, value in arguments.items():
        if value is None:
            continue
        schema = spec.properties[name]
        expected = schema.get("type", "string")
        allowed = _PYTHON_TYPES.get(expected, (object,))
        is_bool_as_number = isinstance(value, bool) and expected in {"integer", "number"}
        if not isinstance(value, allowed) or is_bool_as_number:
            raise ToolArgumentError(f"{spec.name}: '{name}' must be a {expected}.")
        if expected in {"integer", "number"} and not schema.get("minimum", value) <= value <= schema.get(
                "maximum", value):
            raise ToolArgumentError(f"{spec.name}: '{name}' must be from {schema.get('minimum', '-inf')} to "
                                    f"{schema.get('maximum', 'inf')}, got {value}.")
        clean[name] = value
    return clean


_LABEL = {"type": "string", "description": (
    "Label of the memory block, e.g. 'human', 'persona' or a path such as 'system/human/family'.")}

CORE_MEMORY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="core_memory_append",
        description=(
            "Append text to the end of one of your core memory blocks, on a new line. Use it to "
            "remember new facts about the user or yourself that you will need in every conversation."
        ),
        properties={"label": _LABEL, "content": {"type": "string", "description": "Text to append."}},
        required=("label", "content"),
        run=lambda memory, a, agent: memory.core_memory_append(a["label"], a["content"], agent_id=agent),
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
            "new_value": {"type": "string", "description": "The complete new content of the block."},
            "reasoning": {"type": "string", "description": "Why the block is being rewritten."},
        },
        required=("label", "new_value"),
        run=lambda memory, a, agent: memory.memory_rethink(
            a["label"], a["new_value"], a.get("reasoning"), agent_id=agent
        ),
    ),
)
