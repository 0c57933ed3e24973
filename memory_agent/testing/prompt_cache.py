"""A model of Anthropic's prompt cache, so a scripted server can bill requests as the API does.

The API's rules (prompt-caching guide, as of late 2026), and how close this model comes:

* **Order and prefix.** A request is read as one sequence of blocks: every tool definition, then
  the system prompt's blocks, then every message's content blocks. A cache entry is the exact
  prefix up to and including a block. Modelled exactly (blocks are compared as canonical JSON
  without their ``cache_control`` markers, since moving a marker does not change the prefix).
* **Breakpoints.** A block carrying ``cache_control`` is a breakpoint; at most four per request
  (more is a 400 error, as here). A request writes the prefix at each of its breakpoints.
  Modelled exactly.
* **Lookback.** A read checks the prefix at each breakpoint and at the block boundaries before
  it, up to about 20 blocks back, for an entry an earlier request wrote; the longest hit wins.
  Modelled with a window of exactly :data:`LOOKBACK_BLOCKS`.
* **Minimum length.** A prefix shorter than the model's minimum (1024 tokens for Sonnet and Opus,
  2048 for Haiku; some newer models need 4096) is not cached even when marked: it is billed as
  uncached input. Modelled with the two figures of :func:`minimum_cacheable_tokens`.
* **TTL.** An entry lives 5 minutes (or 1 hour with ``"ttl": "1h"``) from its last write or read.
  Modelled on an injectable clock. The API bills 1-hour writes at 2x rather than 1.25x; the
  model reports them as writes all the same.
* **Scope.** Entries are per model (and per organisation; a server is one organisation).
* **Not modelled.** The API's own tokenizer (token counts come from the counter the server was
  given), the small chance that an entry is evicted early or is not yet visible to a concurrent
  request, and cache hits on content other than text, tools and JSON blocks (images count by
  their JSON here).

Reported figures follow the API's ``usage``: ``cache_read_input_tokens`` (the prefix read),
``cache_creation_input_tokens`` (from the end of that prefix to the last breakpoint that could be
cached) and ``input_tokens`` (everything after it).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "EXTENDED_TTL_SECONDS",
    "LOOKBACK_BLOCKS",
    "MAX_BREAKPOINTS",
    "CacheUsage",
    "PromptCache",
    "TooManyBreakpointsError",
    "minimum_cacheable_tokens",
    "request_blocks",
    "without_cache_control",
]

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
DEFAULT_TTL_SECONDS = 300.0
EXTENDED_TTL_SECONDS = 3600.0


class TooManyBreakpointsError(ValueError):
    """A request marked more blocks with ``cache_control`` than the API accepts."""

    def __init__(self, found: int) -> None:
        super().__init__(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found "
            f"{found}."
        )
        self.found = found


@dataclass(frozen=True)
class CacheUsage:
    """One request's input tokens by how they are billed."""

    read: int
    written: int
    uncached: int

    @property
    def total(self) -> int:
        return self.read + self.written + self.uncached

    def as_usage(self) -> dict[str, int]:
        """The three input fields of the API's ``usage`` object."""
        return {
            "input_tokens": self.uncached,
            "cache_creation_input_tokens": self.written,
            "cache_read_input_tokens": self.read,
        }


@dataclass(frozen=True)
class _Block:
    text: str
    ttl: float | None  # None: no breakpoint here


def minimum_cacheable_tokens(model: str) -> int:
    """The shortest prefix the API caches for this model (Haiku needs twice as much)."""
    return 2048 if "haiku" in model.lower() else 1024


