"""What the scripted server saw: one :class:`RecordedRequest` per HTTP request, in arrival order.

The point of the scripted server is that a test can assert on exactly what the model was sent,
so the recording keeps the raw request and offers flattened views of the parts tests look at
(system prompt text, tool names, the last user message).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from .prompt_cache import CacheUsage
from .responses import ScriptedResponse
from .wire import estimate_input_tokens

__all__ = ["RecordedRequest", "RequestKind", "flatten_text"]

#: ``turn``: a ``POST /v1/messages`` that takes scripted replies. ``auxiliary``: a
#: ``POST /v1/messages`` the CLI makes for itself (see the server's ``is_auxiliary``).
#: ``count_tokens``: ``POST /v1/messages/count_tokens``. ``other``: anything else (404).
RequestKind = Literal["turn", "auxiliary", "count_tokens", "other"]


def flatten_text(value: Any, separator: str = "\n\n") -> str:
    """The text of a ``str`` or a list of content blocks (``text`` blocks only), joined."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    texts = [b.get("text", "") for b in value if isinstance(b, dict) and b.get("type") == "text"]
    return separator.join(texts)


@dataclass
class RecordedRequest:
    """One request as received, plus what the server answered.

    Attributes:
        index: Position in arrival order, from 0.
        method: HTTP method.
        path: Request path without the query string, e.g. ``/v1/messages``.
        query: The raw query string ('' when absent), e.g. ``beta=true``.
        headers: Request headers with lower-cased names.
        raw_body: The body bytes as received.
        body: The body parsed as JSON (``{}`` when empty or not JSON).
        kind: How the server classified it (see :data:`RequestKind`).
        response: The reply served to a messages request (scripted or default); ``None`` for
            token counts and unknown paths.
        served_default: Whether ``response`` is a default reply rather than a scripted one.
        status: The HTTP status answered (0 until the reply starts).
        completed: Whether the reply has been written in full.
        cache_usage: How the server's prompt-cache model billed the request's input (cache
            read, cache write, uncached); ``None`` when it was not billed (the reply's usage was
            scripted, or the request is no messages request).
    """

    index: int
    method: str
    path: str
    query: str
    headers: dict[str, str]
    raw_body: bytes
    body: dict[str, Any]
    kind: RequestKind = "other"
    response: ScriptedResponse | None = None
    served_default: bool = False
    status: int = 0
    completed: bool = False
    cache_usage: CacheUsage | None = None

    @classmethod
    def parse(
        cls, index: int, method: str, target: str, headers: dict[str, str], raw: bytes
    ) -> RecordedRequest:
        """Build a record from the request line, headers and body."""
        path, _, query = target.partition("?")
        try:
            body = json.loads(raw) if raw else {}
        except (ValueError, UnicodeDecodeError):
            body = {}
        if not isinstance(body, dict):
            body = {"_json": body}
        return cls(index, method, path, query, headers, raw, body)

    @property
    def model(self) -> str:
        """The requested model ('' when absent)."""
        return str(self.body.get("model") or "")

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed (SSE) reply."""
        return bool(self.body.get("stream"))

    @property
    def input_tokens(self) -> int:
        """The request's input tokens as the server counted them: the billed total (cache read +
        write + uncached, what the reply's usage reported), else the wire estimate."""
        if self.cache_usage is not None:
            return self.cache_usage.total
        return estimate_input_tokens(self.body)

    @property
    def system(self) -> Any:
        """The ``system`` field as sent: ``None``, a string or a list of text blocks."""
        return self.body.get("system")

    @property
    def system_text(self) -> str:
        """The system prompt flattened to one string (text blocks joined by a blank line)."""
        return flatten_text(self.system)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The ``messages`` list as sent."""
        return list(self.body.get("messages") or [])

    @property
    def tool_definitions(self) -> list[dict[str, Any]]:
        """The ``tools`` list as sent (full definitions with schemas)."""
        return list(self.body.get("tools") or [])

    @property
    def tools(self) -> list[str]:
        """The names of the tools offered to the model, e.g. ``mcp__memory__memory_insert``."""
        return [str(t.get("name", "")) for t in self.tool_definitions if isinstance(t, dict)]

    @property
    def last_user_message(self) -> dict[str, Any] | None:
        """The last message with role ``user``, or ``None``."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return message
        return None

    @property
    def last_user_text(self) -> str:
        """The text blocks of the last user message, joined by newlines."""
        message = self.last_user_message
        return flatten_text(message.get("content") if message else None, "\n")

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The ``tool_result`` blocks of the last user message (what the tools returned)."""
        message = self.last_user_message
        content = message.get("content") if message else None
        if not isinstance(content, list):
            return []
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]

    def __repr__(self) -> str:
        return (
            f"RecordedRequest(#{self.index} {self.method} {self.path} kind={self.kind} "
            f"model={self.model!r} status={self.status})"
        )
