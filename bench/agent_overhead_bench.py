"""Per-turn overhead of MemoryAwareAgent against a plain ClaudeSDKClient on the same scripted
server.

All clients run the real SDK and its bundled CLI against the local scripted Messages API server:
a plain client with the user's options; a plain client given the same request as the agent (the
rendered memory in its system prompt, the memory tools served in-process, and a fork of the
agent's session, so the same conversation), which isolates the wrapper's own work (persisting,
bookkeeping) from the cost of a larger request; and the agent.
Turns rotate between the clients so that drift of the machine affects all alike. Printed: median
turn time of each, the median overhead and the ratio of medians against both plain clients, with
an empty database and with 10,000 stored messages; then the median turn right after a memory
edit (the running process gets the new system prompt through a control request).

Goals (issue 3): overhead under 10 ms and ratio under 1.05 when memory is unchanged.
Run: python bench/agent_overhead_bench.py [--turns 40]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from memory_agent import MemoryAwareAgent, MemoryManager, Settings
from memory_agent.agent.options import compose_system_text, merge_options
from memory_agent.testing import ScriptedMessagesServer
from memory_agent.tools import MEMORY_SERVER_NAME, build_memory_server, memory_tool_names


async def timed_turn(client: ClaudeSDKClient | MemoryAwareAgent, prompt: str) -> float:
    began = time.perf_counter()
    await client.query(prompt)
    async for _ in client.receive_response():
        pass
    return time.perf_counter() - began


def populate(memory: MemoryManager, count: int) -> None:
    for number in range(count // 2):
        memory.store_message("user", f"Earlier question {number} about the project plan")
        memory.store_message("assistant", f"Earlier answer {number}: the plan is on track")


async def compare(server: ScriptedMessagesServer, directory: Path, stored: int, turns: int) -> None:
    settings = Settings.from_env(
        {
            "PERSIST_DIRECTORY": str(directory),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "bench-key",
        },
        env_file=None,
    )
    project = directory / "project"
    project.mkdir()
    options = ClaudeAgentOptions(
        env=server.env(), system_prompt="You are terse.", tools=[], cwd=str(project)
    )
    with MemoryManager(agent_id="bench", settings=settings) as memory:
        populate(memory, stored)
        plain = ClaudeSDKClient(options)
        agent = MemoryAwareAgent(options, memory=memory)
        for client in (plain, agent):
            await client.connect()
            await timed_turn(client, "warm up")
        # The same request as the agent's: its system prompt and tools, and a fork of its session,
        # so it carries the same conversation (with 10,000 stored messages, the kept window).
        prompt_path = directory / "system-prompt.md"
        prompt_path.write_text(
            compose_system_text(options.system_prompt, memory.get_system_prompt_addition())
        )
        same_request = dataclasses.replace(
            merge_options(
                options,
                system_prompt_path=prompt_path,
                memory_server_name=MEMORY_SERVER_NAME,
                memory_server=build_memory_server(memory, "bench"),
                memory_tools=memory_tool_names(memory),
                resume=agent.session_id,
                session_id=None,
                session_store=agent.session_store,
                model=None,
            ),
            fork_session=True,
        )
        matched = ClaudeSDKClient(same_request)
        await matched.connect()
        try:
            await timed_turn(matched, "warm up")
            plain_times, matched_times, agent_times = [], [], []
            for number in range(turns):
                plain_times.append(await timed_turn(plain, f"turn {number}"))
                matched_times.append(await timed_turn(matched, f"turn {number}"))
                agent_times.append(await timed_turn(agent, f"turn {number}"))
            reconnects_before = agent.reconnects
            changed_times = []
            for number in range(5):
                memory.core_memory_append("human", f"fact {number}")
                changed_times.append(await timed_turn(agent, f"after edit {number}"))
            assert agent.reconnects == reconnects_before  # refreshed live, no new process
        finally:
            for client in (plain, matched, agent):
                await client.disconnect()
    agent_median = statistics.median(agent_times)
    line = [f"{stored:>6} stored | agent {agent_median * 1000:6.1f} ms"]
    for name, times in (("plain", plain_times), ("same request", matched_times)):
        median = statistics.median(times)
        overhead = statistics.median(a - p for a, p in zip(agent_times, times))
        line.append(
            f"vs {name} {median * 1000:6.1f} ms: overhead {overhead * 1000:5.1f} ms, "
            f"ratio {agent_median / median:5.3f}"
        )
    line.append(f"turn after a memory edit {statistics.median(changed_times) * 1000:6.1f} ms")
    print(" | ".join(line))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: 3 turns, 300 stored messages (the empty database's run is the same "
        "code, so a smoke run leaves it out and starts three SDK CLI processes, not six)",
    )
    args = parser.parse_args()
    sizes = (300,) if args.quick else (0, 10_000)
    if args.quick:
        args.turns = 3
    print(f"{args.turns} alternating turns per client, unchanged memory; medians")
    with ScriptedMessagesServer() as server:
        for stored in sizes:
            with tempfile.TemporaryDirectory() as directory:
                await compare(server, Path(directory), stored, args.turns)


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(lambda: asyncio.run(main()), __file__)
