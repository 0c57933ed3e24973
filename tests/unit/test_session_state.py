"""The agent's session lifecycle on its own: phases, the SDK session and pending work."""

from __future__ import annotations

import pytest

from memory_agent.agent.session_state import Phase, SessionState, SessionStateError


def test_a_new_agent_resumes_its_stored_session_or_starts_without_one() -> None:
    assert SessionState.resuming("s-1") == SessionState(session_id="s-1", session_started=True)
    fresh = SessionState.resuming(None)
    assert (fresh.phase, fresh.session_id, fresh.session_started) == (
        Phase.DISCONNECTED,
        None,
        False,
    )


def test_a_turn_runs_from_ready_to_in_turn_and_back() -> None:
    state = SessionState.resuming(None)
    with pytest.raises(SessionStateError):
        state.turn_started()
    assert state.process_starting(None) is not None  # a new session gets its id up front
    state.process_ready()
    assert state.phase is Phase.READY and state.connected
    first = state.turn_started()
    assert state.in_turn and state.turn_id == first
    assert state.recording_session_id == state.pending_session_id
    assert state.turn_finished("s-1") is True  # the first result names the session: remember it
    assert (state.phase, state.session_id, state.session_started) == (Phase.READY, "s-1", True)
    state.turn_started()
    assert state.turn_finished("s-1") is False  # nothing new to remember
    assert state.turn_started() != first


def test_a_resumed_process_gets_no_new_session_id() -> None:
    state = SessionState.resuming("s-1")
    assert state.process_starting("s-1") is None and state.recording_session_id == "s-1"


def test_a_compaction_drops_the_session_and_forbids_a_live_refresh() -> None:
    state = SessionState.resuming("s-1")
    state.process_ready()
    assert state.can_refresh_live()
    state.compacted()
    assert (state.session_id, state.session_started, state.can_refresh_live()) == (
        None,
        False,
        False,
    )
    state.disconnected()
    assert state.phase is Phase.DISCONNECTED and not state.can_refresh_live()
    state.process_ready()  # the new process clears the need for one
    assert state.can_refresh_live()


def test_a_live_refresh_keeps_the_phase() -> None:
    state = SessionState.resuming(None)
    state.process_ready()
    state.turn_started()
    state.process_ready()
    assert state.in_turn and state.can_refresh_live()


def test_a_session_that_cannot_be_resumed_is_replaced_by_a_seeded_one() -> None:
    state = SessionState.resuming("s-old")
    state.session_lost()
    assert (state.session_id, state.session_started) == (None, False)
    state.session_seeded("s-seeded")
    assert (state.session_id, state.session_started) == ("s-seeded", True)
    state.session_seeded(None)  # nothing in context: the next process starts empty
    assert (state.session_id, state.session_started) == (None, False)


def test_disconnecting_mid_turn_ends_the_turn_phase() -> None:
    state = SessionState.resuming(None)
    state.process_ready()
    state.turn_started()
    state.disconnected()
    assert state.phase is Phase.DISCONNECTED and not state.in_turn and not state.connected
