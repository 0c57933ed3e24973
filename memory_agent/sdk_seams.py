"""Every use of Claude Agent SDK or Claude Code CLI behaviour that the SDK does not document.

Kept in one place so that a new SDK or CLI that changes one of them breaks one module, and
`tests/e2e/test_sdk_seams_contract.py` says which seam moved. The dependency range in
pyproject.toml is capped at the SDK versions these seams were tested with.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from claude_agent_sdk.types import McpSdkServerConfig

__all__ = ["always_loaded", "sdk_version"]


def sdk_version() -> str:
    """The installed claude-agent-sdk version (printed by the contract tests and `doctor`)."""
    return version("claude-agent-sdk")


def always_loaded(server: McpSdkServerConfig) -> McpSdkServerConfig:
    """The MCP server with `alwaysLoad`: the CLI defers MCP tools behind its tool search unless
    told otherwise, and memory tools are needed in every conversation, so they must be in every
    request's `tools`. The key is read by the CLI but not declared in the SDK's TypedDict."""
    marked: dict[str, Any] = {**server, "alwaysLoad": True}
    return marked  # type: ignore[return-value]  # the SDK's TypedDict does not declare alwaysLoad
