"""Quickstart: the one-line swap from ClaudeSDKClient to MemoryAwareAgent.

    python examples/quickstart.py             # needs ANTHROPIC_API_KEY
    python examples/quickstart.py --offline   # a scripted local model, no network

Memory is kept in PERSIST_DIRECTORY (default ~/.memory_agent; the script says where). The agent
remembers across runs: run it twice and look at the human block (offline, the scripted model
saves the fact only once).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Iterator

from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ResultMessage, TextBlock

from memory_agent import MemoryAwareAgent, MemoryManager, ModelAuthenticationError, Settings
from memory_agent.agent import raise_for_authentication_failure
from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response

FACT = "Name: Ada. Likes tea."


@contextlib.contextmanager
def scripted_model(memory: MemoryManager) -> Iterator[dict[str, str]]:
    """A local stand-in for the model that saves a fact with a memory tool (once), then answers."""
    with ScriptedMessagesServer() as server:
        if FACT not in memory.get_block("human").value:
            server.enqueue(
                tool_use_response(
                    "mcp__memory__core_memory_append", {"label": "human", "content": FACT}
                )
            )
        server.enqueue(text_response("Nice to meet you, Ada. I will remember that you like tea."))
        yield server.env()


async def chat(memory: MemoryManager, env: dict[str, str]) -> None:
    options = ClaudeAgentOptions(system_prompt="You are a friendly assistant.", env=env)
    async with MemoryAwareAgent(options, memory=memory) as client:  # was: ClaudeSDKClient(options)
        await client.query("Hi! I'm Ada and I like tea.")
        async for message in client.receive_response():
            raise_for_authentication_failure(message)  # no key, or a refused one: one clear error
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, TextBlock):
                        print(f"Claude: {block.text}")
            elif isinstance(message, ResultMessage):
                print(f"(turn finished: {message.subtype})")
        print("\nWhat the agent remembers about you:")
        print(client.memory.get_block("human").value)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--offline", action="store_true", help="use a scripted local model")
    args = parser.parse_args()
    settings = Settings.from_env(env_file=".env")
    # Its own agent (unless AGENT_ID names one), so its memories never mix with the offline demo's.
    with MemoryManager(agent_id=settings.agent_id or "quickstart", settings=settings) as memory:
        print(
            f"Memory of agent '{memory.agent_id}' in {memory.storage_dir} (set PERSIST_DIRECTORY "
            "to "
            "move it)"
        )
        try:
            if args.offline:
                with scripted_model(memory) as env:
                    asyncio.run(chat(memory, env))
            else:
                asyncio.run(chat(memory, {}))
        except ModelAuthenticationError as error:
            print(f"quickstart: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
