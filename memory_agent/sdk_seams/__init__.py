"""Every use of Claude Agent SDK or Claude Code CLI behaviour that their public API does not cover.

Kept in one place so that a new SDK or CLI that changes one of them breaks here, and
`tests/e2e/test_sdk_seams_contract.py` names the seam that moved. The dependency range in
pyproject.toml is capped at the SDK versions these seams were tested with.

The seams:
- `send_system_prompt`: the CLI's `set_model` control request takes a `system_prompt` field that
  the SDK has no public method for (a live memory refresh, about 20 ms instead of a new process).
- `always_loaded`: the `alwaysLoad` key of an MCP server config, read by the CLI but not declared
  by the SDK's `McpSdkServerConfig`.
- `SNAPSHOT_OFF`, `APPEND_PROMPT_FILE_FLAG`, `CLI_COMPACTION_ENV`: CLI flags and environment that
  the SDK passes through untyped (`extra_args`, `env`).
- `transcript`: the CLI's transcript line format, written to seed a resumable session.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import version
from typing import Any

from claude_agent_sdk import ClaudeSDKClient
from claude_agent_sdk.types import McpSdkServerConfig

__all__ = [
    "APPEND_PROMPT_FILE_FLAG",
    "CLI_COMPACTION_ENV",
    "SNAPSHOT_OFF",
    "always_loaded",
    "can_send_system_prompt",
    "sdk_version",
    "send_system_prompt",
]

SNAPSHOT_OFF: Mapping[str, str | None] = {"system-prompt-snapshot": "off"}
"""CLI flag: rebuild the system prompt on every request instead of replaying the one recorded on
the session's first request, so a resumed session sees the current memory. The SDK sets the same
through `snapshot: False` for custom and preset prompts, but not for a file prompt."""

APPEND_PROMPT_FILE_FLAG = "append-system-prompt-file"
"""CLI flag: text appended to a preset system prompt, read from a file (no argument size cap)."""

CLI_COMPACTION_ENV: Mapping[str, str] = {"DISABLE_AUTO_COMPACT": "1"}
"""Turns off the Claude Code CLI's own auto-compaction, so only ours summarises the context."""


def sdk_version() -> str:
    """The installed claude-agent-sdk version (the contract tests print it)."""
    return version("claude-agent-sdk")


def always_loaded(server: McpSdkServerConfig) -> McpSdkServerConfig:
    """The MCP server with `alwaysLoad`: the CLI defers MCP tools behind its tool search unless
    told otherwise, and memory tools are needed in every conversation, so they must be in every
    request's `tools`."""
    marked: dict[str, Any] = {**server, "alwaysLoad": True}
    return marked  # type: ignore[return-value]  # the SDK's TypedDict does not declare alwaysLoad


def _control_sender(client: ClaudeSDKClient) -> Any:
    return getattr(getattr(client, "_query", None), "_send_control_request", None)


def can_send_system_prompt(client: ClaudeSDKClient) -> bool:
    """Whether this SDK still has the private control-request method `send_system_prompt` uses."""
    return _control_sender(client) is not None


async def send_system_prompt(
    client: ClaudeSDKClient, *, model: str | None, system_prompt: str
) -> bool:
    """Give the connected CLI process a new system prompt, keeping process and session.

    A session whose prompt is rebuilt per request (`SNAPSHOT_OFF`) uses it from its next request
    on. Control requests travel as JSON lines on the CLI's stdin, so no argument size limit
    applies (measured with a 430 kB prompt: 13 ms). Returns False when this SDK lacks the method;
    raises what the CLI raises when it refuses the request.
    """
    send = _control_sender(client)
    if send is None:
        return False
    await send({"subtype": "set_model", "model": model, "system_prompt": system_prompt})
    return True
