"""Consolidation beside the live conversation: triggered by the agent, run in a thread, never
awaited by a turn.

`BackgroundConsolidation` is the one object that decides when a run starts (after a compaction,
every N turns, or to retry a run that met a newer block) and runs it. The agent calls its two
trigger methods from one place each and awaits `wait()` when it disconnects; nothing else in
the turn knows about consolidation, so whatever plans turns later can own this object whole.

Why a thread of its own: `MemoryManager.consolidate` embeds text, may wait seconds for the
compaction model and writes in short transactions; in a thread the event loop keeps serving the
conversation (and other agents of the process) meanwhile. A turn never waits for it. Closing
waits for a running consolidation to finish (its writes are short transactions, so this is the
model's answer at most), so no thread outlives the agent and nothing is written after close.

A run that met a block edited after it read it (a stale-write refusal, `report.retry_later`)
is retried when the next turn ends, on the fresh text. A failed run is logged as a warning (the
engine records the session as failed with the reason); the conversation goes on.
"""

from __future__ import annotations

import logging
import threading

import anyio.to_thread

from ..consolidation import ConsolidationReport
from ..manager import MemoryManager
from .consolidation_schedule import ConsolidationSchedule

__all__ = ["BackgroundConsolidation"]

logger = logging.getLogger(__name__)


class BackgroundConsolidation:
    """When to consolidate one agent's memory, and the run in progress (at most one at a time)."""

    def __init__(
        self, memory: MemoryManager, agent_id: str, schedule: ConsolidationSchedule
    ) -> None:
        self.schedule = schedule
        self._memory = memory
        self._agent_id = agent_id
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._turns = 0
        self._retry_due = False
        self._closed = False
        self.started = 0
        """Runs started so far."""
        self.finished = 0
        """Runs that ended, whatever their outcome."""
        self.failures = 0
        """Runs that failed (raised, or reported status 'failed')."""
        self.last_report: ConsolidationReport | None = None
        """The `ConsolidationReport` of the last run that returned one."""
        self.last_error: str | None = None
        """Why the last failed run failed."""

    # ----- triggers (called by the agent) --------------------------------------------------

    def compaction_finished(self, changed: bool) -> bool:
        """A compaction ended; start a run if the schedule says so. True when one started."""
        return changed and self.schedule.on_compaction and self._start("after a compaction")

    def turn_finished(self) -> bool:
        """A turn ended; start a run if one is due by count or waits for a retry."""
        self._turns += 1
        every = self.schedule.every_turns
        if every is not None and self._turns % every == 0:
            return self._start(f"after turn {self._turns}")
        if self._retry_due:
            return self._start("retrying on fresh text")
        return False

    # ----- state ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def retry_due(self) -> bool:
        """Whether the next turn's end starts a run again (the last one met newer text, or a
        trigger came while a run was going)."""
        return self._retry_due

    async def wait(self) -> None:
        """Until the running consolidation (if any) has finished; the event loop stays free."""
        thread = self._thread
        if thread is not None and thread.is_alive():
            logger.info(
                "waiting for the background consolidation of agent %s to finish", self._agent_id
            )
            await anyio.to_thread.run_sync(thread.join)

    async def aclose(self) -> None:
        """Start nothing more, and wait for the running consolidation."""
        with self._lock:
            self._closed = True
        await self.wait()

    # ----- the run -------------------------------------------------------------------------

    def _start(self, reason: str) -> bool:
        with self._lock:
            if self._closed:
                return False
            if self._thread is not None and self._thread.is_alive():
                self._retry_due = (
                    True  # one run at a time; this trigger's turn comes at the next turn's end
                )
                return False
            self._retry_due = False
            self.started += 1
            self._thread = threading.Thread(
                target=self._run,
                args=(reason,),
                daemon=False,
                name=f"memory-agent-consolidation[{self._agent_id}]",
            )
            self._thread.start()
        return True

    def _run(self, reason: str) -> None:
        logger.info("background consolidation of agent %s started (%s)", self._agent_id, reason)
        try:
            report = self._memory.consolidate(
                agent_id=self._agent_id, consolidator=self.schedule.consolidator
            )
        except (
            Exception
        ) as error:  # never into the conversation: logged, counted, and the agent goes on
            logger.warning(
                "background consolidation of agent %s failed: %s: %s; the conversation goes on, "
                "and the next trigger tries again",
                self._agent_id,
                type(error).__name__,
                error,
            )
            with self._lock:
                self.failures += 1
                self.finished += 1
                self.last_error = f"{type(error).__name__}: {error}"
            return
        with self._lock:
            self.finished += 1
            self.last_report = report
            if report.retry_later:
                self._retry_due = True
            if not report.ok:
                self.failures += 1
                self.last_error = report.failure or "failed"
        if not report.ok:
            logger.warning(
                "background consolidation of agent %s failed (session %s): %s; the conversation "
                "goes on, and the next trigger tries again",
                self._agent_id,
                report.session_id,
                self.last_error,
            )
        elif report.retry_later:
            logger.info(
                "background consolidation of agent %s left %d change(s) to retry on fresh text",
                self._agent_id,
                len(report.retry_later),
            )
