"""The Anthropic summariser against a real HTTP server: requests, retries, and what fails fast.

Every test talks HTTP to `ScriptedMessagesServer` on 127.0.0.1; nothing is patched. Waits are
configured to ~0.01 s so the retry paths stay fast.
"""

from __future__ import annotations

import dataclasses
import socket
import time
from collections.abc import Iterator

import anthropic
import pytest

from compaction import (
    SUMMARY_SYSTEM_PROMPT,
    AnthropicSummarizer,
    CompactionSettings,
    RetryPolicy,
    SummarizerError,
    compact,
    is_retryable,
)
from memory_agent.testing import ScriptedMessagesServer, error_response, text_response

FAST = CompactionSettings(
    context_window=1000,
    clip_chars=200,
    min_kept_messages=2,
    max_attempts=4,
    retry_initial_wait=0.01,
    retry_max_wait=0.02,
)


@pytest.fixture(scope="module")
def running_server() -> Iterator[ScriptedMessagesServer]:
    """One server per module: stopping one takes ~0.5 s (http.server's poll interval)."""
    with ScriptedMessagesServer(default_text="unscripted reply") as running:
        yield running


@pytest.fixture
def server(running_server: ScriptedMessagesServer) -> ScriptedMessagesServer:
    """The shared server with an empty script and no recorded requests."""
    running_server.clear()
    return running_server


def summarizer_for(
    server: ScriptedMessagesServer, settings: CompactionSettings = FAST
) -> AnthropicSummarizer:
    return AnthropicSummarizer(settings, api_key="test-key", base_url=server.url)


async def compact_once(build, summarizer, *, turns: int = 45, previous=None):  # type: ignore[no-untyped-def]
    return await compact(
        build.conversation(turns),
        previous_summary=previous,
        summarizer=summarizer,
        settings=summarizer.settings,
        fixed_tokens=0,
    )


@pytest.mark.asyncio
async def test_the_request_carries_model_prompt_and_transcript(build, server) -> None:
    server.enqueue(text_response("Bob wants a train to Porto at 09:15."))
    summarizer = summarizer_for(server)

    summary = await summarizer.summarize(
        "Bob lives in Lisbon.",
        [build.user(1, "Find me a train to Porto"), build.assistant(2, "09:15")],
    )

    assert summary == "Bob wants a train to Porto at 09:15."
    (request,) = server.message_requests()
    assert request.model == "claude-haiku-4-5"
    assert request.body["max_tokens"] == FAST.summary_max_tokens
    assert request.system_text == SUMMARY_SYSTEM_PROMPT
    for kept_kind in ("decision", "open tasks", "names, dates", "numbers"):
        assert kept_kind in request.system_text
    text = request.last_user_text
    assert "Bob lives in Lisbon." in text and "Find me a train to Porto" in text and "09:15" in text
    await summarizer.aclose()


@pytest.mark.asyncio
async def test_a_429_then_success_compacts(build, server) -> None:
    server.enqueue(error_response(429), text_response("summary after a rate limit"))
    summarizer = summarizer_for(server)

    outcome = await compact_once(build, summarizer)

    assert outcome.status == "compacted"
    assert outcome.summary == "summary after a rate limit"
    assert len(server.message_requests()) == 2
    await summarizer.aclose()


@pytest.mark.asyncio
async def test_529_overloaded_is_retried(build, server) -> None:
    server.enqueue(error_response(529), error_response(529), text_response("made it"))
    summarizer = summarizer_for(server)

    outcome = await compact_once(build, summarizer)

    assert outcome.status == "compacted" and outcome.summary == "made it"
    assert len(server.message_requests()) == 3
    await summarizer.aclose()


@pytest.mark.asyncio
async def test_endless_500s_defer_and_lose_nothing(build, server) -> None:
    server.enqueue(*[error_response(500)] * 10)
    summarizer = summarizer_for(server)
    messages = build.conversation(45)  # over the trigger, under the overflow threshold

    outcome = await compact(
        messages,
        previous_summary="earlier facts",
        summarizer=summarizer,
        settings=FAST,
        fixed_tokens=0,
    )

    assert outcome.status == "deferred"
    assert outcome.evicted == () and outcome.kept == tuple(messages)
    assert outcome.summary == "earlier facts"
    assert "4 attempt(s)" in (outcome.error or "") and "HTTP 500" in (outcome.error or "")
    assert len(server.message_requests()) == FAST.max_attempts  # bounded
    await summarizer.aclose()


@pytest.mark.asyncio
async def test_endless_failures_near_overflow_truncate_with_a_marker(build, server) -> None:
    server.enqueue(*[error_response(529)] * 10)
    summarizer = summarizer_for(server)

    outcome = await compact_once(build, summarizer, turns=48, previous="earlier facts")

    assert outcome.status == "truncated"
    assert (outcome.summary or "").startswith("[TRUNCATED — summariser unavailable]")
    assert "earlier facts" in (outcome.summary or "")
    await summarizer.aclose()