def _canonical(value: Any) -> str:
    return json.dumps(
        without_cache_control(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def without_cache_control(value: Any) -> Any:
    """A copy of a request part with every `cache_control` marker removed (markers move between
    requests without changing the cached prefix)."""
    if isinstance(value, dict):
        return {
            key: without_cache_control(item)
            for key, item in value.items()
            if key != "cache_control"
        }
    if isinstance(value, list):
        return [without_cache_control(item) for item in value]
    return value


def _ttl(block: Any) -> float | None:
    marker = block.get("cache_control") if isinstance(block, dict) else None
    if not isinstance(marker, dict):
        return None
    return EXTENDED_TTL_SECONDS if marker.get("ttl") == "1h" else DEFAULT_TTL_SECONDS


def _block(value: Any) -> _Block:
    if isinstance(value, str):
        return _Block(value, None)
    if (
        isinstance(value, dict)
        and value.get("type") == "text"
        and isinstance(value.get("text"), str)
    ):
        return _Block(value["text"], _ttl(value))
    return _Block(_canonical(value), _ttl(value))


def _content_blocks(body: dict[str, Any]) -> Iterator[_Block]:
    for tool in body.get("tools") or []:
        yield _block(tool)
    system = body.get("system")
    if isinstance(system, str) and system:
        yield _Block(system, None)
    elif isinstance(system, list):
        yield from (_block(part) for part in system)
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        role = str(message.get("role", ""))
        if isinstance(content, str):
            yield _Block(f"{role}:{content}", None)
        elif isinstance(content, list):
            for index, part in enumerate(content):
                block = _block(part)
                # The role is part of the prefix: the same text from another speaker differs.
                yield _Block(f"{role}:{block.text}", block.ttl) if index == 0 else block


def request_blocks(body: dict[str, Any]) -> list[tuple[str, float | None]]:
    """The request in cache order (tools, system, messages) as (text, TTL if a breakpoint)."""
    return [(block.text, block.ttl) for block in _content_blocks(body)]


class PromptCache:
    """The cache of one organisation: which prefixes are stored, per model, until when.

    Args:
        count_tokens: Tokens of one block's text (pass the project's tiktoken counter's
            ``count_text`` so every figure uses one tokenizer).
        clock: Seconds, monotonic; injectable so tests can let five minutes pass at once.
    """

    def __init__(
        self, count_tokens: Callable[[str], int], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._count = count_tokens
        self._clock = clock
        self._entries: dict[str, float] = {}
        self._lock = threading.Lock()

    def account(self, model: str, body: dict[str, Any]) -> CacheUsage:
        """Bill one request: read the longest cached prefix, write the marked ones, store them."""
        blocks = list(_content_blocks(body))
        breakpoints = [index for index, block in enumerate(blocks) if block.ttl is not None]
        if len(breakpoints) > MAX_BREAKPOINTS:
            raise TooManyBreakpointsError(len(breakpoints))
        cumulative: list[int] = []
        keys: list[str] = []
        digest = hashlib.sha256(model.encode())
        running = 0
        for block in blocks:
            running += self._count(block.text) if block.text else 0
            digest.update(b"\x00" + block.text.encode("utf-8", "surrogatepass"))
            cumulative.append(running)
            keys.append(digest.copy().hexdigest())
        minimum = minimum_cacheable_tokens(model)
        with self._lock:
            now = self._clock()
            self._entries = {key: expiry for key, expiry in self._entries.items() if expiry > now}
            hit = self._longest_hit(keys, breakpoints)
            read = cumulative[hit] if hit is not None else 0
            if hit is not None:
                self._entries[keys[hit]] = max(self._entries[keys[hit]], now + DEFAULT_TTL_SECONDS)
            written_through = None
            for index in breakpoints:
                ttl = blocks[index].ttl
                if cumulative[index] < minimum or ttl is None:
                    continue
                self._entries[keys[index]] = max(self._entries.get(keys[index], 0.0), now + ttl)
                if hit is None or index > hit:
                    written_through = index
        written = cumulative[written_through] - read if written_through is not None else 0
        return CacheUsage(read=read, written=written, uncached=running - read - written)

    def _longest_hit(self, keys: list[str], breakpoints: list[int]) -> int | None:
        best: int | None = None
        for index in breakpoints:
            for position in range(index, max(-1, index - LOOKBACK_BLOCKS), -1):
                if keys[position] in self._entries:
                    best = position if best is None else max(best, position)
                    break
        return best

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
