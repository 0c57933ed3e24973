"""Quickstart: the one-line swap from ClaudeSDKClient to MemoryAwareAgent.

    python examples/quickstart.py             # needs ANTHROPIC_API_KEY
    python examples/quickstart.py --offline   # a scripted local model, no network

The agent remembers across runs: run it twice and look at the human block.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Iterator

from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ResultMessage, TextBlock

from memory_agent import MemoryAwareAgent  # was: from claude_agent_sdk import ClaudeSDKClient
from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response


@contextlib.contextmanager
def scripted_model() -> Iterator[dict[str, str]]:
    """A local stand-in for the model that saves a fact with a memory tool, then answers."""
    with ScriptedMessagesServer() as server:
        server.enqueue(
            tool_use_response("mcp__memory__core_memory_append", {"label": "human", "content": "Name: Ada. Likes tea."}),
            text_response("Nice to meet you, Ada. I will remember that you like tea."),
        )
        yield server.env()


async def chat(env: dict[str, str]) -> None:
    options = ClaudeAgentOptions(system_prompt="You are a friendly assistant.", env=env)
    async with MemoryAwareAgent(options) as client:  # was: ClaudeSDKClient(options)
        await client.query("Hi! I'm Ada and I like tea.")
        async for message in client.receive_response():
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, TextBlock):
                        print(f"Claude: {block.text}")
            elif isinstance(message, ResultMessage):
                print(f"(turn finished: {message.subtype})")
        print("\nWhat the agent remembers about you:")
        print(client.memory.get_block("human").value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--offline", action="store_true", help="use a scripted local model")
    args = parser.parse_args()
    if args.offline:
        with scripted_model() as env:
            asyncio.run(chat(env))
    else:
        asyncio.run(chat({}))


if __name__ == "__main__":
    main()
