"""What the memory layer costs in prompt-cache terms, per system-prompt refresh policy.

A 300-turn conversation through MemoryAwareAgent (real SDK, CLI and SQLite; the scripted server
bills every request as the API's prompt cache would, with the project's tiktoken counter): short
chat, a log tool with 8-16 kB results every 7th turn, a memory edit by the model
(`core_memory_append`) every 5th turn, another agent appending to a shared block before every
20th turn, and a small compaction window (COMPACTION_CONTEXT_WINDOW, 60,000 tokens) so the agent
compacts several times. The same conversation runs under each refresh policy and through a plain
ClaudeSDKClient (no memory layer; the CLI's own context handling; edit turns answered in text).

Printed per run: main-model requests, input tokens by kind (cache read / cache write / uncached),
the cost in base-price units (uncached 1.0, cache write 1.25, cache read 0.1; 5-minute TTL, all
within it), that cost per input token (0.1 if everything were a cache read), the mean request
size, compactions and system prompts built. The summariser's own
requests (a cheap model, during compaction) are left out.

Goal (issue 18): the default policy costs at most half of `live`.
Run: python bench/cache_cost_bench.py [--quick] [--turns 300] [--stale-turns 10 25 50]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from compaction import default_counter
from memory_agent.agent.refresh_policy import (
    DEFAULT_MAX_STALE_TURNS,
    DEFAULT_PROMPT_REFRESH,
    PromptRefresh,
)
from memory_agent.testing import ScriptedMessagesServer
from memory_agent.testing.soak import SoakConfig, SoakResult, run_plain_soak, run_soak

PRICES = {"read": 0.1, "written": 1.25, "uncached": 1.0}


def units(result: SoakResult) -> tuple[int, int, int, float]:
    read = sum(u.read for u in result.cache_usage)
    written = sum(u.written for u in result.cache_usage)
    uncached = sum(u.uncached for u in result.cache_usage)
    return (
        read,
        written,
        uncached,
        read * PRICES["read"] + written * PRICES["written"] + uncached * PRICES["uncached"],
    )


async def one_run(
    label: str,
    turns: int,
    window: int,
    *,
    policy: PromptRefresh | None,
    stale_turns: int = DEFAULT_MAX_STALE_TURNS,
) -> tuple[str, SoakResult, float]:
    began = time.perf_counter()
    with (
        tempfile.TemporaryDirectory() as directory,
        ScriptedMessagesServer(count_tokens=default_counter().count_text) as server,
    ):
        base = Path(directory)
        (base / "project").mkdir()
        config = SoakConfig(
            turns=turns,
            storage_dir=base / "store",
            project_dir=base / "project",
            other_dir=base / "project",
            paste_every=0,
            tool_every=7,
            edit_every=5,
            shared_edit_every=20,
            context_window=window,
            prompt_refresh=policy or DEFAULT_PROMPT_REFRESH,
            max_stale_turns=stale_turns,
        )
        result = await (run_soak(server, config) if policy else run_plain_soak(server, config))
    return label, result, time.perf_counter() - began


def table(rows: Sequence[tuple[str, SoakResult, float]], live_units: float | None) -> list[str]:
    lines = [
        (
            f"{'run':<28} {'requests':>8} {'cache read':>12} {'cache write':>12} {'uncached':>10} "
            f"{'units':>11} {'vs live':>7} {'units/tok':>9} {'mean req':>9} {'compactions':>11} "
            f"{'prompts':>7} "
            f"{'secs':>5}"
        )
    ]
    for label, result, seconds in rows:
        read, written, uncached, cost = units(result)
        mean = sum(u.total for u in result.cache_usage) / max(len(result.cache_usage), 1)
        ratio = f"{cost / live_units:.2f}" if live_units else "-"
        lines.append(
            f"{label:<28} {len(result.cache_usage):>8} {read:>12,} {written:>12,} {uncached:>10,} "
            f"{cost:>11,.0f} {ratio:>7} {cost / max(read + written + uncached, 1):>9.3f} "
            f"{mean:>9,.0f} "
            f"{len(result.compactions):>11} "
            f"{result.prompt_rebuilds:>7} {seconds:>5.0f}"
        )
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=int, default=60_000, help="compaction window in tokens")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="9 turns at a 5,500-token window (one compaction, one memory edit, one tool call), "
        "the default refresh policy only",
    )
    parser.add_argument(
        "--stale-turns",
        type=int,
        nargs="*",
        default=[],
        help="also run `deferred` with these max_stale_turns (to choose the default)",
    )
    args = parser.parse_args()
    # A compaction starts a new CLI process, the most a quick run pays for: one per run is enough.
    turns, window = (9, 5_500) if args.quick else (args.turns, args.window)
    print(
        f"{turns} turns, window {window:,} tokens; edit every 5, shared edit every 20, tool every "
        "7; "
        "runs one after another on a shared, loaded machine (seconds are indicative only)",
        flush=True,
    )
    rows = [await one_run("live", turns, window, policy="live")]
    # A quick run leaves out the policy that is not the default: one CLI process and turns fewer.
    for policy in (DEFAULT_PROMPT_REFRESH,) if args.quick else ("deferred", "announce"):
        default = " (default)" if policy == DEFAULT_PROMPT_REFRESH else ""
        rows.append(
            await one_run(
                f"{policy}{default} N={DEFAULT_MAX_STALE_TURNS}", turns, window, policy=policy
            )
        )
        for stale in args.stale_turns:
            rows.append(
                await one_run(
                    f"{policy} N={stale}", turns, window, policy=policy, stale_turns=stale
                )
            )
    rows.append(await one_run("plain ClaudeSDKClient", turns, window, policy=None))
    live_units = units(rows[0][1])[3]
    for line in table(rows, live_units):
        print(line)
    answered = {
        label: sum(bool(t.answer) and not t.is_error for t in result.turns)
        for label, result, _ in rows
    }
    print(f"turns answered: {answered}")


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(lambda: asyncio.run(main()), __file__)
