"""Should the SDK session mirror be a view built from recall? The figures the choice rests on.

The conversation is stored twice: recall (`messages`, the source of truth) and the SDK session
mirror (`session_entries`, the CLI's transcript lines through our `SessionStore`). A view would
build the transcript from recall when the SDK `load()`s a session, the way a compaction seeds a
new one (`sdk_seams.transcript.seed_lines`), and store nothing beside it. Measured here:

1. Fidelity, with the real SDK and its bundled CLI against the scripted server (a few turns, one
   with a memory tool call): how many lines the CLI writes, how many of them are conversation
   messages at all, the keys of those lines a view cannot give back, and how many prompts the
   view would resend with other bytes than were sent (the agent's `<turn_context>` block, which
   recall does not store). After normalising both (`transcript_conversation`), the conversation
   itself must agree.
2. Resume cost: `load()` of a stored transcript against building the view from recall
   (`in_context_messages` + `seed_lines`), at a few conversation sizes (median of repeats).
3. Per-turn cost of keeping the mirror: one `append()` of a turn's batch of lines.

Run: python bench/conversation_copies_bench.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, SessionKey, project_key_for_directory

from memory_agent import MemoryAwareAgent, MemoryManager, Settings
from memory_agent.integrations.session_store import SQLiteSessionStore
from memory_agent.sdk_seams.transcript import (
    normal_conversation,
    seed_lines,
    seed_messages,
    transcript_conversation,
)
from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response


async def fidelity(directory: Path, turns: int) -> dict[str, Any]:
    """One real agent run; what its mirror holds that recall does not."""
    with ScriptedMessagesServer() as server:
        settings = Settings.from_env(
            {
                "PERSIST_DIRECTORY": str(directory / "store"),
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "bench-key",
            },
            env_file=None,
        )
        project = directory / "project"
        project.mkdir()
        options = ClaudeAgentOptions(
            env=server.env(), system_prompt="You are careful.", tools=[], cwd=str(project)
        )
        server.enqueue(text_response("Hello Ada, noted."))
        server.enqueue(
            tool_use_response(
                "mcp__memory__core_memory_append",
                {"label": "human", "content": "Likes tea."},
                text="Saving that.",
            )
        )
        server.enqueue(text_response("Saved: you like tea."))
        with MemoryManager(agent_id="bench", settings=settings) as memory:
            async with MemoryAwareAgent(options, memory=memory) as agent:
                await agent.process_turn("Hi, I am Ada.")
                await agent.process_turn("I like tea, remember that.")
                for number in range(max(turns - 2, 0)):
                    await agent.process_turn(f"Tell me something about turn {number}.")
                key: SessionKey = {
                    "project_key": project_key_for_directory(project),
                    "session_id": agent.session_id or "",
                }
                entries = await agent.session_store.load(key) or []
            messages = memory.in_context_messages()
    view = seed_lines(messages, session_id="view", cwd=str(project))
    kinds = Counter(str(entry.get("type")) for entry in entries)
    conversation = [e for e in entries if e.get("type") in ("user", "assistant")]
    view_keys = set().union(*(line.keys() for line in view)) if view else set()
    lost_keys = sorted(set().union(*(e.keys() for e in conversation)) - view_keys)
    prompts = [
        e
        for e in conversation
        if e.get("type") == "user" and "toolUseResult" not in e and not e.get("isSidechain")
    ]
    with_context = sum("<turn_context>" in json.dumps(e["message"]["content"]) for e in prompts)
    agree = normal_conversation(transcript_conversation(entries)) == normal_conversation(
        seed_messages(messages)
    )
    return {
        "turns": turns,
        "mirror_lines": len(entries),
        "mirror_bytes": sum(len(json.dumps(e)) for e in entries),
        "conversation_lines": len(conversation),
        "other_lines_by_type": {
            k: v for k, v in sorted(kinds.items()) if k not in ("user", "assistant")
        },
        "recall_messages": len(messages),
        "view_lines": len(view),
        "view_bytes": sum(len(json.dumps(line)) for line in view),
        "keys_a_view_cannot_give": lost_keys,
        "prompts_resent_with_other_bytes": f"{with_context} of {len(prompts)}",
        "conversations_agree": agree,
    }


async def resume_cache(directory: Path, turns: int) -> dict[str, Any]:
    """The first request after a restart, billed by the scripted server's prompt cache model:
    resumed from the mirror, against resumed from a view (the session's mirror rows deleted, so
    the agent seeds a new session from recall, exactly what a view would hand the CLI)."""
    with ScriptedMessagesServer() as server:
        environ = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "bench-key"}
        settings = Settings.from_env(
            {**environ, "PERSIST_DIRECTORY": str(directory / "cache-store")}, env_file=None
        )
        project = directory / "cache-project"
        project.mkdir()
        options = ClaudeAgentOptions(
            env=server.env(), system_prompt="You are careful.", tools=[], cwd=str(project)
        )
        with MemoryManager(agent_id="bench", settings=settings) as memory:
            async with MemoryAwareAgent(options, memory=memory) as agent:
                for number in range(turns):
                    await agent.process_turn(f"Turn {number}: " + "notes on the garden. " * 80)
                session = agent.session_id or ""
        billed = {}
        for way in ("mirror", "view"):
            with MemoryManager(agent_id="bench", settings=settings) as memory:
                if way == "view":
                    store = SQLiteSessionStore.for_memory(memory)
                    await store.delete(
                        {"project_key": project_key_for_directory(project), "session_id": session}
                    )
                before = len(server.message_requests())
                async with MemoryAwareAgent(options, memory=memory) as agent:
                    await agent.process_turn(f"After the restart ({way}): what did I say?")
                    resumed = agent.session_id == session
                usage = server.message_requests()[before].cache_usage
                assert usage is not None
                billed[way] = {
                    "same_session": resumed,
                    "read": usage.read,
                    "written": usage.written,
                    "uncached": usage.uncached,
                }
    return billed


def populate(memory: MemoryManager, count: int) -> None:
    for number in range(count // 2):
        memory.store_message("user", f"Question {number}: what about the garden plan? " * 4)
        memory.store_message(
            "assistant", [{"type": "text", "text": f"Answer {number}: it is on track. " * 6}]
        )


async def resume_cost(directory: Path, sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    """load() of a stored transcript vs the view built from recall, per conversation size."""
    rows = []
    for size in sizes:
        settings = Settings.from_env(
            {"PERSIST_DIRECTORY": str(directory / f"cost-{size}")}, env_file=None
        )
        with MemoryManager(agent_id="bench", settings=settings) as memory:
            populate(memory, size)
            store = SQLiteSessionStore.for_memory(memory)
            key: SessionKey = {"project_key": "bench", "session_id": f"s-{size}"}
            lines = seed_lines(memory.in_context_messages(), session_id=key["session_id"], cwd="/b")
            await store.append(key, lines)
            load, view = [], []
            for _ in range(repeats):
                began = time.perf_counter()
                loaded = await store.load(key)
                load.append(time.perf_counter() - began)
                began = time.perf_counter()
                built = seed_lines(memory.in_context_messages(), session_id="v", cwd="/b")
                view.append(time.perf_counter() - began)
            assert loaded is not None and len(loaded) == len(built)
            batch = lines[-8:]
            appends = []
            for number in range(repeats):
                fresh = [{**line, "uuid": f"{line['uuid']}-{number}"} for line in batch]
                began = time.perf_counter()
                await store.append(key, fresh)
                appends.append(time.perf_counter() - began)
        rows.append(
            {
                "messages": size,
                "mirror_load_ms": round(statistics.median(load) * 1000, 2),
                "view_build_ms": round(statistics.median(view) * 1000, 2),
                "append_8_lines_ms": round(statistics.median(appends) * 1000, 2),
            }
        )
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: small sizes")
    args = parser.parse_args()
    os.environ.setdefault("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    sizes, repeats, turns = ([200], 5, 3) if args.quick else ([200, 2_000], 15, 6)
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        found = await fidelity(directory, turns)
        print("fidelity (real SDK run against the scripted server)")
        for name, value in found.items():
            print(f"  {name}: {value}")
        print(f"first request after a restart, {turns} turns before (prompt cache model, tokens)")
        for way, usage in (await resume_cache(directory, turns)).items():
            print(f"  resumed from the {way}: {usage}")
        print("resume and per-turn cost (SQLite, median)")
        print(f"  {'messages':>8} {'mirror load ms':>15} {'view build ms':>14} {'append ms':>10}")
        for row in await resume_cost(directory, sizes, repeats):
            print(
                f"  {row['messages']:>8} {row['mirror_load_ms']:>15} {row['view_build_ms']:>14}"
                f" {row['append_8_lines_ms']:>10}"
            )
        print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from record import run_recorded  # noqa: E402

    run_recorded(lambda: asyncio.run(main()), __file__)
