"""The memory tools served to the model as an in-process SDK MCP server named `memory`.

A thin adapter: each tool spec becomes an `SdkMcpTool` whose handler runs `aexecute_tool` for one
agent, in a worker thread so a slow tool (embedding, loading the model) never stalls the event
loop other agents of the process share. Errors come back as MCP error results (`is_error`), so the
model sees the message and the turn goes on. A tool set (`memory_tool.ToolSet`: "letta",
"anthropic" or "both") chooses between Letta's block tools and Anthropic's `memory` tool
(`mcp__memory__memory`); the archival tools come with every set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server
from claude_agent_sdk.types import McpSdkServerConfig

from ..sdk_seams import always_loaded
from .dispatch import ALL_TOOLS, aexecute_tool
from .memory_tool import DEFAULT_TOOL_SET, specs_for_tool_set
from .spec import ToolSpec

if TYPE_CHECKING:
    from ..manager import MemoryManager

__all__ = ["MEMORY_SERVER_NAME", "build_memory_server", "memory_tool_names"]

MEMORY_SERVER_NAME = "memory"


def memory_tool_names(
    memory: MemoryManager | None = None,
    server_name: str = MEMORY_SERVER_NAME,
    *,
    tool_set: str = DEFAULT_TOOL_SET,
) -> list[str]:
    """The names the model sees: mcp__<server>__<tool> (`memory` is accepted for old callers)."""
    return [f"mcp__{server_name}__{spec.name}" for spec in specs_for_tool_set(ALL_TOOLS, tool_set)]


def _sdk_tool(
    memory: MemoryManager, agent_id: str, spec: ToolSpec, allow_secret: bool
) -> SdkMcpTool[Any]:
    async def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        outcome = await aexecute_tool(
            memory, spec.name, arguments, agent_id=agent_id, allow_secret=allow_secret
        )
        return {"content": [{"type": "text", "text": outcome.text}], "is_error": outcome.is_error}

    return SdkMcpTool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema,
        handler=handler,
    )


def build_memory_server(
    memory: MemoryManager,
    agent_id: str,
    *,
    tool_set: str = DEFAULT_TOOL_SET,
    allow_secret: bool = False,
) -> McpSdkServerConfig:
    """An SDK MCP server whose tools (those of `tool_set`) act on `agent_id`'s memory and see what
    that agent is allowed (`allow_secret`: its secret blocks and passages too)."""
    tools = [
        _sdk_tool(memory, agent_id, spec, allow_secret)
        for spec in specs_for_tool_set(ALL_TOOLS, tool_set)
    ]
    return always_loaded(
        create_sdk_mcp_server(name=MEMORY_SERVER_NAME, version="1.0.0", tools=tools)
    )
