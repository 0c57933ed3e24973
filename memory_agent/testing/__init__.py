"""Offline testing utilities: a scripted Anthropic Messages API server.

Point the Claude Agent SDK (through ``ClaudeAgentOptions(env=server.env())``) or an ``anthropic``
client (``base_url=server.url``) at a :class:`ScriptedMessagesServer`, script the model's replies
with :func:`text_response`, :func:`tool_use_response`, :func:`message_response` and
:func:`error_response`, then assert on ``server.requests``. The server bills each request's
input as Anthropic's prompt cache would (:class:`PromptCache`; cache reads, writes and uncached
tokens in ``usage`` and in ``RecordedRequest.cache_usage``). Standard library only.
"""

from .prompt_cache import CacheUsage, PromptCache, TooManyBreakpointsError
from .recorded import RecordedRequest, RequestKind
from .responses import (
    ScriptedError,
    ScriptedMessage,
    ScriptedResponse,
    TextBlock,
    ToolUseBlock,
    error_response,
    message_response,
    text_block,
    text_response,
    tool_use_block,
    tool_use_response,
)
from .scripted_server import (
    COMPACTION_MARKERS,
    DUMMY_API_KEY,
    ScriptedMessagesServer,
    is_auxiliary_request,
    is_compaction_request,
)

__all__ = [
    "COMPACTION_MARKERS",
    "DUMMY_API_KEY",
    "CacheUsage",
    "PromptCache",
    "RecordedRequest",
    "RequestKind",
    "ScriptedError",
    "ScriptedMessage",
    "ScriptedMessagesServer",
    "ScriptedResponse",
    "TextBlock",
    "TooManyBreakpointsError",
    "ToolUseBlock",
    "error_response",
    "is_auxiliary_request",
    "is_compaction_request",
    "message_response",
    "text_block",
    "text_response",
    "tool_use_block",
    "tool_use_response",
]
