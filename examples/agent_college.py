"""Agent College: a Critic, a Professor and a Scribe work on one task at the same time.

Each agent is its own MemoryAwareAgent (its own CLI process and its own MemoryManager connection,
as if each ran in a process of its own); they coordinate only through the shared core-memory
block `agent_college_shared_state`, which each of them sees in its system prompt. Every round
runs the three turns concurrently (asyncio.gather); from the second round on, each agent's system
prompt carries what the others wrote in the rounds before.

    python examples/agent_college.py --task "Review my proof that ..."   # needs ANTHROPIC_API_KEY
    python examples/agent_college.py --offline --storage-dir /tmp/college

The instance id (--instance, else AGENT_INSTANCE_ID, else generated) names the college; running
again with the same id and storage dir continues the same college.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from contextlib import ExitStack
from pathlib import Path

from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import (
    MemoryAwareAgent,
    MemoryManager,
    ModelAuthenticationError,
    Settings,
    TurnResult,
)
from memory_agent.integrations.college import (
    COLLEGE_BLOCK_LABEL,
    COLLEGE_ROLES,
    CollegeRole,
    CollegeSession,
)
from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response

DEFAULT_TASK = (
    "Review this proof: 'For every n, n^2 - n is even, because n^2 - n = n(n - 1) and one of two "
    "consecutive integers is even.'"
)
APPEND = "mcp__memory__core_memory_append"
FOLLOW_UP = "Next round: read the shared state in your memory and refine your contribution."

# What the scripted model does offline: per role and round, one shared-block entry and an answer.
OFFLINE_SCRIPT: dict[CollegeRole, list[tuple[str, str]]] = {
    "critic": [
        (
            "Critic: the statement never says n is an integer; for n = 1/2 it is false.",
            "Sound for integers, but the claim must say n is an integer.",
        ),
        (
            "Critic: with n an integer, no further objection.",
            "With the domain stated I have no further objection.",
        ),
    ],
    "professor": [
        (
            "Professor: n(n - 1) multiplies two consecutive integers, one of them even.",
            "The key step is that one of n and n - 1 is even, so their product is.",
        ),
        (
            "Professor: final statement: for every integer n, n^2 - n is even.",
            "Final: for every integer n, n^2 - n is even; the proof stands as written.",
        ),
    ],
    "scribe": [
        (
            "Scribe: under review: parity of n^2 - n.",
            "I opened the record for the parity of n^2 - n.",
        ),
        (
            "Scribe: agreed: true for all integers n; the proof must state the domain.",
            "Recorded: the claim holds for integers and the proof needs its domain stated.",
        ),
    ],
}


def offline_model(role: CollegeRole) -> str:
    """Offline, each role asks for its own model name, so the scripted server can tell them
    apart."""
    return f"claude-sonnet-4-5-{role}"


def enqueue_offline_script(server: ScriptedMessagesServer, rounds: int) -> None:
    for role, steps in OFFLINE_SCRIPT.items():
        for entry, answer in steps[:rounds]:
            server.enqueue(
                tool_use_response(APPEND, {"label": COLLEGE_BLOCK_LABEL, "content": entry}),
                text_response(answer),
                model=offline_model(role),
            )


def role_options(
    role: CollegeRole, server: ScriptedMessagesServer | None, cwd: Path
) -> ClaudeAgentOptions:
    """Only the memory tools: the college talks through its shared block, not the filesystem."""
    if server is None:
        return ClaudeAgentOptions(tools=[], cwd=str(cwd))
    return ClaudeAgentOptions(tools=[], cwd=str(cwd), env=server.env(), model=offline_model(role))


async def run_round(
    agents: dict[CollegeRole, MemoryAwareAgent], prompt: str
) -> dict[CollegeRole, TurnResult]:
    """The three turns at once; each agent's edits land in the shared block as they happen."""
    results = await asyncio.gather(*(agent.process_turn(prompt) for agent in agents.values()))
    return dict(zip(agents, results))


def print_round(number: int, results: dict[CollegeRole, TurnResult]) -> None:
    print(f"--- round {number} ---")
    for role, turn in results.items():
        edits = sum(1 for call in turn.tool_calls if call.name.startswith("mcp__memory__"))
        print(f"[{role}] ({edits} memory edit{'s' if edits != 1 else ''}) {turn.text}")


