"""The lifecycle of one agent's connection to the CLI, as one object with named states.

`MemoryAwareAgent` used to keep this in a dozen loose flags; here the phase, the SDK session and
the pending work are one value whose transitions are methods, so each rule is written once and
can be tested without a CLI.

Phases (`Phase`):
    DISCONNECTED --process_ready()--> READY --turn_started()--> IN_TURN --turn_finished()--> READY
    any phase --disconnected()--> DISCONNECTED

The SDK session (`session_id`, `session_started`) is orthogonal to the phase: it outlives
processes (a reconnect resumes it) and is dropped by a compaction (`compacted()`) or when it
cannot be resumed from here (`session_lost()`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import Enum

__all__ = ["Phase", "SessionState", "SessionStateError"]


class SessionStateError(RuntimeError):
    """A transition that the current phase does not allow (a defect of the caller)."""


class Phase(Enum):
    DISCONNECTED = "disconnected"
    """No CLI process."""
    READY = "ready"
    """A CLI process between turns."""
    IN_TURN = "in_turn"
    """A prompt was sent and its `ResultMessage` has not arrived yet."""


@dataclass
class SessionState:
    session_id: str | None = None
    """The SDK session this agent continues (None: the next process starts a new one)."""
    session_started: bool = False
    """Whether `session_id` has a transcript the CLI can resume."""
    pending_session_id: str | None = None
    """The id given to a new process's session before its first result confirms it."""
    phase: Phase = Phase.DISCONNECTED
    turn_id: str | None = None
    needs_new_process: bool = False
    """A compaction replaced the session: a live refresh cannot apply, start a new process."""

    @classmethod
    def resuming(cls, session_id: str | None) -> SessionState:
        """The state of a new agent object: disconnected, continuing `session_id` if any."""
        return cls(session_id=session_id, session_started=session_id is not None)

    # ----- questions ----------------------------------------------------------------------

    @property
    def in_turn(self) -> bool:
        return self.phase is Phase.IN_TURN

    @property
    def connected(self) -> bool:
        return self.phase is not Phase.DISCONNECTED

    def can_refresh_live(self) -> bool:
        """Whether changed memory may go to the running process instead of a new one."""
        return self.connected and not self.needs_new_process

    @property
    def recording_session_id(self) -> str | None:
        """The session id to store messages under: the current one, else the pending new one."""
        return self.session_id or self.pending_session_id

    # ----- transitions --------------------------------------------------------------------

    def process_starting(self, resume: str | None) -> str | None:
        """A new process is being started on `resume`, or on a new session whose id is returned."""
        self.pending_session_id = None if resume else str(uuid.uuid4())
        return self.pending_session_id

    def process_ready(self) -> None:
        """A process now runs (new, or the same one given a new prompt live). What its prompt
        shows is the turn planner's record (`TurnPlanner`, `PromptRefreshPolicy.is_current`)."""
        if self.phase is Phase.DISCONNECTED:
            self.phase = Phase.READY
            self.needs_new_process = False

    def disconnected(self) -> None:
        self.phase = Phase.DISCONNECTED

    def turn_started(self) -> str:
        """A prompt is being sent; returns the turn id its messages are stored under. A prompt
        sent while a turn is open (streaming input) starts a new turn id on the same process."""
        if self.phase is Phase.DISCONNECTED:
            raise SessionStateError("A turn cannot start without a connected process.")
        self.phase = Phase.IN_TURN
        self.turn_id = uuid.uuid4().hex
        return self.turn_id

    def turn_finished(self, result_session_id: str | None) -> bool:
        """The turn's result arrived; True when it names a session to remember from now on."""
        if self.phase is Phase.IN_TURN:
            self.phase = Phase.READY
        if not result_session_id:
            return False
        if result_session_id == self.session_id and self.session_started:
            return False
        self.session_id = result_session_id
        self.session_started = True
        return True

    def session_seeded(self, session_id: str | None) -> None:
        """A new session was written to the store with the in-context messages (None: nothing
        to carry, the next process starts empty)."""
        self.session_id = session_id
        self.session_started = session_id is not None

    def session_lost(self) -> None:
        """The session cannot be resumed from here (another directory, a lost transcript)."""
        self.session_id = None
        self.session_started = False

    def compacted(self) -> None:
        """A new summary: the next turn needs a new session, and so a new process."""
        self.session_lost()
        self.needs_new_process = True
