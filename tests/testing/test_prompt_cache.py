"""The prompt-cache model against hand-computed bills (one character = one token here)."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from memory_agent.testing import ScriptedMessagesServer, text_response
from memory_agent.testing.prompt_cache import (
    CacheUsage,
    PromptCache,
    TooManyBreakpointsError,
)

SONNET = "claude-sonnet-4-5"
MARK = {"type": "ephemeral"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def text(value: str, marked: bool = False, ttl: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": value}
    if marked:
        block["cache_control"] = {**MARK, **({"ttl": ttl} if ttl else {})}
    return block


def user(value: str, marked: bool = False) -> dict[str, Any]:
    return {"role": "user", "content": [text(value, marked)]}


def body(
    system: list[dict[str, Any]],
    *messages: dict[str, Any],
    tools: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {"model": SONNET, "system": system, "messages": list(messages), "tools": tools or []}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cache(clock: Clock) -> PromptCache:
    return PromptCache(len, clock=clock)


def test_no_marker_is_all_uncached(cache: PromptCache) -> None:
    request = body([text("s" * 2000)], user("hello"))
    # "user:" prefixes the first block of a message: 2000 + 10.
    assert cache.account(SONNET, request) == CacheUsage(read=0, written=0, uncached=2010)
    assert cache.account(SONNET, request) == CacheUsage(read=0, written=0, uncached=2010)


def test_marked_system_is_written_then_read(cache: PromptCache) -> None:
    first = body([text("s" * 2000, marked=True)], user("hello"))
    assert cache.account(SONNET, first) == CacheUsage(read=0, written=2000, uncached=10)
    second = body([text("s" * 2000, marked=True)], user("another question"))
    assert cache.account(SONNET, second) == CacheUsage(read=2000, written=0, uncached=21)


def test_prefix_below_the_minimum_is_never_cached(cache: PromptCache) -> None:
    request = body([text("s" * 1000, marked=True)], user("hello"))
    assert cache.account(SONNET, request) == CacheUsage(0, 0, 1010)
    assert cache.account(SONNET, request) == CacheUsage(0, 0, 1010)


def test_haiku_needs_twice_the_length(cache: PromptCache) -> None:
    request = body([text("s" * 1500, marked=True)], user("hi"))
    cache.account("claude-haiku-4-5", request)
    assert cache.account("claude-haiku-4-5", request) == CacheUsage(0, 0, 1507)
    cache.account(SONNET, request)
    assert cache.account(SONNET, request) == CacheUsage(1500, 0, 7)


def test_entries_are_per_model(cache: PromptCache) -> None:
    request = body([text("s" * 3000, marked=True)])
    cache.account(SONNET, request)
    assert cache.account("claude-opus-4-1", request) == CacheUsage(0, 3000, 0)


def test_the_moving_marker_reads_the_previous_turn_and_writes_the_new_part(
    cache: PromptCache,
) -> None:
    system = [text("s" * 1200, marked=True)]
    first = body(system, user("a" * 95, marked=True))  # 100 tokens with "user:"
    assert cache.account(SONNET, first) == CacheUsage(0, 1300, 0)
    answer = {"role": "assistant", "content": [text("b" * 45)]}  # 55 with "assistant:"
    second = body(system, user("a" * 95), answer, user("c" * 45, marked=True))
    assert cache.account(SONNET, second) == CacheUsage(read=1300, written=105, uncached=0)


def test_a_changed_system_prompt_keeps_only_the_tools(cache: PromptCache) -> None:
    tools = [{"name": "t", "description": "d" * 1500, "input_schema": {}, "cache_control": MARK}]
    first = body([text("s" * 500, marked=True)], user("x" * 95, marked=True), tools=tools)
    billed = cache.account(SONNET, first)
    tool_tokens = billed.total - 600
    assert billed == CacheUsage(0, tool_tokens + 600, 0)
    second = body([text("S" * 500, marked=True)], user("x" * 95, marked=True), tools=tools)
    assert cache.account(SONNET, second) == CacheUsage(read=tool_tokens, written=600, uncached=0)


def test_entries_expire_after_five_minutes_unless_read(cache: PromptCache, clock: Clock) -> None:
    request = body([text("s" * 2000, marked=True)])
    cache.account(SONNET, request)
    clock.now += 200
    assert cache.account(SONNET, request).read == 2000  # the read refreshes the entry
    clock.now += 250
    assert cache.account(SONNET, request).read == 2000
    clock.now += 301
    assert cache.account(SONNET, request) == CacheUsage(0, 2000, 0)


def test_one_hour_entries_outlive_five_minutes(cache: PromptCache, clock: Clock) -> None:
    request = body([text("s" * 2000, marked=True, ttl="1h")])
    cache.account(SONNET, request)
    clock.now += 3000
    assert cache.account(SONNET, request).read == 2000
    clock.now += 3601
    assert cache.account(SONNET, request).read == 0


def test_lookback_reaches_twenty_blocks_and_no_further(cache: PromptCache) -> None:
    system = [text("s" * 2000)]
    history = [user(f"m{index:03d}") for index in range(40)]  # 9 tokens each
    written = body(system, *history[:5], user("m005", marked=True))
    cache.account(SONNET, written)
    near = body(system, *history[:18], user("m018", marked=True))  # 13 blocks after the entry
    assert cache.account(SONNET, near).read == 2000 + 6 * 9
    cache.clear()
    cache.account(SONNET, written)
    far = body(system, *history[:30], user("m030", marked=True))  # 25 blocks after it
    assert cache.account(SONNET, far).read == 0


def test_more_than_four_breakpoints_is_refused(cache: PromptCache) -> None:
    request = body([text("s", marked=True)], *(user(str(i), marked=True) for i in range(4)))
    with pytest.raises(TooManyBreakpointsError, match="maximum of 4"):
        cache.account(SONNET, request)


def test_the_server_reports_the_bill_in_usage_and_records_it() -> None:
    system = [text("You are terse. " * 150, marked=True)]
    with ScriptedMessagesServer(count_tokens=len) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k")
        server.enqueue(text_response("one"), text_response("two"))
        first = client.messages.create(
            model=SONNET,
            max_tokens=50,
            system=system,  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "hi"}],
        )
        second = client.messages.create(
            model=SONNET,
            max_tokens=50,
            system=system,  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "hello"}],
        )
        too_many = [text("x", marked=True) for _ in range(5)]
        with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
            client.messages.create(
                model=SONNET,
                max_tokens=50,
                system=too_many,  # type: ignore[arg-type]
                messages=[{"role": "user", "content": "hi"}],
            )
        recorded = server.turn_requests()
    assert (first.usage.cache_creation_input_tokens, first.usage.cache_read_input_tokens) == (
        2250,
        0,
    )
    assert first.usage.input_tokens == len("user:hi")
    assert (second.usage.cache_creation_input_tokens, second.usage.cache_read_input_tokens) == (
        0,
        2250,
    )
    assert second.usage.input_tokens == len("user:hello")
    assert recorded[1].cache_usage == CacheUsage(read=2250, written=0, uncached=10)
