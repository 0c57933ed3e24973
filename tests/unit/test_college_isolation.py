"""Through its tools, an agent reaches only the blocks attached to it, whatever it sends.

The model chooses every tool argument, so each case here is a crafted input from the Professor
aimed at the Critic's private block (or at a block attached to nobody). Each must come back as an
error result, leave the target unchanged, and not leak the target's value in the error text.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from memory_agent import MemoryManager, Settings
from memory_agent.integrations.college import COLLEGE_BLOCK_LABEL, CollegeSession

SECRET = "Critic's private notes: the exam answers are 42."
ORPHAN = "A block attached to nobody."
TOOLS = ("core_memory_append", "memory_insert", "core_memory_replace", "memory_rethink")

_INSTANCES = itertools.count(1)


@pytest.fixture(scope="module")
def store_settings(module_store: dict[str, str]) -> Settings:
    """One store per backend for the module (`module_backend`). Why: the 131 cases below that are
    refused or only read assert that nothing changed around each call; a store per case was most
    of their cost (a database copied and dropped per case on PostgreSQL)."""
    return Settings.from_env(module_store, env_file=None)


def _open_college(settings: Settings) -> CollegeSession:
    """A college of its own in the module's store: the Critic's private block and a block attached
    to nobody."""
    session = CollegeSession.open(instance_id=f"iso{next(_INSTANCES)}", settings=settings)
    memory = session.memory
    memory.create_block("critic_notes", SECRET, agent_id=session.critic_id)
    orphan = memory.create_block("orphan", ORPHAN, agent_id=session.scribe_id)
    memory.detach_block(session.scribe_id, orphan.block_id)
    return session


@pytest.fixture(scope="module")
def college(store_settings: Settings) -> Iterator[CollegeSession]:
    """The college the cases that change nothing share (each asserts that it changed nothing)."""
    with _open_college(store_settings) as session:
        yield session


@pytest.fixture
def own_college(store_settings: Settings) -> Iterator[CollegeSession]:
    """A college for one test that changes it."""
    with _open_college(store_settings) as session:
        yield session


def _arguments(tool: str, label: Any) -> dict[str, Any]:
    return {
        "core_memory_append": {"label": label, "content": "tampered"},
        "memory_insert": {"label": label, "text": "tampered", "insert_after": "private"},
        "core_memory_replace": {"label": label, "old_content": "42", "new_content": "tampered"},
        "memory_rethink": {"label": label, "new_value": "tampered"},
    }[tool]


def _snapshot(memory: MemoryManager) -> list[tuple[str, str, int]]:
    with memory.db.reading() as conn:
        rows = conn.execute(
            "SELECT block_id, value, version FROM blocks ORDER BY block_id"
        ).fetchall()
    return [tuple(row) for row in rows]


def _journal_size(memory: MemoryManager) -> int:
    return len(memory.journal(limit=100_000))


def _assert_refused(college: CollegeSession, tool: str, arguments: dict[str, Any]) -> str:
    memory = college.memory
    before, entries = _snapshot(memory), _journal_size(memory)
    outcome = memory.execute_tool(tool, arguments, agent_id=college.professor_id)
    assert outcome.is_error, outcome.text
    assert _snapshot(memory) == before and _journal_size(memory) == entries
    assert "exam answers" not in outcome.text and ORPHAN not in outcome.text
    assert memory.get_agent_block(college.critic_id, "critic_notes").value == SECRET
    return outcome.text


def _orphan_id(college: CollegeSession) -> str:
    """A block attached to nobody (each college of the module made one)."""
    with college.memory.db.reading() as conn:
        return str(conn.execute("SELECT block_id FROM blocks WHERE label = 'orphan'").fetchone()[0])


def _critic_notes_id(college: CollegeSession) -> str:
    return college.memory.get_agent_block(college.critic_id, "critic_notes").block_id


HOSTILE_LABELS = [
    "critic_notes",  # another agent's label
    "iso_critic",  # another agent's id
    "orphan",  # a block attached to nobody
    "../critic_notes",
    "iso_critic/critic_notes",
    "iso_critic.critic_notes",
    "/etc/passwd",
    "critic_notes' OR '1'='1",
    "x'; DROP TABLE blocks; --",
    "critic_notes%",
    "critic_%",
    "*",
    "critic_notes\n",
    " critic_notes",
    "critic_notes\x00",
    "",
    "critic_nоtes",  # Cyrillic 'о'
    "ｃｒｉｔｉｃ_ｎｏｔｅｓ",  # fullwidth
    "critic_notes\u200b",  # zero-width space
    "a" * 10_000,
    "critic_notes" + "_" * 60,
]


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("label", HOSTILE_LABELS, ids=lambda label: repr(label)[:30])
def test_hostile_labels_cannot_reach_other_blocks(
    college: CollegeSession, tool: str, label: str
) -> None:
    _assert_refused(college, tool, _arguments(tool, label))


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("target", ["critic_notes", "orphan"])
def test_a_block_id_sent_as_the_label_reaches_nothing(
    college: CollegeSession, tool: str, target: str
) -> None:
    block_id = _critic_notes_id(college) if target == "critic_notes" else _orphan_id(college)
    text = _assert_refused(college, tool, _arguments(tool, block_id))
    assert "No block" in text


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(
    "extra",
    [
        {"agent_id": "iso_critic"},
        {"block_id": "BLOCK"},
        {"label_override": "critic_notes"},
        {"acting_agent_id": "iso_critic"},
        {"__class__": "x"},
    ],
)
def test_extra_arguments_are_refused_not_obeyed(
    college: CollegeSession, tool: str, extra: dict[str, str]
) -> None:
    arguments = {**_arguments(tool, "critic_notes"), **extra}
    if arguments.get("block_id") == "BLOCK":
        arguments["block_id"] = _critic_notes_id(college)
    text = _assert_refused(college, tool, arguments)
    assert "does not take" in text
    # The same extra argument on the agent's own block is refused too: nothing is silently dropped.
    own = {**_arguments(tool, "human"), **{k: v for k, v in arguments.items() if k in extra}}
    _assert_refused(college, tool, own)


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("label", [["critic_notes"], {"label": "critic_notes"}, 7, True])
def test_labels_that_are_not_strings_are_refused(
    college: CollegeSession, tool: str, label: Any
) -> None:
    _assert_refused(college, tool, _arguments(tool, label))


def test_a_label_both_agents_have_edits_only_the_callers_block(own_college: CollegeSession) -> None:
    memory = own_college.memory
    critic_human = memory.get_agent_block(own_college.critic_id, "human")
    outcome = memory.execute_tool(
        "core_memory_append",
        {"label": "human", "content": "Likes proofs."},
        agent_id=own_college.professor_id,
    )
    assert not outcome.is_error
    assert memory.get_agent_block(own_college.professor_id, "human").value.endswith("Likes proofs.")
    assert memory.get_agent_block(own_college.critic_id, "human") == critic_human


def test_errors_list_only_the_callers_own_blocks(college: CollegeSession) -> None:
    outcome = college.memory.execute_tool(
        "core_memory_append",
        {"label": "critic_notes", "content": "x"},
        agent_id=college.professor_id,
    )
    assert outcome.is_error and "critic_notes" in outcome.text  # the label it asked for
    listed = outcome.text.split("Attached blocks:")[1]
    assert COLLEGE_BLOCK_LABEL in listed and "critic_notes" not in listed and "orphan" not in listed


def test_the_rendered_memory_holds_only_attached_blocks(college: CollegeSession) -> None:
    rendered = college.memory.get_system_prompt_addition(agent_id=college.professor_id)
    assert "exam answers" not in rendered and ORPHAN not in rendered
    assert "<critic_notes>" not in rendered and f"<{COLLEGE_BLOCK_LABEL}>" in rendered


def test_a_detached_agent_loses_access_to_the_shared_block(own_college: CollegeSession) -> None:
    memory = own_college.memory
    memory.core_memory_append(
        COLLEGE_BLOCK_LABEL, "Critic: before.", agent_id=own_college.critic_id
    )
    memory.detach_block(own_college.scribe_id, own_college.block_id)
    for tool in TOOLS:
        outcome = memory.execute_tool(
            tool, _arguments(tool, COLLEGE_BLOCK_LABEL), agent_id=own_college.scribe_id
        )
        assert outcome.is_error and "Critic: before." not in outcome.text
    assert own_college.shared_state() == "Critic: before."
    assert "Critic: before." not in memory.get_system_prompt_addition(
        agent_id=own_college.scribe_id
    )


def test_unknown_tools_and_unknown_agents_are_errors(college: CollegeSession) -> None:
    memory = college.memory
    before = _snapshot(memory)
    assert memory.execute_tool(
        "core_memory_read", {"label": "critic_notes"}, agent_id=college.professor_id
    ).is_error
    outcome = memory.execute_tool(
        "core_memory_append", {"label": "critic_notes", "content": "x"}, agent_id="nobody"
    )
    assert outcome.is_error and "exam answers" not in outcome.text
    assert _snapshot(memory) == before
