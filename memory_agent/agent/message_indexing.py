"""Message vectors written after a turn, in a thread, never awaited by the turn.

A turn's messages are stored without vectors (one short write each); when the turn ends this
embeds them in a thread of its own, so the model's reply reaches the caller without waiting for
the embedding model. It runs only once message vectors are in use in this process (a vector or
hybrid conversation search opened them, which also caught up on a bounded batch), so an agent
whose messages are never searched by meaning never loads the model. What is not written stays
pending: the next search, the next turn or `memory-agent doctor --repair` writes it.
"""

from __future__ import annotations

import logging
import threading

import anyio.to_thread

from ..manager import MemoryManager

__all__ = ["BackgroundIndexing"]

logger = logging.getLogger(__name__)


class BackgroundIndexing:
    """Embeds one agent's new messages after each turn (at most one run at a time)."""

    def __init__(self, memory: MemoryManager, agent_id: str) -> None:
        self._memory = memory
        self._agent_id = agent_id
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.written = 0
        """Messages embedded by this object's runs so far."""

    def turn_finished(self) -> bool:
        """A turn ended: start a run if message vectors are in use and none is running."""
        if not self._memory.message_vectors_in_use:
            return False
        with self._lock:
            if self._closed or (self._thread is not None and self._thread.is_alive()):
                return False
            self._thread = threading.Thread(
                target=self._run, daemon=False, name=f"memory-agent-indexing[{self._agent_id}]"
            )
            self._thread.start()
        return True

    async def wait(self) -> None:
        """Until the running batch (if any) has been written; the event loop stays free."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            await anyio.to_thread.run_sync(thread.join)

    async def aclose(self) -> None:
        """Start nothing more, and wait for the running batch."""
        with self._lock:
            self._closed = True
        await self.wait()

    def _run(self) -> None:
        try:
            written = self._memory.index_message_vectors(agent_id=self._agent_id)
        except Exception as error:  # never into the conversation; the messages stay pending
            logger.warning(
                "message vectors of agent %s not written after the turn (%s: %s); they stay "
                "pending for the next search or 'memory-agent doctor --repair'",
                self._agent_id,
                type(error).__name__,
                error,
            )
            return
        with self._lock:
            self.written += written
