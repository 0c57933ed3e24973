"""Builders for compaction tests: conversations of plain records with known token counts."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from compaction import CompactionSettings, MessageRecord


def user(id: int, text: str = "question", tokens: int | None = 10) -> MessageRecord:
    return MessageRecord(id, "user", text, tokens)


def assistant(id: int, text: str = "answer", tokens: int | None = 10) -> MessageRecord:
    return MessageRecord(id, "assistant", [{"type": "text", "text": text}], tokens)


def tool_call(id: int, *tool_ids: str, tokens: int | None = 10) -> MessageRecord:
    blocks = [
        {"type": "tool_use", "id": tool_id, "name": "search", "input": {"q": tool_id}}
        for tool_id in tool_ids
    ]
    return MessageRecord(
        id, "assistant", [{"type": "text", "text": "let me look"}, *blocks], tokens
    )


def tool_result(id: int, *tool_ids: str, tokens: int | None = 10) -> MessageRecord:
    blocks = [
        {"type": "tool_result", "tool_use_id": tool_id, "content": f"result of {tool_id}"}
        for tool_id in tool_ids
    ]
    return MessageRecord(id, "user", blocks, tokens)


def conversation(turns: int, *, tokens: int = 10, tool_every: int = 0) -> list[MessageRecord]:
    """``turns`` turns of user + assistant; every ``tool_every``-th turn calls a tool in between."""
    messages: list[MessageRecord] = []
    for turn in range(turns):
        messages.append(user(len(messages) + 1, f"question {turn}", tokens))
        if tool_every and turn % tool_every == 0:
            tool_id = f"toolu_{turn}"
            messages.append(tool_call(len(messages) + 1, tool_id, tokens=tokens))
            messages.append(tool_result(len(messages) + 1, tool_id, tokens=tokens))
        messages.append(assistant(len(messages) + 1, f"answer {turn}", tokens))
    return messages


def random_conversation(rng: random.Random, turns: int) -> list[MessageRecord]:
    """Turns with 0-3 tool rounds, some with parallel tool calls, random token sizes."""
    messages: list[MessageRecord] = []

    def add(make, *args) -> None:  # type: ignore[no-untyped-def]
        messages.append(make(len(messages) + 1, *args, tokens=rng.randint(1, 200)))

    for turn in range(turns):
        add(user, f"question {turn}")
        for round_ in range(rng.randint(0, 3)):
            ids = [f"toolu_{turn}_{round_}_{k}" for k in range(rng.randint(1, 3))]
            add(tool_call, *ids)
            add(tool_result, *ids)
        if rng.random() < 0.8:
            add(assistant, f"answer {turn}")
    return messages


def tool_pairs_intact(evicted: Sequence[MessageRecord], kept: Sequence[MessageRecord]) -> bool:
    used_before = {tool_id for m in evicted for tool_id in m.tool_use_ids}
    answered_after = {tool_id for m in kept for tool_id in m.tool_result_ids}
    return not used_before & answered_after


@dataclass
class FakeSummarizer:
    """An in-memory `Summarizer`: records each call and answers from a script or a template."""

    replies: list[str | Exception] = field(default_factory=list)
    model: str = "fake-haiku"
    calls: list[tuple[str | None, tuple[MessageRecord, ...]]] = field(default_factory=list)

    async def summarize(
        self, previous_summary: str | None, messages: Sequence[MessageRecord]
    ) -> str:
        self.calls.append((previous_summary, tuple(messages)))
        if self.replies:
            reply = self.replies.pop(0)
            if isinstance(reply, Exception):
                raise reply
            return reply
        return f"summary #{len(self.calls)} of messages {messages[0].id}-{messages[-1].id}"


@pytest.fixture
def build() -> SimpleNamespace:
    """Record builders, so test modules need not import one another."""
    return SimpleNamespace(
        user=user,
        assistant=assistant,
        tool_call=tool_call,
        tool_result=tool_result,
        conversation=conversation,
        random_conversation=random_conversation,
        tool_pairs_intact=tool_pairs_intact,
        FakeSummarizer=FakeSummarizer,
    )


@pytest.fixture
def small_settings() -> CompactionSettings:
    """A 1,000-token window: trigger at 800, overflow at 950, 100 tokens reserved for summary."""
    return CompactionSettings(
        context_window=1000,
        clip_chars=200,
        min_kept_messages=2,
        max_attempts=3,
        retry_initial_wait=0.01,
        retry_max_wait=0.02,
    )
