"""Merging the user's `ClaudeAgentOptions` with what the memory layer adds.

Nothing the user set is dropped: their system prompt (string, preset, custom or file) gets the
rendered memory appended (the whole text goes to the CLI as a file: a command-line argument is
capped at 128 KiB on Linux), their MCP servers get the `memory` server beside them, their allowed
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
from ..sdk_seams import APPEND_PROMPT_FILE_FLAG, CLI_COMPACTION_ENV, SNAPSHOT_OFF

__all__ = [
    "CLI_COMPACTION_ENV",
    "READ_BUFFER_BYTES",
    "SNAPSHOT_OFF",
    "compose_system_text",
    "file_system_prompt",
    "is_preset",
    "merge_options",
    "user_system_text",
    "with_base_prompt",
]

READ_BUFFER_BYTES = 64 * 1024 * 1024
"""Largest single message the SDK reads from the CLI. The SDK's default (1 MiB) is below one
context window of text, and a message the CLI emits can hold a whole resumed conversation or a
large tool result; a user's own `max_buffer_size` is kept."""


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
            raise ConfigurationError(
                f"Cannot read the system prompt file {path}: {error}."
            ) from error
    if kind == "preset":
        return system_prompt.get("append")
    raise ConfigurationError(
        f"Unknown system prompt type {kind!r}; use a string, a preset, custom or file."
    )


def is_preset(system_prompt: Any) -> bool:
    return isinstance(system_prompt, dict) and system_prompt.get("type") == "preset"


def compose_system_text(system_prompt: Any, memory_text: str) -> str:
    """The text the memory layer adds to: the user's own prompt (or a preset's `append`) followed
    by the memory."""
    own = user_system_text(system_prompt)
    return memory_text if not own else f"{own}\n\n{memory_text}"


def file_system_prompt(system_prompt: Any, path: Path) -> tuple[Any, dict[str, str | None]]:
    """The `system_prompt` option and extra CLI flags that hand the composed text over as a file.

    A preset stays a preset (the CLI's own prompt) with the composed text appended from the file;
    anything else becomes a file prompt. Either way the prompt is rebuilt on every request.
    """
    if is_preset(system_prompt):
        preset = {key: value for key, value in system_prompt.items() if key != "append"}
        return {**preset, "snapshot": False}, {**SNAPSHOT_OFF, APPEND_PROMPT_FILE_FLAG: str(path)}
    return {"type": "file", "path": str(path)}, dict(SNAPSHOT_OFF)


def _user_servers(mcp_servers: Any) -> dict[str, Any]:
    if isinstance(mcp_servers, dict):
        return dict(mcp_servers)
    path = Path(mcp_servers)
    try:
        document = (
            json.loads(path.read_text(encoding="utf-8"))
            if path.is_file()
            else json.loads(str(mcp_servers))
        )
    except (OSError, ValueError) as error:
        raise ConfigurationError(
            f"Cannot read the MCP server config {mcp_servers}: {error}."
        ) from error
    return dict(document.get("mcpServers", document))


def merge_options(
    user: ClaudeAgentOptions,
    *,
    system_prompt_path: Path,
    memory_server_name: str,
    memory_server: McpSdkServerConfig,
    memory_tools: list[str],
    resume: str | None,
    session_id: str | None,
    session_store: Any,
    model: str | None,
) -> ClaudeAgentOptions:
    """A copy of the user's options with the memory layer's additions.

    `system_prompt_path` holds the composed system prompt (`compose_system_text`).
    """
    servers = _user_servers(user.mcp_servers)
    if memory_server_name in servers:
        raise ConfigurationError(
            f"An MCP server named '{memory_server_name}' is already configured; the memory tools "
            "use that name. Rename your server."
        )
    servers[memory_server_name] = memory_server
    allowed = list(user.allowed_tools) + [
        name for name in memory_tools if name not in user.allowed_tools
    ]
    env = {**CLI_COMPACTION_ENV, **user.env}
    system_prompt, flags = file_system_prompt(user.system_prompt, system_prompt_path)
    return dataclasses.replace(
        user,
        system_prompt=system_prompt,
        extra_args={**user.extra_args, **flags},
        mcp_servers=servers,
        allowed_tools=allowed,
        env=env,
        resume=resume,
        session_id=None if resume else session_id,
        continue_conversation=False if resume else user.continue_conversation,
        session_store=user.session_store if user.session_store is not None else session_store,
        model=user.model or model,
        max_buffer_size=user.max_buffer_size or READ_BUFFER_BYTES,
    )
