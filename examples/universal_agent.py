"""Universal agent: a long-running main loop on MemoryAwareAgent.process_turn.

Reads one message per line from standard input and answers each; memory, the conversation and
its summaries persist in the storage dir (PERSIST_DIRECTORY, default ~/.memory_agent; the script
says where) as the agent 'universal-agent' (AGENT_ID to choose another), so a restart carries on
where the last run stopped. Compaction keeps the context inside the model's window. Offline, the
scripted model saves its one fact only once.

    python examples/universal_agent.py                 # needs ANTHROPIC_API_KEY
    python examples/universal_agent.py --offline < questions.txt
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import MemoryAwareAgent, MemoryManager, ModelAuthenticationError, Settings
from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response

SYSTEM_PROMPT = "You are a long-running assistant. Keep your memory blocks accurate and short."
FACT = "Working on: the memory-agent launch."


async def main_loop(options: ClaudeAgentOptions, lines: list[str] | None = None) -> None:
    settings = Settings.from_env(env_file=".env")
    # Its own agent (unless AGENT_ID names one): the demo's and the other examples' memories never
    # mix.
    memory = MemoryManager(agent_id=settings.agent_id or "universal-agent", settings=settings)
    async with MemoryAwareAgent(options, memory=memory) as agent:
        print(f"agent {agent.agent_id}, storage {memory.storage_dir}", flush=True)
        source = lines if lines is not None else sys.stdin
        for line in source:
            message = line.strip()
            if not message:
                continue
            began = time.perf_counter()
            turn = await agent.process_turn(message)
            took = time.perf_counter() - began
            tools = ", ".join(call.name for call in turn.tool_calls) or "none"
            cost = "unknown" if turn.cost_usd is None else f"${turn.cost_usd:.4f}"
            print(
                f"you> {message}\nagent> {turn.text}\n  (tools: {tools}; cost: {cost}; {took:.1f} "
                "s)",
                flush=True,
            )
        print("\n" + memory.get_system_prompt_addition(agent_id=agent.agent_id))


def offline_script(server: ScriptedMessagesServer, count: int) -> None:
    """The scripted model saves a fact to memory (unless a previous run did) and answers every
    message."""
    with MemoryManager(settings=Settings.from_env(env_file=".env")) as memory:
        noted = FACT in memory.get_block("human").value
    if not noted:
        server.enqueue(
            tool_use_response("mcp__memory__memory_insert", {"label": "human", "text": FACT})
        )
    for number in range(count):
        server.enqueue(text_response(f"Answer {number + 1}: noted."))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--offline", action="store_true", help="use a scripted local model")
    args = parser.parse_args()
    if sys.stdin.isatty():
        end = "then Ctrl-D to run them" if args.offline else "Ctrl-D to stop"
        print(f"Type your messages, one per line; {end}.", file=sys.stderr, flush=True)
    try:
        if not args.offline:
            asyncio.run(main_loop(ClaudeAgentOptions(system_prompt=SYSTEM_PROMPT)))
            return 0
        lines = sys.stdin.read().splitlines()
        with ScriptedMessagesServer() as server:
            offline_script(server, len([line for line in lines if line.strip()]))
            asyncio.run(
                main_loop(ClaudeAgentOptions(system_prompt=SYSTEM_PROMPT, env=server.env()), lines)
            )
    except ModelAuthenticationError as error:
        print(f"universal_agent: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
