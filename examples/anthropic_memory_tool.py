"""Anthropic's memory tool for plain `anthropic` SDK users, stored by memory-agent.

    python examples/anthropic_memory_tool.py             # needs ANTHROPIC_API_KEY
    python examples/anthropic_memory_tool.py --offline   # a scripted local model, no network

The tool runner gets the native `memory_20250818` tool; the files it writes under /memories are
blocks in memory.db (PERSIST_DIRECTORY, default ~/.memory_agent), as the agent
'anthropic-memory-tool' (AGENT_ID to choose another): journalled, with history and undo, shared with
the other agents of the storage dir that have them attached. Run it twice: the second run finds the
file the first one wrote.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator

import anthropic

from memory_agent import MemoryManager, ModelAuthenticationError, Settings
from memory_agent.integrations.anthropic_memory import ManagedMemoryTool
from memory_agent.testing import (
    DUMMY_API_KEY,
    ScriptedMessagesServer,
    text_response,
    tool_use_response,
)

PREFERENCES = "/memories/preferences.md"


@contextlib.contextmanager
def scripted_model() -> Iterator[anthropic.Anthropic]:
    """A local stand-in for the model: it looks at its memory, writes a file, then answers."""
    with ScriptedMessagesServer() as server:
        server.enqueue(
            tool_use_response("memory", {"command": "view", "path": "/memories"}),
            tool_use_response(
                "memory",
                {"command": "create", "path": PREFERENCES, "file_text": "Drinks: tea, no sugar.\n"},
            ),
            tool_use_response("memory", {"command": "view", "path": PREFERENCES}),
            text_response("Noted: tea, no sugar."),
        )
        yield anthropic.Anthropic(base_url=server.url, api_key=DUMMY_API_KEY)


def converse(client: anthropic.Anthropic, memory: MemoryManager) -> None:
    runner = client.beta.messages.tool_runner(
        model=memory.settings.model_name or "claude-sonnet-5-5",
        max_tokens=1024,
        tools=[ManagedMemoryTool(memory)],
        messages=[
            {"role": "user", "content": "I take my tea without sugar. Please remember that."}
        ],
    )
    for message in runner:
        for block in message.content:
            if block.type == "text":
                print(f"Claude: {block.text}")
            elif block.type == "tool_use":
                print(f"  memory tool: {block.input}")
        # The runner runs the calls once and caches the results it sends back next.
        for result in (runner.generate_tool_call_response() or {}).get("content", []):
            marker = "error" if result.get("is_error") else "result"
            print(f"  {marker}: {str(result.get('content')).splitlines()[0]}")
    print("\nStored in memory.db as the block 'preferences.md' (on demand: listed, not rendered):")
    print(memory.get_block("preferences.md").value, end="")
    print("Journal:", ", ".join(entry.action for entry in reversed(memory.journal(limit=5))))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--offline", action="store_true", help="use a scripted local model")
    args = parser.parse_args()
    settings = Settings.from_env(env_file=".env")
    # Its own agent (unless AGENT_ID names one): the demo's and the other examples' memories never
    # mix.
    with MemoryManager(
        agent_id=settings.agent_id or "anthropic-memory-tool", settings=settings
    ) as memory:
        print(
            f"Memory of agent '{memory.agent_id}' in {memory.storage_dir} (set PERSIST_DIRECTORY "
            "to "
            "move it)"
        )
        if args.offline:
            with scripted_model() as client:
                converse(client, memory)
            return 0
        try:
            if not settings.anthropic_api_key:
                raise ModelAuthenticationError(None, "no API key")
            converse(
                anthropic.Anthropic(
                    api_key=settings.anthropic_api_key, base_url=settings.anthropic_base_url
                ),
                memory,
            )
        except anthropic.APIStatusError as error:
            if error.status_code not in (401, 403):
                raise
            print(
                f"anthropic_memory_tool: {ModelAuthenticationError(error.status_code, str(error))}",
                file=sys.stderr,
            )
            return 1
        except ModelAuthenticationError as error:
            print(f"anthropic_memory_tool: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
