"""A reopened agent sizes its requests with the token scale its earlier requests showed, and a
failing summariser is retried with a back-off, through the real SDK and CLI.

The scripted server counts four characters per token. Against tiktoken that is about half the
estimate for service logs and more than twice the estimate for text of long words, so the
same storage can be counted lower or higher than estimated, as a real tokenizer does.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from backends import POSTGRES_SLOW
from claude_agent_sdk import ClaudeAgentOptions

from compaction import (
    SUMMARY_SYSTEM_PROMPT,
    TRUNCATION_MARKER,
    CompactionSettings,
    message_tokens,
)
from memory_agent import MemoryAwareAgent, MemoryManager, Settings
from memory_agent.conversation.compactor import to_record
from memory_agent.store.agent_state import TOKEN_SCALE_KEY
from memory_agent.testing import ScriptedMessagesServer, error_response, text_response
from memory_agent.testing.recorded import RecordedRequest
from memory_agent.testing.soak import pasted_log
from memory_agent.testing.wire import estimate_input_tokens

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

WINDOW = CompactionSettings(
    context_window=40_000, max_attempts=1
)  # trigger 32,000, overflow 38,000
LONG_WORDS = "Notwithstanding the aforementioned considerations, responsibilities "


def long_words(size: int) -> str:
    return (LONG_WORDS * (size // len(LONG_WORDS) + 1))[:size]


def manager(settings: Settings) -> MemoryManager:
    """The storage dir opened afresh, as a new process would (nothing kept in memory)."""
    return MemoryManager(agent_id="scaled", settings=settings, compaction_settings=WINDOW)


def store_turns(settings: Settings, texts: list[str], first: int = 0) -> None:
    with manager(settings) as memory:
        for number, text in enumerate(texts, start=first):
            memory.store_message("user", f"Paste {number}:\n{text}")
            memory.store_message("assistant", f"Read paste {number}.")


async def run_turns(
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    settings: Settings,
    prompts: list[str],
    cli_starts: list[int] | None = None,
) -> list[RecordedRequest]:
    """Open the agent on a fresh manager, run the turns, close it; the main-model requests.
    The CLI processes the agent started are appended to `cli_starts`, when given."""
    server.take_requests()
    server.enqueue(*[text_response("Noted.") for _ in prompts], model="opus")
    with manager(settings) as memory:
        async with MemoryAwareAgent(options, memory=memory) as agent:
            for prompt in prompts:
                await agent.process_turn(prompt)
        if cli_starts is not None:
            cli_starts.append(agent.reconnects)
    return server.message_requests("opus")


def stored(settings: Settings) -> tuple[dict[str, object], int, int]:
    """The agent's state, the estimate of its messages in context, and its summaries' count."""
    with manager(settings) as memory:
        estimate = sum(
            message_tokens(to_record(m), memory.compactor.counter)
            for m in memory.recall.in_context("scaled")
        )
        return (memory.get_agent_state(), estimate, len(memory.recall.summaries("scaled")))


def summariser_requests(server: ScriptedMessagesServer) -> list[RecordedRequest]:
    return [
        r for r in server.message_requests("haiku") if SUMMARY_SYSTEM_PROMPT[:60] in r.system_text
    ]


async def test_reopened_over_text_the_server_counts_lower_no_early_compaction(
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    storage_settings: Settings,
    tmp_path: Path,
    copy_store: Callable[[Settings, Path], Settings],
) -> None:
    """Logs: the estimate is about twice the server's count. With the scale its first session
    measured, the reopened agent sends a history whose estimate is over the trigger as it is."""
    rng = random.Random(11)
    store_turns(storage_settings, [pasted_log(rng, 6_000) for _ in range(6)])
    await run_turns(
        server,
        options,
        storage_settings,
        [f"Paste {n}:\n{pasted_log(rng, 6_000)}" for n in range(6, 12)],
    )
    state, estimate, summaries = stored(storage_settings)
    assert 0.3 < float(state[TOKEN_SCALE_KEY]) < 0.9  # measured on the reported usage, and stored
    assert estimate > WINDOW.trigger_tokens and summaries == 0  # over the trigger by raw estimate
    # A copy of the store (SDK sessions included: they live in memory.db, or in PostgreSQL).
    unscaled = copy_store(storage_settings, tmp_path / "unscaled")

    first = (await run_turns(server, options, storage_settings, ["And now?"]))[0]

    assert stored(storage_settings)[2] == 0  # no compaction on reopening
    assert estimate_input_tokens(first.body) < WINDOW.trigger_tokens
    assert "Paste 0:" in json.dumps(first.messages) and "Paste 11:" in json.dumps(first.messages)
    # The contrast: without the stored scale the same reopen compacts, needlessly; once, before
    # the CLI starts, leaving room for the turn to come (not again at "And now?").
    with manager(unscaled) as memory:
        memory.set_agent_state({TOKEN_SCALE_KEY: None})
    server.enqueue(text_response("Summary."), model="haiku")
    cli_starts: list[int] = []
    await run_turns(server, options, unscaled, ["And now?"], cli_starts)
    assert len(summariser_requests(server)) == 1 and stored(unscaled)[2] == 1
    assert cli_starts == [1]


@POSTGRES_SLOW  # the reload above is PostgreSQL's run of this in the default suite
async def test_reopened_over_text_the_server_counts_higher_compacts_before_the_first_request(
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    storage_settings: Settings,
    tmp_path: Path,
    copy_store: Callable[[Settings, Path], Settings],
) -> None:
    """Long words: the server counts more than twice the estimate. The reopened agent knows it
    from its stored scale and compacts before a first request that would cross the trigger."""
    store_turns(storage_settings, [long_words(6_000) for _ in range(8)])
    session = await run_turns(
        server,
        options,
        storage_settings,
        [f"Paste {n}:\n{long_words(6_000)}" for n in range(8, 18)],
    )
    assert max(estimate_input_tokens(r.body) for r in session) < WINDOW.trigger_tokens
    assert float(stored(storage_settings)[0][TOKEN_SCALE_KEY]) > 1.5
    unscaled = copy_store(storage_settings, tmp_path / "unscaled")
    big_prompt = f"One more:\n{long_words(16_000)}"
    server.enqueue(text_response("Summary of the pastes."), model="haiku")

    first = (await run_turns(server, options, storage_settings, [big_prompt]))[0]

    assert summariser_requests(server) and stored(storage_settings)[2] == 1  # compacted first
    assert estimate_input_tokens(first.body) < WINDOW.trigger_tokens
    assert "Summary of the pastes." in first.system_text
    # The contrast: without the stored scale, the estimate says there is room, and there is not.
    with manager(unscaled) as memory:
        memory.set_agent_state({TOKEN_SCALE_KEY: None})
    crossing = (await run_turns(server, options, unscaled, [big_prompt]))[0]
    assert estimate_input_tokens(crossing.body) >= WINDOW.trigger_tokens


@POSTGRES_SLOW  # the first reload above is PostgreSQL's run in the default suite
async def test_a_failing_summariser_backs_off_and_truncates_at_the_overflow_line(
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    storage_settings: Settings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The summariser is refused (401, as with no API key). Over the trigger, the agent tries it
    again after 2, then 4, then 8 turns, not on every turn; nothing leaves the context until the
    overflow line, where a marked truncation summary is used and every message stays stored."""
    server.enqueue(*[error_response(401, message="invalid x-api-key")] * 40, model="haiku")
    # About 33,000 tokens in the server's count: over the trigger, under the overflow line.
    store_turns(storage_settings, [long_words(6_000) for _ in range(20)])
    caplog.set_level(logging.WARNING, logger="compaction.engine")
    turns = 12
    server.enqueue(*[text_response(f"Answer {n}.") for n in range(turns + 1)], model="opus")
    with manager(storage_settings) as memory:
        async with MemoryAwareAgent(options, memory=memory) as agent:
            for number in range(turns):
                await agent.process_turn(f"Short question {number}?")
            attempts = len(summariser_requests(server))
            deferrals = sum("Compaction deferred" in r.getMessage() for r in caplog.records)
            assert not memory.recall.summaries("scaled")  # nothing left the context
            # Over the trigger on open and after each of the 12 turns (13 attempts without a
            # back-off): tried on open, then before turn 2 (2 turns later) and turn 6 (4 more);
            # the next would come 8 turns after that.
            assert attempts == deferrals == 3
            # Past the overflow line (messages stored by another process, say): truncate.
            memory.store_message("user", "Late paste:\n" + long_words(24_000))
            await agent.process_turn("What now?")
        summary = memory.recall.latest_summary("scaled")
        assert summary is not None and summary.is_fallback
        assert summary.summary.startswith(TRUNCATION_MARKER)
        assert TRUNCATION_MARKER in server.message_requests("opus")[-1].system_text
        texts = [m.text for m in memory.recall.all_messages("scaled")]
    for text in [
        *(f"Paste {n}:" for n in range(20)),
        *(f"Short question {n}?" for n in range(turns)),
        "Late paste:",
        "What now?",
    ]:
        assert sum(t.startswith(text) for t in texts) == 1, text  # every message kept, once