async def run_college(
    college: CollegeSession,
    managers: dict[CollegeRole, MemoryManager],
    task: str,
    rounds: int,
    server: ScriptedMessagesServer | None,
    cwd: Path,
) -> None:
    agents = {
        role: college.build_agent(role, role_options(role, server, cwd), memory=managers[role])
        for role in COLLEGE_ROLES
    }
    try:
        await asyncio.gather(*(agent.connect() for agent in agents.values()))
        for number in range(1, rounds + 1):
            results = await run_round(agents, task if number == 1 else FOLLOW_UP)
            print_round(number, results)
    finally:
        await asyncio.gather(*(agent.disconnect() for agent in agents.values()))


def print_shared_block(college: CollegeSession) -> None:
    block = college.shared_block()
    print(
        f"=== final shared block '{COLLEGE_BLOCK_LABEL}' (version {block.version}, "
        f"{block.chars_current}/{block.limit} characters) ==="
    )
    print(block.value)
    authors = [
        v.agent_id
        for v in college.memory.block_history(COLLEGE_BLOCK_LABEL, agent_id=college.critic_id)
    ]
    print(f"written by: {', '.join(str(a) for a in authors[1:]) or 'nobody yet'}")


def print_offline_check(server: ScriptedMessagesServer, rounds: int) -> None:
    """Offline only: did each agent's last request show the entries the others wrote before it?"""
    earlier = [entry for steps in OFFLINE_SCRIPT.values() for entry, _ in steps[: rounds - 1]]
    if not earlier:
        return
    for role in COLLEGE_ROLES:
        requests = server.turn_requests(model=offline_model(role))
        # In the system prompt, or (the default `announce` refresh policy) in the turn's message.
        shown = (
            requests[-1].system_text + json.dumps(requests[-1].messages, ensure_ascii=False)
            if requests
            else ""
        )
        seen = sum(entry in shown for entry in earlier)
        print(
            f"offline check: {role}'s last request showed {seen}/{len(earlier)} earlier-round "
            "entries"
        )


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--offline", action="store_true", help="use a scripted local model (no API key)"
    )
    parser.add_argument("--task", default=DEFAULT_TASK, help="what the college works on")
    parser.add_argument(
        "--rounds", type=int, default=2, choices=(1, 2, 3, 4), help="rounds of turns (default 2)"
    )
    parser.add_argument(
        "--instance", help="college instance id (default: AGENT_INSTANCE_ID, else generated)"
    )
    parser.add_argument("--storage-dir", type=Path, help="storage dir (default: PERSIST_DIRECTORY)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    settings = Settings.from_env(env_file=".env")
    if not args.offline and not (
        settings.anthropic_api_key or os.environ.get("ANTHROPIC_AUTH_TOKEN")
    ):
        print(
            "Set ANTHROPIC_API_KEY to run the college online, or pass --offline.", file=sys.stderr
        )
        return 2
    rounds = min(args.rounds, len(OFFLINE_SCRIPT["critic"])) if args.offline else args.rounds
    with ExitStack() as stack:
        server = stack.enter_context(ScriptedMessagesServer()) if args.offline else None
        if server is not None:
            enqueue_offline_script(server, rounds)
        college = stack.enter_context(
            CollegeSession.open(
                instance_id=args.instance, storage_dir=args.storage_dir, settings=settings
            )
        )
        managers = {
            role: stack.enter_context(
                MemoryManager(
                    college.memory.storage_dir, agent_id=college.agent_id(role), settings=settings
                )
            )
            for role in COLLEGE_ROLES
        }
        print(f"Agent College '{college.instance_id}' (storage {college.memory.storage_dir})")
        print(f"task: {args.task}")
        try:
            asyncio.run(run_college(college, managers, args.task, rounds, server, Path.cwd()))
        except ModelAuthenticationError as error:  # a refused key: one line, not a traceback
            print(f"agent_college: {error}", file=sys.stderr)
            return 1
        print_shared_block(college)
        if server is not None:
            print_offline_check(server, rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
