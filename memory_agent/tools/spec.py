"""What a model-facing tool is: name, description, input schema and the manager call behind it.

A `ToolSpec` is the single definition of a tool. `dispatch.get_tools_definitions()` serves the
specs as Anthropic tool schemas and the SDK adapter (`tools.mcp`) serves the same specs as an
in-process MCP server, so a tool can never mean one thing to the model and another to the code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, preview
from ..validation import check_json

if TYPE_CHECKING:
    from ..manager import MemoryManager

__all__ = ["ToolArgumentError", "ToolSpec", "validate_arguments"]


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
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


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
        raise ToolArgumentError(
            f"{spec.name} is missing required argument(s): {', '.join(missing)}."
        )
    unknown = sorted(set(arguments) - set(spec.properties))
    if unknown:
        named = ", ".join(preview(str(key), 64) for key in unknown[:5]) + (
            ", ..." if len(unknown) > 5 else ""
        )
        raise ToolArgumentError(
            f"{spec.name} does not take {named}; it takes {', '.join(spec.properties)}."
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
        if isinstance(value, (int, float)):
            _check_bounds(spec.name, name, schema, value)
        if isinstance(value, list):
            _check_items(spec.name, name, schema, value)
        clean[name] = value
    return clean


def _check_bounds(tool: str, name: str, schema: Mapping[str, Any], value: float) -> None:
    if not schema.get("minimum", value) <= value <= schema.get("maximum", value):
        raise ToolArgumentError(
            f"{tool}: '{name}' must be from {schema.get('minimum', '-inf')} to "
            f"{schema.get('maximum', 'inf')}, got {value}."
        )


def _check_items(tool: str, name: str, schema: Mapping[str, Any], values: list[Any]) -> None:
    """Each element of an array must have the declared `items` type (e.g. tags are strings)."""
    expected = schema.get("items", {}).get("type")
    if expected is None:
        return
    allowed = _PYTHON_TYPES.get(expected, (object,))
    for value in values:
        if not isinstance(value, allowed) or (
            isinstance(value, bool) and expected in {"integer", "number"}
        ):
            raise ToolArgumentError(
                f"{tool}: '{name}' must be a list of {expected}s, "
                f"got a {type(value).__name__} in it."
            )
