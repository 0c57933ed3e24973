"""Seeding a resumable SDK session with the conversation still in context.

After a compaction, when the agent's session cannot be resumed from this working directory, or
after an import, the CLI must start a new session that already holds the kept messages. The
SDK resumes any session it can `load()` from its `SessionStore`, and this project owns that
store: so the kept messages are written there as a CLI transcript of a new session, which is
then resumed. The model sees them as real turns (user and assistant messages, `tool_use` and
`tool_result` blocks intact), exactly as if this session had produced them, and no size limit
applies on the way (the transcript goes through the store and a temporary file, not the
command line).

The transcript line format is the Claude Code CLI's own (see the lines it writes into
`session_entries` during a normal run): one JSON object per message with `type`
(`user`/`assistant`), `message` (the Messages API message), `uuid`, `parentUuid` (the previous
line, making a chain), `sessionId`, `timestamp`, `cwd` and `isSidechain`. It is not public API,
so this module is the one place that knows it. Its contract tests run the bundled CLI:
`tests/e2e/test_agent_e2e.py` (a restart elsewhere, a conversation stored without a session)
checks that the model receives exactly the seeded turns, and
`tests/e2e/test_long_conversation_e2e.py` does so at 600 kB.

The CLI replays a transcript as it is, so the seeded conversation is made valid first: roles
other than user/assistant become quoted user text, a `tool_use` whose result is not in the
window (or a result whose call is not) becomes plain text, and a conversation that would start
with the assistant starts with a short user note instead.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from ..conversation.recall import StoredMessage
from ..prompt.turn_context import TURN_CONTEXT_TAG

__all__ = [
    "SEED_OPENING",
    "seed_lines",
    "seed_messages",
    "normal_conversation",
    "transcript_conversation",
]

SEED_OPENING = "(The earlier conversation is summarised in the system prompt; it continues here.)"
"""The user line put first when the kept window would otherwise start with the assistant."""

_Message = dict[str, Any]


def seed_messages(messages: Sequence[StoredMessage]) -> list[_Message]:
    """The in-context messages as a valid Messages API conversation (role + content)."""
    raw = _merge_split_replies(messages)
    used = {
        block["id"]
        for message in raw
        if message["role"] == "assistant"
        for block in _blocks(message)
        if block.get("type") == "tool_use"
    }
    answered = {
        block.get("tool_use_id")
        for message in raw
        if message["role"] == "user"
        for block in _blocks(message)
        if block.get("type") == "tool_result"
    }
    paired = used & answered
    cleaned = [_unpair_orphans(message, paired) for message in raw]
    cleaned = [message for message in cleaned if message["content"]]
    if cleaned and cleaned[0]["role"] != "user":
        cleaned.insert(0, {"role": "user", "content": SEED_OPENING})
    return cleaned


def seed_lines(
    messages: Sequence[StoredMessage], *, session_id: str, cwd: str, model: str | None = None
) -> list[dict[str, Any]]:
    """CLI transcript lines for a new session `session_id` holding `messages`, oldest first."""
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    for message in seed_messages(messages):
        line_uuid = str(uuid.uuid4())
        line: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "type": message["role"],
            "uuid": line_uuid,
            "timestamp": stamp,
            "sessionId": session_id,
            "cwd": cwd,
            "userType": "external",
        }
        if message["role"] == "assistant":
            line["message"] = {
                "id": f"msg_seed_{line_uuid.replace('-', '')}",
                "type": "message",
                "role": "assistant",
                "model": model or "unknown",
                "content": message["content"],
                "stop_reason": _stop_reason(message),
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        else:
            line["message"] = {"role": "user", "content": message["content"]}
        lines.append(line)
        parent = line_uuid
    return lines


def transcript_conversation(entries: Sequence[Any]) -> list[_Message]:
    """The conversation a CLI transcript carries, as Messages API messages (role + content), in
    the form `seed_messages` gives recall's: what the CLI sends when it resumes the session.

    Kept: the main chain's user and assistant lines (not sidechains, not the CLI's bookkeeping
    lines: queue operations, attachments, tool lists). Assistant lines of one API reply (one line
    per content block) are merged, and the `<turn_context>` block the agent puts in front of each
    prompt is left out (recall stores the prompt as the user wrote it). Text content is given as
    a list of text blocks on both sides, so `normal_conversation` of each compares equal exactly
    when they carry the same turns."""
    merged: list[_Message] = []
    previous_reply: Any = None
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            continue
        kind, inner = entry.get("type"), entry.get("message")
        if kind not in ("user", "assistant") or not isinstance(inner, dict):
            continue
        content = inner.get("content")
        if kind == "user" and isinstance(content, list):
            content = [block for block in content if not _is_turn_context(block)]
        reply = inner.get("id") if kind == "assistant" else None
        if reply is not None and reply == previous_reply and merged:
            merged[-1]["content"] = [*merged[-1]["content"], *_as_blocks(content)]
        else:
            merged.append({"role": kind, "content": _as_blocks(content)})
        previous_reply = reply
    return merged


def normal_conversation(messages: Sequence[_Message]) -> list[_Message]:
    """Messages with text content given as text blocks (`"hi"` and `[{"type": "text", ...}]`
    say the same to the model), for comparing a transcript with recall."""
    return [{"role": m["role"], "content": _as_blocks(m["content"])} for m in messages]


def _as_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _is_turn_context(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and str(block.get("text", "")).startswith(f"<{TURN_CONTEXT_TAG}>")
    )


def _merge_split_replies(messages: Sequence[StoredMessage]) -> list[_Message]:
    """The SDK yields one assistant message per content block of a reply; the API had one."""
    merged: list[_Message] = []
    previous_reply: Any = None
    for message in messages:
        converted = _as_api_message(message)
        if converted is None:
            continue
        reply = message.metadata.get("message_id") if message.role == "assistant" else None
        if (
            reply is not None
            and reply == previous_reply
            and merged
            and merged[-1]["role"] == "assistant"
        ):
            merged[-1]["content"] = [*merged[-1]["content"], *converted["content"]]
        else:
            merged.append(converted)
        previous_reply = reply
    return merged


def _as_api_message(message: StoredMessage) -> _Message | None:
    content = message.content
    if message.role == "assistant":
        return {"role": "assistant", "content": _assistant_content(content)}
    if message.role == "user":
        return {"role": "user", "content": content if content else message.text}
    # tool / system / anything else an import brought in: keep its words, as user text.
    text = message.text or (
        content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    )
    return {"role": "user", "content": f"[{message.role}] {text}"} if text else None


def _assistant_content(content: Any) -> Any:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [block for block in content if isinstance(block, dict)]


def _blocks(message: _Message) -> list[dict[str, Any]]:
    content = message["content"]
    return (
        [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    )


def _unpair_orphans(message: _Message, paired: set[Any]) -> _Message:
    """Tool blocks whose partner is outside the window become text the model can still read."""
    content = message["content"]
    if not isinstance(content, list):
        return message
    fixed: list[Any] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_use" and block.get("id") not in paired:
            fixed.append(
                {
                    "type": "text",
                    "text": f"[called {block.get('name')}: "
                    f"{json.dumps(block.get('input'), ensure_ascii=False)}]",
                }
            )
        elif kind == "tool_result" and block.get("tool_use_id") not in paired:
            fixed.append(
                {"type": "text", "text": f"[tool result: {_result_text(block.get('content'))}]"}
            )
        else:
            fixed.append(block)
    return {**message, "content": fixed}


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _stop_reason(message: _Message) -> str:
    return (
        "tool_use"
        if any(block.get("type") == "tool_use" for block in _blocks(message))
        else "end_turn"
    )
