"""The memory tools served to the model as an in-process SDK MCP server named `memory`.

A thin adapter: each tool spec from the manager becomes an `SdkMcpTool` whose handler calls
`MemoryManager.execute_tool` for one agent. Errors come back as MCP error results (`is_error`),
so the model sees the message and the turn goes on. A tool set (`memory_tool.ToolSet`: "letta",
"anthropic" or "both") chooses between Letta's block tools and Anthropic's `memory` tool
(`mcp__memory__memory`); the archival tools come with every set.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server
from claude_agent_sdk.types import McpSdkServerConfig

from .manager import MemoryManager
from .memory_tool import DEFAULT_TOOL_SET, specs_for_tool_set
from .tool_specs import ToolSpec

__all__ = ["MEMORY_SERVER_NAME", "build_memory_server", "memory_tool_names"]

MEMORY_SERVER_NAME = "memory"


def memory_tool_names(memory: MemoryManager, server_name: str = MEMORY_SERVER_NAME, *,
                      tool_set: str = DEFAULT_TOOL_SET) -> list[str]:
    """The names the model sees: mcp__<server>__<tool>."""
    return [f"mcp__{server_name}__{spec.name}" for spec in specs_for_tool_set(memory.tool_specs(), tool_set)]


def _sdk_tool(memory: MemoryManager, agent_id: str, spec: ToolSpec) -> SdkMcpTool[Any]:
    async def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        outcome = memory.execute_tool(spec.name, arguments, agent_id=agent_id)
        return {"content": [{"type": "text", "text": outcome.text}], "is_error": outcome.is_error}

    return SdkMcpTool(name=spec.name, description=spec.description,
                      input_schema=spec.input_schema, handler=handler)


def build_memory_server(memory: MemoryManager, agent_id: str, *,
                        tool_set: str = DEFAULT_TOOL_SET) -> McpSdkServerConfig:
    """An SDK MCP server whose tools (those of `tool_set`) act on `agent_id`'s memory."""
    tools = [_sdk_tool(memory, agent_id, spec) for spec in specs_for_tool_set(memory.tool_specs(), tool_set)]
    server = create_sdk_mcp_server(name=MEMORY_SERVER_NAME, version="1.0.0", tools=tools)
    # The CLI defers MCP tools behind its tool search unless told otherwise; memory tools are
    # needed in every conversation, so they are always loaded into the request's `tools`.
    return {**server, "alwaysLoad": True}  # type: ignore[typeddict-unknown-key]
