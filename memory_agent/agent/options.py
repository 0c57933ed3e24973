"""Merging the user's `ClaudeAgentOptions` with what the memory layer adds.

Nothing the user set is dropped: their system prompt (string, preset, custom or file) gets the
rendered memory appended, their MCP servers get the `memory` server beside them, their allowed
tools get the memory tools added, and their environment gets the variable that keeps the CLI's
own auto-compaction from firing before ours.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk.types import McpSdkServerConfig

from ..errors import ConfigurationError

__all__ = ["CLI_COMPACTION_ENV", "compose_system_prompt", "merge_options", "user_system_text", "with_base_prompt"]

CLI_COMPACTION_ENV = {"DISABLE_AUTO_COMPACT": "1"}
"""Turns off the Claude Code CLI's own auto-compaction, so only ours summarises the context."""


def with_base_prompt(options: ClaudeAgentOptions, base_prompt: str | None) -> ClaudeAgentOptions:
    """The options with the agent's own base prompt when the user named no system prompt.

    An agent imported from Letta keeps its `system` prompt; the user's own prompt, if any,
    always wins.
    """
    if options.system_prompt is not None or not base_prompt:
        return options
    return dataclasses.replace(options, system_prompt=base_prompt)


def user_system_text(system_prompt: Any) -> str | None:
    """The user's own system prompt text, or None when they use a preset or set none."""
    if system_prompt is None:
        return None
    if isinstance(system_prompt, str):
        return system_prompt
    kind = system_prompt.get("type")
    if kind == "custom":
        return str(system_prompt.get("prompt", ""))
    if kind == "file":
        path = Path(system_prompt["path"])
        try:
            return path.read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigurationError(f"Cannot read the system prompt file {path}: {error}.") from error
    if kind == "preset":
        return system_prompt.get("append")
    raise ConfigurationError(f"Unknown system prompt type {kind!r}; use a string, a preset, custom or file.")


def compose_system_prompt(system_prompt: Any, memory_text: str) -> dict[str, Any]:
    """The user's system prompt followed by the memory, rebuilt on every request of the session.

    `snapshot: False` makes a resumed session use this prompt instead of the one it recorded
    on its first request, which is what lets memory change between turns.
    """
    own = user_system_text(system_prompt)
    combined = memory_text if not own else f"{own}\n\n{memory_text}"
    if isinstance(system_prompt, dict) and system_prompt.get("type") == "preset":
        return {**system_prompt, "append": combined, "snapshot": False}
    return {"type": "custom", "prompt": combined, "snapshot": False}


def _user_servers(mcp_servers: Any) -> dict[str, Any]:
    if isinstance(mcp_servers, dict):
        return dict(mcp_servers)
    path = Path(mcp_servers)
    try:
        document = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else json.loads(str(mcp_servers))
    except (OSError, ValueError) as error:
        raise ConfigurationError(f"Cannot read the MCP server config {mcp_servers}: {error}.") from error
    return dict(document.get("mcpServers", document))


def merge_options(
    user: ClaudeAgentOptions,
    *,
    memory_text: str,
    memory_server_name: str,
    memory_server: McpSdkServerConfig,
    memory_tools: list[str],
    resume: str | None,
    session_id: str | None,
    session_store: Any,
    model: str | None,
) -> ClaudeAgentOptions:
    """A copy of the user's options with the memory layer's additions."""
    servers = _user_servers(user.mcp_servers)
    if memory_server_name in servers:
        raise ConfigurationError(
            f"An MCP server named '{memory_server_name}' is already configured; the memory tools "
            "use that name. Rename your server."
        )
    servers[memory_server_name] = memory_server
    allowed = list(user.allowed_tools) + [name for name in memory_tools if name not in user.allowed_tools]
    env = {**CLI_COMPACTION_ENV, **user.env}
    return dataclasses.replace(
        user,
        system_prompt=compose_system_prompt(user.system_prompt, memory_text),
        mcp_servers=servers,
        allowed_tools=allowed,
        env=env,
        resume=resume,
        session_id=None if resume else session_id,
        continue_conversation=False if resume else user.continue_conversation,
        session_store=user.session_store if user.session_store is not None else session_store,
        model=user.model or model,
    )
