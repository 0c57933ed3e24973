"""The memory tools served to the model as an in-process SDK MCP server named `memory`.

A thin adapter: each tool spec from the manager becomes an `SdkMcpTool` whose handler calls
`MemoryManager.execute_tool` for one agent. Errors come back as MCP error results (`is_error`),
so the model sees the message and the turn goes on.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server
from claude_agent_sdk.types import McpSdkServerConfig

from .manager import MemoryManager
from .tool_specs import ToolSpec

__all__ = ["MEMORY_SERVER_NAME", "build_memory_server", "memory_tool_names"]

MEMORY_SERVER_NAME = "memory"


def memory_tool_names(memory: MemoryManager, server_name: str = MEMORY_SERVER_NAME) -> list[str]:
    """The names the model sees: mcp__<server>__<tool>."""
    return [f"mcp__{server_name}__{spec.name}" for spec in memory.tool_specs()]


def _sdk_tool(memory: MemoryManager, agent_id: str, spec: ToolSpec) -> SdkMcpTool[Any]:
    async def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        outcome = memory.execute_tool(spec.name, arguments, agent_id=agent_id)
        return {"content": [{"type": "text", "text": outcome.text}], "is_error": outcome.is_error}

    return SdkMcpTool(name=spec.name, description=spec.description,
                      input_schema=spec.input_schema, handler=handler)


def build_memory_server(memory: MemoryManager, agent_id: str) -> McpSdkServerConfig:
    """An SDK MCP server whose tools act on `agent_id`'s memory."""
    tools = [_sdk_tool(memory, agent_id, spec) for spec in memory.tool_specs()]
    server = create_sdk_mcp_server(name=MEMORY_SERVER_NAME, version="1.0.0", tools=tools)
    # The CLI defers MCP tools behind its tool search unless told otherwise; memory tools are
    # needed in every conversation, so they are always loaded into the request's `tools`.
    return {**server, "alwaysLoad": True}  # type: ignore[typeddict-unknown-key]
