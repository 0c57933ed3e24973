"""Letta's own acceptance rules for an agent file, written out so tests need no Letta install.

Taken from letta-ai/letta 0.16.8 (the last release before the repository was archived):
`letta/schemas/agent_file.py` (AgentFileSchema and the pydantic models it is built from:
CreateAgent, CreateBlock, GroupCreate, MessageCreate content parts, ToolReturn, LLMConfig,
EmbeddingConfig) and `letta/services/agent_serialization_manager.py` (`_validate_schema`: id
formats, duplicate ids, file and source references; `import_file`: in-context ids are looked up
among the agent's own messages, group agents and managers among the file's agents).
`letta_errors` returns every rule a document breaks, as readable strings; [] means Letta accepts it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

__all__ = ["letta_errors"]

_SECTIONS = {
    "agents": "agent",
    "groups": "group",
    "blocks": "block",
    "files": "file",
    "sources": "source",
    "tools": "tool",
    "mcp_servers": "mcp_server",
}
_ROLES = {"assistant", "user", "tool", "function", "system", "approval", "summary"}
_AGENT_TYPES = {
    "memgpt_agent",
    "memgpt_v2_agent",
    "letta_v1_agent",
    "react_agent",
    "workflow_agent",
    "split_thread_agent",
    "sleeptime_agent",
    "voice_convo_agent",
    "voice_sleeptime_agent",
}
_MANAGER_TYPES = {"round_robin", "supervisor", "dynamic", "sleeptime", "voice_sleeptime", "swarm"}
_LLM_ENDPOINTS = {
    "openai",
    "anthropic",
    "google_ai",
    "google_vertex",
    "azure",
    "groq",
    "ollama",
    "webui",
    "webui-legacy",
    "lmstudio",
    "lmstudio-legacy",
    "lmstudio-chatcompletions",
    "llamacpp",
    "koboldcpp",
    "vllm",
    "hugging-face",
    "minimax",
    "mistral",
    "together",
    "bedrock",
    "deepseek",
    "xai",
    "zai",
    "baseten",
    "fireworks",
    "openrouter",
    "chatgpt_oauth",
}
_EMBEDDING_ENDPOINTS = {
    "openai",
    "anthropic",
    "bedrock",
    "google_ai",
    "google_vertex",
    "azure",
    "groq",
    "ollama",
    "webui",
    "webui-legacy",
    "lmstudio",
    "lmstudio-legacy",
    "llamacpp",
    "koboldcpp",
    "vllm",
    "hugging-face",
    "mistral",
    "together",
    "pinecone",
}
_PART_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "text": {"text": str},
    "reasoning": {"is_native": bool, "reasoning": str},
    "redacted_reasoning": {"data": str},
    "omitted_reasoning": {},
    "summarized_reasoning": {"id": str, "summary": list},
    "image": {"source": dict},
    "tool_call": {"id": str, "name": str, "input": dict},
    "tool_return": {"tool_call_id": str, "content": str, "is_error": bool},
}
_AGENT_NAME = re.compile(r"^[\w '\-]+$")


def letta_errors(document: Any) -> list[str]:
    """Every Letta rule the document breaks ([] when Letta 0.16.8 would accept it)."""
    if not isinstance(document, Mapping):
        return ["the document is not a JSON object"]
    errors: list[str] = []
    for section in _SECTIONS:
        if not isinstance(document.get(section), list):
            errors.append(f"'{section}' is required and must be a list")
    if errors:
        return errors
    if not isinstance(document.get("metadata", {}), Mapping) or not all(
        isinstance(v, str) for v in document.get("metadata", {}).values()
    ):
        errors.append("'metadata' must map strings to strings")
    errors += _id_errors(document)
    agents = {a.get("id") for a in document["agents"] if isinstance(a, Mapping)}
    blocks = {b.get("id") for b in document["blocks"] if isinstance(b, Mapping)}
    groups = {g.get("id") for g in document["groups"] if isinstance(g, Mapping)}
    tools = {t.get("id") for t in document["tools"] if isinstance(t, Mapping)}
    sources = {s.get("id") for s in document["sources"] if isinstance(s, Mapping)}
    files = {f.get("id") for f in document["files"] if isinstance(f, Mapping)}
    for block in document["blocks"]:
        errors += _block_errors(block)
    for agent in document["agents"]:
        errors += _agent_errors(agent, blocks, groups, tools, sources, files)
    for group in document["groups"]:
        errors += _group_errors(group, agents)
    for file in document["files"]:
        if isinstance(file, Mapping) and file.get("source_id") not in sources:
            errors.append(f"file {file.get('id')} references a source the file does not hold")
    if document.get("created_at") is not None and not _is_time(document["created_at"]):
        errors.append("'created_at' is not a date-time")
    return errors


def _id_errors(document: Mapping[str, Any]) -> list[str]:
    errors: list[str] = []
    seen: set[str] = set()

    def check(item_id: Any, prefix: str, where: str) -> None:
        if not isinstance(item_id, str) or not item_id.startswith(f"{prefix}-"):
            errors.append(f"{where}: id {item_id!r} should start with '{prefix}-'")
        else:
            try:
                int(item_id[len(prefix) + 1 :])
            except ValueError:
                errors.append(f"{where}: id {item_id!r} should have an integer suffix")
        if item_id in seen:
            errors.append(f"{where}: duplicate id {item_id!r}")
        seen.add(item_id)

    for section, prefix in _SECTIONS.items():
        for item in document[section]:
            if not isinstance(item, Mapping):
                errors.append(f"{section} holds a non-object")
                continue
            check(item.get("id"), prefix, section)
    for agent in document["agents"]:
        for message in agent.get("messages") or [] if isinstance(agent, Mapping) else []:
            check(
                message.get("id") if isinstance(message, Mapping) else None,
                "message",
                f"agent {agent.get('id')} messages",
            )
    return errors


def _block_errors(block: Any) -> list[str]:
    where = f"block {block.get('id') if isinstance(block, Mapping) else block!r}"
    if not isinstance(block, Mapping):
        return [f"{where} is not an object"]
    errors = _typed(block, {"label": str, "limit": int}, where, required=True)
    if not isinstance(block.get("value", ""), (str, type(None))):
        errors.append(f"{where}: value must be text")
    errors += _typed(
        block,
        {
            "read_only": bool,
            "is_template": bool,
            "description": (str, type(None)),
            "metadata": (dict, type(None)),
        },
        where,
        required=False,
    )
    return errors


def _agent_errors(
    agent: Any,
    blocks: set[Any],
    groups: set[Any],
    tools: set[Any],
    sources: set[Any],
    files: set[Any],
) -> list[str]:
    if not isinstance(agent, Mapping):
        return ["an agent is not an object"]
    where = f"agent {agent.get('id')}"
    errors: list[str] = []
    name = agent.get("name")
    if name is not None and (not isinstance(name, str) or (name and not _AGENT_NAME.match(name))):
        errors.append(f"{where}: name {name!r} has characters Letta refuses")
    if agent.get("agent_type", "letta_v1_agent") not in _AGENT_TYPES:
        errors.append(f"{where}: unknown agent_type {agent.get('agent_type')!r}")
    errors += _typed(
        agent,
        {
            "system": (str, type(None)),
            "description": (str, type(None)),
            "metadata": (dict, type(None)),
            "tags": (list, type(None)),
        },
        where,
        required=False,
    )
    for key in ("model", "embedding"):
        handle = agent.get(key)
        if handle and (
            not isinstance(handle, str) or "/" not in handle or not all(handle.split("/", 1))
        ):
            errors.append(f"{where}: {key} {handle!r} is not a provider/model-name handle")
    errors += _config_errors(
        agent.get("llm_config"),
        {"model": str, "context_window": int},
        "model_endpoint_type",
        _LLM_ENDPOINTS,
        f"{where} llm_config",
    )
    errors += _config_errors(
        agent.get("embedding_config"),
        {"embedding_model": str, "embedding_dim": int},
        "embedding_endpoint_type",
        _EMBEDDING_ENDPOINTS,
        f"{where} embedding_config",
    )
    for key, known in (("block_ids", blocks), ("tool_ids", tools), ("source_ids", sources)):
        for ref in agent.get(key) or []:
            if ref not in known:
                errors.append(f"{where}: {key} names {ref!r}, which the file does not hold")
    for link in agent.get("files_agents") or []:
        if (
            link.get("file_id") not in files
            or link.get("source_id") not in sources
            or link.get("agent_id") != agent.get("id")
        ):
            errors.append(
                f"{where}: a files_agents entry names a file, source or agent the file does not "
                "hold"
            )
    messages = [m for m in agent.get("messages") or [] if isinstance(m, Mapping)]
    own = {m.get("id") for m in messages}
    for ref in agent.get("in_context_message_ids") or []:
        if ref not in own:
            errors.append(f"{where}: in_context_message_ids names {ref!r}, not one of its messages")
    for message in messages:
        errors += _message_errors(message, f"{where} {message.get('id')}")
    return errors


def _config_errors(
    config: Any, fields: Mapping[str, type], kind_key: str, kinds: set[str], where: str
) -> list[str]:
    if config is None:
        return []
    if not isinstance(config, Mapping):
        return [f"{where} must be an object"]
    errors = _typed(config, fields, where, required=True)
    if config.get(kind_key) not in kinds:
        errors.append(f"{where}: {kind_key} {config.get(kind_key)!r} is not one Letta knows")
    return errors


def _message_errors(message: Mapping[str, Any], where: str) -> list[str]:
    errors: list[str] = []
    if message.get("role") not in _ROLES:
        errors.append(f"{where}: role {message.get('role')!r} is not a Letta role")
    content = message.get("content")
    if not isinstance(content, (str, list)):
        errors.append(f"{where}: content must be text or a list of parts")
    for part in content if isinstance(content, list) else []:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind not in _PART_FIELDS:
            errors.append(f"{where}: content part type {kind!r} is not one Letta knows")
            continue
        errors += _typed(part, _PART_FIELDS[kind], f"{where} {kind} part", required=True)
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if (
            not isinstance(call, Mapping)
            or not isinstance(call.get("id"), str)
            or call.get("type") != "function"
            or not isinstance(function, Mapping)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str)
        ):
            errors.append(
                f"{where}: a tool call is not {{id, type: function, function: {{name, arguments}}}}"
            )
    for returned in message.get("tool_returns") or []:
        if not isinstance(returned, Mapping) or returned.get("status") not in ("success", "error"):
            errors.append(f"{where}: a tool return needs status 'success' or 'error'")
        elif not isinstance(returned.get("func_response"), (str, list, type(None))):
            errors.append(f"{where}: a tool return's func_response must be text or parts")
    if message.get("created_at") is not None and not _is_time(message["created_at"]):
        errors.append(f"{where}: created_at is not a date-time")
    return errors


def _group_errors(group: Any, agents: set[Any]) -> list[str]:
    if not isinstance(group, Mapping):
        return ["a group is not an object"]
    where = f"group {group.get('id')}"
    errors = _typed(group, {"description": str, "agent_ids": list}, where, required=True)
    for ref in group.get("agent_ids") or []:
        if ref not in agents:
            errors.append(f"{where}: agent_ids names {ref!r}, which the file does not hold")
    config = group.get("manager_config") or {}
    if config.get("manager_type", "round_robin") not in _MANAGER_TYPES:
        errors.append(f"{where}: unknown manager_type {config.get('manager_type')!r}")
    if (
        config.get("manager_type", "round_robin") not in ("round_robin", "swarm")
        and config.get("manager_agent_id") not in agents
    ):
        errors.append(
            f"{where}: manager_agent_id {config.get('manager_agent_id')!r} is not an agent of the "
            "file"
        )
    if group.get("shared_block_ids"):
        errors.append(
            f"{where}: Letta checks shared_block_ids as database ids; a file's block ids fail"
        )
    return errors


def _typed(
    item: Mapping[str, Any],
    fields: Mapping[str, type | tuple[type, ...]],
    where: str,
    *,
    required: bool,
) -> list[str]:
    errors = []
    for key, kind in fields.items():
        if key not in item:
            if required:
                errors.append(f"{where}: '{key}' is required")
            continue
        value = item[key]
        kinds: Iterable[type] = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, tuple(kinds)):
            errors.append(f"{where}: '{key}' must be {' or '.join(k.__name__ for k in kinds)}")
    return errors


def _is_time(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True
