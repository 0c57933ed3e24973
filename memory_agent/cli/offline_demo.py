"""`memory-agent chat --offline-demo`: chat without a key, against the bundled scripted model.

A newcomer with no API key can still watch the memory tools work end to end: the real SDK and its
CLI run the turns, the in-process memory tools write to the real storage dir, and the only
stand-in is the model, `ScriptedMessagesServer` on 127.0.0.1 answering from the short script
below (one memory tool per turn, then plain replies). The demo talks to its own agent,
`offline-demo`, unless --agent names another, so it never writes into a real agent's memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..manager import MemoryManager
from ..testing import ScriptedMessagesServer, ScriptedResponse, text_response, tool_use_response

__all__ = ["DEMO_AGENT_ID", "DEMO_FACT", "demo_script", "scripted_model"]

DEMO_AGENT_ID = "offline-demo"
DEMO_FACT = "Tried memory-agent with the offline demo."
_DEMO_PASSAGE = (
    "The user tried the offline demo of memory-agent: a scripted model exercised the memory tools."
)
_TOOL = "mcp__memory__{}"


def demo_script(already_noted: bool) -> list[ScriptedResponse]:
    """Replies for three turns: a core-memory edit, an archival insert, an archival search.

    On a second run the human block already holds the demo's fact, so the first turn only says
    so (the demo never appends the same line twice).
    """
    first: list[ScriptedResponse] = (
        [
            text_response(
                "(demo model) I already remember that you tried this demo: type /memory to see it."
            )
        ]
        if already_noted
        else [
            tool_use_response(
                _TOOL.format("core_memory_append"), {"label": "human", "content": DEMO_FACT}
            ),
            text_response(
                "(demo model) I saved a line to my 'human' memory block with core_memory_append. "
                "Type /memory to see it, then send another message."
            ),
        ]
    )
    return [
        *first,
        tool_use_response(
            _TOOL.format("archival_memory_insert"), {"content": _DEMO_PASSAGE, "tags": ["demo"]}
        ),
        text_response(
            "(demo model) I stored a passage in archival memory; after the chat, "
            "'memory-agent --agent offline-demo recall demo' finds it. Send one more message."
        ),
        tool_use_response(_TOOL.format("archival_memory_search"), {"query": "offline demo"}),
        text_response(
            "(demo model) I searched archival memory and found that passage. That is the end of "
            "my script: from now on I answer 'OK'. Set ANTHROPIC_API_KEY to chat with Claude."
        ),
    ]


@contextmanager
def scripted_model(memory: MemoryManager) -> Iterator[dict[str, str]]:
    """A running scripted model for this agent's demo; yields the environment that points at it."""
    already_noted = any(DEMO_FACT in block.value for block in memory.list_blocks())
    with ScriptedMessagesServer() as server:
        server.enqueue(*demo_script(already_noted))
        yield server.env()
