"""Two agents in one process share an event loop: one agent's slow memory tool (embedding text,
loading the model) must not stall the other. The tool handlers run in worker threads.

The slow part is the embedding function, held until the other agent has finished a whole turn.
Were the handler run on the event loop, that turn could not even start: the gate would time out
first (archival memory would still save the passage, its vector pending).
"""

from __future__ import annotations

import asyncio
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest
from backends import backend_environ
from chromadb import Documents, EmbeddingFunction, Embeddings
from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import MemoryAwareAgent, MemoryManager, Settings
from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

GATE_SECONDS = 60


class GatedEmbedding(EmbeddingFunction[Documents]):
    """A word-hash embedding that waits for `gate` before answering (a slow model)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.timed_out = False

    def __call__(self, input: Documents) -> Embeddings:
        self.entered.set()
        if not self.gate.wait(GATE_SECONDS):
            self.timed_out = (
                True  # archival memory keeps the passage pending; the test fails on this
            )
            raise RuntimeError(
                "the embedding gate was never opened: the other agent did not finish its turn"
            )
        vectors = []
        for text in input:
            vector = [0.0] * 16
            for word in text.split():
                vector[zlib.crc32(word.encode()) % 16] += 1.0
            vectors.append(vector)
        return vectors

    @staticmethod
    def name() -> str:
        return "gated-hash"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> GatedEmbedding:
        return GatedEmbedding()


async def test_a_slow_tool_call_of_one_agent_does_not_stall_the_other(tmp_path: Path) -> None:
    embedding = GatedEmbedding()
    events: list[str] = []
    with ScriptedMessagesServer() as server_a, ScriptedMessagesServer() as server_b:
        server_a.enqueue(
            tool_use_response("mcp__memory__archival_memory_insert", {"content": "Ada likes tea"})
        )
        server_a.enqueue(text_response("Saved."))
        server_b.enqueue(text_response("Hello from B."))

        def settings(server: ScriptedMessagesServer) -> Settings:
            return Settings.from_env(
                backend_environ(
                    {
                        "PERSIST_DIRECTORY": str(tmp_path / "store"),
                        "ANTHROPIC_BASE_URL": server.url,
                        "ANTHROPIC_API_KEY": "test-key",
                    }
                ),
                env_file=None,
            )

        def options(server: ScriptedMessagesServer, name: str) -> ClaudeAgentOptions:
            cwd = tmp_path / name
            cwd.mkdir()
            return ClaudeAgentOptions(
                env=server.env(), system_prompt="You help.", tools=[], cwd=str(cwd)
            )

        with (
            MemoryManager(
                agent_id="a", settings=settings(server_a), embedding_function=embedding
            ) as memory_a,
            MemoryManager(agent_id="b", settings=settings(server_b)) as memory_b,
        ):
            async with (
                MemoryAwareAgent(options(server_a, "a"), memory=memory_a) as agent_a,
                MemoryAwareAgent(options(server_b, "b"), memory=memory_b) as agent_b,
            ):
                turn_a = asyncio.create_task(agent_a.process_turn("Remember that Ada likes tea."))
                while not embedding.entered.is_set():  # A's tool call is now inside the slow part
                    assert not turn_a.done(), turn_a
                    await asyncio.sleep(0.05)
                result_b = await agent_b.process_turn("Hi!")
                events.append("B finished its turn")
                embedding.gate.set()
                events.append("A's embedding released")
                result_a = await turn_a
            stored = [passage.content for passage in memory_a.archival_memory_list()]

    assert not embedding.timed_out, (
        "agent B's turn could not run while agent A's tool call was blocked"
    )
    assert result_b.text == "Hello from B."
    assert events == ["B finished its turn", "A's embedding released"]
    assert result_a.text == "Saved."
    tool_result = server_a.message_requests()[1].tool_results[-1]
    assert not tool_result.get("is_error") and "Saved to archival memory" in str(
        tool_result["content"]
    )
    assert stored == ["Ada likes tea"]
