"""Compaction figures: the per-turn trigger check, and compacting a long history.

(a) The trigger check on a 10,000-message history: `ContextBudget.observe` + `should_compact`
    counts only the messages added since the last check (goal: under 1 ms per turn), shown next
    to a full recount, which is what an O(history) check would cost.
(b) Compacting a 2,000-message history (~1.5x a 200k window) with the real `AnthropicSummarizer`
    against the scripted Messages API server on 127.0.0.1: `compact()` is repeated until the
    request is under the target; summariser calls and seconds are reported, also with a 429
    before every summary.

Run: python bench/compaction_bench.py [--turns 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import statistics
import time
from collections.abc import Sequence

from compaction import (
    AnthropicSummarizer,
    CompactionSettings,
    ContextBudget,
    MessageRecord,
    compact,
    count_messages,
    default_counter,
    summary_tokens,
)
from memory_agent.testing import (
    ScriptedMessagesServer,
    ScriptedResponse,
    error_response,
    text_response,
)

VOCABULARY = (
    "the user asked about trains to Porto booking hotel Lisbon March budget 450 euros decided "
    "tool search result found three options weather forecast meeting Tuesday 14:00 Alice Bob "
    "project deadline report draft numbers revenue 2024 quarter plan open task follow up"
)
WORDS = tuple(VOCABULARY.split())
SUMMARY_TEXT = ("Alice is planning a trip to Porto in March with a 450 euro budget. " * 25)[:1900]


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def make_history(count: int, rng: random.Random, words: tuple[int, int]) -> list[MessageRecord]:
    """Turns of user prompt, assistant tool call, tool result, assistant answer."""
    messages: list[MessageRecord] = []

    def size() -> int:
        return rng.randint(*words)

    while len(messages) < count:
        base = len(messages)
        tool_id = f"toolu_{base}"
        call = {"type": "tool_use", "id": tool_id, "name": "search", "input": {"q": "Porto"}}
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": sentence(rng, size())}
        turn = [
            MessageRecord(base + 1, "user", sentence(rng, size())),
            MessageRecord(base + 2, "assistant", [{"type": "text", "text": "Searching."}, call]),
            MessageRecord(base + 3, "user", [result]),
            MessageRecord(base + 4, "assistant", [{"type": "text", "text": sentence(rng, size())}]),
        ]
        messages.extend(turn)
    return messages[:count]


def bench_trigger_check(turns: int, history_size: int = 10_000) -> None:
    rng = random.Random(7)
    settings = CompactionSettings()
    counter = default_counter()
    history = make_history(history_size, rng, (20, 120))
    counter.count_text("warm up")  # load the encoding outside the timings

    started = time.perf_counter()
    budget = ContextBudget(settings, counter)
    budget.recount(history, fixed_tokens=3_000)
    full_recount = time.perf_counter() - started

    samples: list[float] = []
    for turn in range(turns):
        new_id = history[-1].id
        history.append(MessageRecord(new_id + 1, "user", sentence(rng, rng.randint(20, 120))))
        history.append(MessageRecord(new_id + 2, "assistant", sentence(rng, rng.randint(20, 120))))
        if turn % 10 == 0:  # the API reported usage for the request before these two messages
            budget.calibrate({"input_tokens": budget.total_tokens}, through_id=new_id)
        started = time.perf_counter()
        budget.observe(history)
        budget.should_compact()
        samples.append(time.perf_counter() - started)

    samples.sort()
    print(
        f"(a) trigger check per turn, history of {history_size:,} messages (+2 new messages per "
        "turn)"
    )
    print(f"    turns measured          {turns}")
    print(f"    median                  {statistics.median(samples) * 1e3:.3f} ms")
    print(f"    p95                     {samples[int(0.95 * len(samples))] * 1e3:.3f} ms")
    print(f"    max                     {samples[-1] * 1e3:.3f} ms   (goal: under 1 ms)")
    print(f"    full recount, for scale {full_recount * 1e3:.1f} ms   (an O(history) check)")


async def compact_until_under_target(
    messages: Sequence[MessageRecord], summarizer: AnthropicSummarizer, settings: CompactionSettings
) -> tuple[int, int, int, int, float]:
    """Repeat compact() until the request fits; returns (compacts, calls, before, after, s)."""
    counter = default_counter()
    fixed = 3_000
    summary: str | None = None
    current = list(messages)
    before = fixed + count_messages(current, counter)
    compacts = calls = 0
    started = time.perf_counter()
    while (
        fixed + summary_tokens(summary, counter) + count_messages(current, counter)
        > settings.target_tokens
    ):
        outcome = await compact(
            current, previous_summary=summary, summarizer=summarizer, settings=settings,
            fixed_tokens=fixed, counter=counter, force=True,
        )  # fmt: skip
        compacts += 1
        calls += outcome.summarizer_calls
        if not outcome.changed:
            raise SystemExit(f"compaction made no progress: {outcome.status} ({outcome.reason})")
        current, summary = list(outcome.kept), outcome.summary
    elapsed = time.perf_counter() - started
    after = fixed + summary_tokens(summary, counter) + count_messages(current, counter)
    return compacts, calls, before, after, elapsed


async def bench_compaction(history_size: int = 2_000) -> None:
    rng = random.Random(11)
    history = make_history(history_size, rng, (60, 160))
    counter = default_counter()
    started = time.perf_counter()
    history = [m.with_tokens(counter.count_message(m)) for m in history]
    counting = time.perf_counter() - started
    sliding = CompactionSettings(retry_initial_wait=0.01, retry_max_wait=0.05)
    scenarios = (
        ("sliding_window, every request succeeds", sliding, False),
        ("sliding_window, a 429 before each summary", sliding, True),
        ("mode 'all', 100k-token chunks", dataclasses.replace(sliding, mode="all"), False),
    )

    print(
        f"(b) compacting a {history_size:,}-message history against the scripted Messages API "
        "server"
    )
    print(f"    counting {history_size:,} messages {counting * 1e3:.0f} ms (tiktoken, once)")
    with ScriptedMessagesServer(default_text=SUMMARY_TEXT) as server:
        for label, settings, with_429 in scenarios:
            server.clear()
            if with_429:
                pair: list[ScriptedResponse] = [error_response(429), text_response(SUMMARY_TEXT)]
                server.enqueue(*pair * 20)
            async with AnthropicSummarizer(
                settings, api_key="bench", base_url=server.url
            ) as summarizer:
                _ = summarizer.client  # import anthropic and build the client outside the timing
                compacts, calls, before, after, seconds = await compact_until_under_target(
                    history, summarizer, settings
                )
                requests = len(server.message_requests())
                print(f"    [{label}]")
                target = settings.target_tokens
                print(f"      tokens before / after / target  {before} / {after} / {target}")
                print(f"      compact() calls                 {compacts}")
                print(f"      summariser calls (HTTP requests) {calls} ({requests})")
                print(f"      seconds                         {seconds:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=1000, help="turns timed in (a)")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 1,000-message history, 20 turns"
    )
    args = parser.parse_args()
    bench_trigger_check(
        20 if args.quick else args.turns, history_size=1_000 if args.quick else 10_000
    )
    asyncio.run(bench_compaction(history_size=200 if args.quick else 2_000))


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(main, __file__)
