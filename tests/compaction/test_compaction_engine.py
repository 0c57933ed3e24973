"""compact(): outcomes with an in-memory summariser (HTTP behaviour: test_compaction_retries)."""

from __future__ import annotations

import dataclasses

import pytest

from compaction import (
    TRUNCATION_MARKER,
    CompactionSettings,
    SummarizerError,
    compact,
    truncation_summary,
)


async def run(messages, summarizer, settings, *, previous=None, fixed=0, force=False):  # type: ignore[no-untyped-def]
    return await compact(
        messages,
        previous_summary=previous,
        summarizer=summarizer,
        settings=settings,
        fixed_tokens=fixed,
        force=force,
    )


@pytest.mark.asyncio
async def test_under_the_trigger_nothing_happens(build, small_settings) -> None:
    summarizer = build.FakeSummarizer()
    messages = build.conversation(30)  # 600 tokens < 800

    outcome = await run(messages, summarizer, small_settings)

    assert outcome.status == "skipped" and not outcome.changed
    assert outcome.kept == tuple(messages) and outcome.tokens_after == outcome.tokens_before == 600
    assert summarizer.calls == []


@pytest.mark.asyncio
async def test_over_the_trigger_the_oldest_turns_are_summarised(build, small_settings) -> None:
    summarizer = build.FakeSummarizer(replies=["Alice asked about trains; answered."])
    messages = build.conversation(45)  # 900 tokens

    outcome = await run(messages, summarizer, small_settings)

    assert outcome.status == "compacted" and outcome.changed and not outcome.fallback
    assert outcome.summary == "Alice asked about trains; answered."
    assert outcome.model == "fake-haiku"
    assert outcome.evicted + outcome.kept == tuple(messages)
    assert (outcome.first_evicted_id, outcome.last_evicted_id) == (1, len(outcome.evicted))
    assert outcome.kept[0].is_turn_start
    assert outcome.tokens_before == 900
    assert outcome.tokens_after < small_settings.trigger_tokens
    assert outcome.summarizer_calls == 1
    previous, sent = summarizer.calls[0]
    assert previous is None and sent == outcome.evicted


@pytest.mark.asyncio
async def test_a_long_summary_is_clipped(build, small_settings) -> None:
    summarizer = build.FakeSummarizer(replies=["word " * 500])

    outcome = await run(build.conversation(45), summarizer, small_settings)

    assert outcome.summary is not None and len(outcome.summary) <= small_settings.clip_chars


@pytest.mark.asyncio
async def test_force_compacts_under_the_trigger_and_when_disabled(build, small_settings) -> None:
    disabled = dataclasses.replace(small_settings, enabled=False)
    messages = build.conversation(45)

    skipped = await run(messages, build.FakeSummarizer(), disabled)
    forced = await run(build.conversation(10), build.FakeSummarizer(), disabled, force=True)

    assert skipped.status == "skipped" and "disabled" in skipped.reason
    assert forced.status == "compacted"


@pytest.mark.asyncio
async def test_repeated_compactions_fold_the_previous_summary_in(build, small_settings) -> None:
    summarizer = build.FakeSummarizer(replies=["first summary", "second summary"])
    messages = build.conversation(45)

    first = await run(messages, summarizer, small_settings)
    later = list(first.kept) + [
        m.__class__(m.id + 1000, m.role, m.content, m.tokens) for m in build.conversation(20)
    ]
    second = await run(later, summarizer, small_settings, previous=first.summary)

    assert second.status == "compacted" and second.summary == "second summary"
    assert summarizer.calls[1][0] == "first summary"


@pytest.mark.asyncio
async def test_many_evicted_tokens_are_summarised_in_chunks(build) -> None:
    settings = CompactionSettings(context_window=5000, summary_chunk_tokens=1000, clip_chars=200)
    summarizer = build.FakeSummarizer()
    messages = build.conversation(10, tokens=250)  # 5,000 tokens

    outcome = await run(messages, summarizer, settings)

    assert outcome.status == "compacted" and outcome.summarizer_calls == 2
    first_previous, first_chunk = summarizer.calls[0]
    second_previous, second_chunk = summarizer.calls[1]
    assert first_previous is None and len(first_chunk) == 4
    assert second_previous == "summary #1 of messages 1-4"
    assert first_chunk + second_chunk == outcome.evicted
    assert outcome.summary == "summary #2 of messages 5-6"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "failure",
    [
        SummarizerError("overloaded", attempts=5, retryable=True),
        RuntimeError("bug in a plugin"),
        "",
    ],
)
async def test_a_failing_summariser_defers_and_drops_nothing(
    build, small_settings, failure
) -> None:
    replies = [failure] if isinstance(failure, Exception) else ["   "]
    summarizer = build.FakeSummarizer(replies=replies)
    messages = build.conversation(45)  # 900 tokens: over the trigger, under overflow (950)

    outcome = await run(messages, summarizer, small_settings, previous="old summary")

    assert outcome.status == "deferred" and outcome.deferred and not outcome.changed
    assert outcome.summary == "old summary"
    assert outcome.evicted == () and outcome.kept == tuple(messages)
    assert outcome.tokens_after == outcome.tokens_before
    assert outcome.error


@pytest.mark.asyncio
async def test_near_overflow_a_failing_summariser_leads_to_a_marked_truncation(
    build, small_settings
) -> None:
    summarizer = build.FakeSummarizer(replies=[SummarizerError("down", attempts=3)])
    messages = build.conversation(48)  # 960 tokens + summary > 950 overflow

    outcome = await run(messages, summarizer, small_settings, previous="Alice likes tea.")

    assert outcome.status == "truncated" and outcome.fallback and outcome.changed
    assert outcome.model is None
    summary = outcome.summary or ""
    assert summary.startswith(TRUNCATION_MARKER)
    assert "Alice likes tea." in summary
    assert outcome.evicted[-1].content[0]["text"] in summary  # the tail of the evicted text
    assert len(summary) <= small_settings.clip_chars
    assert outcome.kept[0].is_turn_start
    assert outcome.tokens_after < outcome.tokens_before


def test_a_truncation_of_a_truncation_does_not_repeat_the_marker(build) -> None:
    first = truncation_summary("Alice likes tea.", build.conversation(3), 400)
    second = truncation_summary(first, build.conversation(2), 400)

    assert second.count(TRUNCATION_MARKER) == 1
    assert len(second) <= 400


@pytest.mark.asyncio
async def test_no_valid_cut_is_skipped_with_the_reason(build, small_settings) -> None:
    summarizer = build.FakeSummarizer()
    one_turn = [
        build.user(1, tokens=300),
        build.tool_call(2, "toolu_a", tokens=300),
        build.tool_result(3, "toolu_a", tokens=300),
    ]

    outcome = await run(one_turn, summarizer, small_settings)

    assert outcome.status == "skipped" and "no turn boundary" in outcome.reason
    assert summarizer.calls == []