@pytest.mark.asyncio
async def test_a_400_is_not_retried(build, server) -> None:
    server.enqueue(error_response(400, message="max_tokens: too large"), text_response("unused"))
    summarizer = summarizer_for(server)

    with pytest.raises(SummarizerError) as caught:
        await summarizer.summarize(None, build.conversation(2))

    assert caught.value.attempts == 1 and not caught.value.retryable
    assert caught.value.status_code == 400
    assert "max_tokens: too large" in str(caught.value)
    assert len(server.message_requests()) == 1
    assert len(server.pending()) == 1
    await summarizer.aclose()


@pytest.mark.asyncio
async def test_a_400_during_compaction_defers(build, server) -> None:
    server.enqueue(error_response(400))
    summarizer = summarizer_for(server)

    outcome = await compact_once(build, summarizer)

    assert outcome.status == "deferred" and "HTTP 400" in (outcome.error or "")
    assert len(server.message_requests()) == 1
    await summarizer.aclose()


@pytest.mark.asyncio
async def test_should_retry_false_from_the_api_is_obeyed(build, server) -> None:
    server.enqueue(error_response(529, should_retry=False), text_response("unused"))
    summarizer = summarizer_for(server)

    with pytest.raises(SummarizerError):
        await summarizer.summarize(None, build.conversation(2))

    assert len(server.message_requests()) == 1
    await summarizer.aclose()


@pytest.mark.asyncio
async def test_retry_after_is_honoured_up_to_the_maximum_wait(build, server) -> None:
    settings = dataclasses.replace(FAST, retry_max_wait=0.15)
    server.enqueue(error_response(429, retry_after=0.1), text_response("first"))
    server.enqueue(error_response(429, retry_after=60), text_response("second"))
    summarizer = summarizer_for(server, settings)

    started = time.monotonic()
    assert await summarizer.summarize(None, build.conversation(2)) == "first"
    honoured = time.monotonic() - started
    started = time.monotonic()
    assert await summarizer.summarize(None, build.conversation(2)) == "second"
    capped = time.monotonic() - started

    assert honoured >= 0.1  # FAST alone would wait about 0.01 s
    assert capped < 2.0  # 60 s asked, 0.15 s allowed
    await summarizer.aclose()


@pytest.mark.asyncio
async def test_connection_errors_are_retried_then_reported(build) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    summarizer = AnthropicSummarizer(FAST, api_key="test-key", base_url=f"http://127.0.0.1:{port}")

    with pytest.raises(SummarizerError) as caught:
        await summarizer.summarize(None, build.conversation(2))

    assert caught.value.attempts == FAST.max_attempts and caught.value.retryable
    assert caught.value.status_code is None
    await summarizer.aclose()


@pytest.mark.asyncio
async def test_a_given_client_loses_its_own_retries(build, server) -> None:
    client = anthropic.AsyncAnthropic(api_key="test-key", base_url=server.url, max_retries=5)
    settings = dataclasses.replace(FAST, max_attempts=1)
    server.enqueue(error_response(500), error_response(500), text_response("too late"))
    summarizer = AnthropicSummarizer(settings, client=client)

    with pytest.raises(SummarizerError):
        await summarizer.summarize(None, build.conversation(2))

    assert summarizer.client.max_retries == 0 and client.max_retries == 5
    assert len(server.message_requests()) == 1  # only our policy decides
    await client.close()


@pytest.mark.asyncio
async def test_environment_variables_configure_the_default_client(
    build, server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.enqueue(text_response("from the environment"))

    async with AnthropicSummarizer(FAST) as summarizer:
        assert await summarizer.summarize(None, build.conversation(1)) == "from the environment"

    headers = server.message_requests()[0].headers
    assert "env-key" in (headers.get("x-api-key") or headers.get("authorization", ""))


@pytest.mark.asyncio
async def test_the_second_compaction_sends_the_first_summary(build, server) -> None:
    server.enqueue(text_response("S1: Alice booked a flight to Oslo on 12 May."))
    server.enqueue(text_response("S2: flight booked; hotel pending."))
    summarizer = summarizer_for(server)

    first = await compact_once(build, summarizer)
    newer = [m.__class__(m.id + 1000, m.role, m.content, m.tokens) for m in build.conversation(20)]
    second = await compact(
        list(first.kept) + newer,
        previous_summary=first.summary,
        summarizer=summarizer,
        settings=FAST,
        fixed_tokens=0,
    )

    assert second.status == "compacted" and second.summary == "S2: flight booked; hotel pending."
    first_request, second_request = server.message_requests()
    assert "S1: Alice booked a flight to Oslo on 12 May." not in first_request.last_user_text
    assert "S1: Alice booked a flight to Oslo on 12 May." in second_request.last_user_text
    await summarizer.aclose()


def test_backoff_grows_with_jitter_and_respects_the_cap() -> None:
    policy = RetryPolicy(max_attempts=5, initial_wait=1.0, max_wait=5.0)

    for attempt, window in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)):
        waits = {policy.wait_seconds(attempt) for _ in range(50)}
        assert all(window / 2 <= wait <= window for wait in waits)
        assert len(waits) > 1  # jittered
    assert policy.wait_seconds(1, retry_after=3.0) == 3.0
    assert policy.wait_seconds(1, retry_after=60.0) == 5.0


def test_errors_that_are_not_from_the_api_are_not_retried() -> None:
    assert not is_retryable(ValueError("bad input"))
    assert not is_retryable(SummarizerError("no text"))
