"""The Agent College session: identities, the shared block, read-only roles and the audit trail."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from backends import backend_environ
from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import ConfigurationError, MemoryManager, ReadOnlyBlockError, Settings
from memory_agent.integrations.college import (
    COLLEGE_BLOCK_LABEL,
    COLLEGE_BLOCK_LIMIT,
    CollegeSession,
    college_agent_id,
    resolve_instance_id,
)

LABEL = COLLEGE_BLOCK_LABEL

pytestmark = pytest.mark.usefixtures("backend")


def _settings(directory: Path, **extra: str) -> Settings:
    return Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(directory), **extra}), env_file=None
    )


@pytest.fixture
def college(settings: Settings) -> Iterator[CollegeSession]:
    with CollegeSession.open(instance_id="c1", settings=settings) as session:
        yield session


def test_instance_id_comes_from_the_argument_then_the_setting_then_is_generated(
    tmp_path: Path,
) -> None:
    configured = _settings(tmp_path, AGENT_INSTANCE_ID="from-env")
    assert resolve_instance_id("given", configured) == "given"
    assert resolve_instance_id(None, configured) == "from-env"
    generated = resolve_instance_id(None, _settings(tmp_path))
    assert generated.startswith("college-") and generated != resolve_instance_id(
        None, _settings(tmp_path)
    )
    with CollegeSession.open(storage_dir=tmp_path, settings=configured) as session:
        assert session.instance_id == "from-env"
        assert session.critic_id == "from-env_critic"


@pytest.mark.parametrize("bad", ["../up", "a b", "x" * 65, "-lead", "ünï", "a;DROP"])
def test_unusable_instance_ids_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ConfigurationError, match="instance id"):
        CollegeSession.open(instance_id=bad, settings=_settings(tmp_path))


def test_unknown_roles_are_refused(college: CollegeSession) -> None:
    with pytest.raises(ConfigurationError, match="critic, professor, scribe"):
        college.agent_id("dean")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        college_agent_id("c1", "janitor")  # type: ignore[arg-type]


def test_open_creates_three_agents_sharing_one_block(college: CollegeSession) -> None:
    memory = college.memory
    assert college.agent_ids == {
        "critic": "c1_critic",
        "professor": "c1_professor",
        "scribe": "c1_scribe",
    }
    assert {"c1_critic", "c1_professor", "c1_scribe"} <= set(memory.list_agents())
    blocks = [memory.get_agent_block(agent, LABEL) for agent in college.agent_ids.values()]
    assert {b.block_id for b in blocks} == {college.block_id}
    block = blocks[0]
    assert block.is_shared and block.limit == COLLEGE_BLOCK_LIMIT and block.value == ""
    assert block.description and "Critic" in block.description
    assert not any(b.read_only for b in blocks)


def test_one_agents_edit_is_in_the_others_rendered_memory(college: CollegeSession) -> None:
    memory = college.memory
    memory.core_memory_append(
        LABEL, "Critic: step 3 assumes a sorted input.", agent_id=college.critic_id
    )
    for role in ("professor", "scribe"):
        prompt = memory.get_system_prompt_addition(agent_id=college.agent_id(role))
        assert "Critic: step 3 assumes a sorted input." in prompt
    assert college.shared_state() == "Critic: step 3 assumes a sorted input."


def test_reopening_from_another_manager_joins_the_same_block_quietly(
    college: CollegeSession, settings: Settings
) -> None:
    attaches_before = [e for e in college.memory.journal(limit=1000) if e.action == "attach_block"]
    with MemoryManager(agent_id="c1_professor", settings=settings) as other:
        again = CollegeSession.open(other, instance_id="c1")
        assert again.block_id == college.block_id
        assert not again.owns_memory
    attaches_after = [e for e in college.memory.journal(limit=1000) if e.action == "attach_block"]
    assert len(attaches_after) == len(attaches_before)


def test_two_instances_in_one_storage_dir_do_not_share_state(college: CollegeSession) -> None:
    other = CollegeSession.open(college.memory, instance_id="c2")
    assert other.block_id != college.block_id
    college.memory.core_memory_append(LABEL, "Only in c1.", agent_id=college.critic_id)
    assert "Only in c1." not in other.shared_state()
    assert "Only in c1." not in college.memory.get_system_prompt_addition(
        agent_id=other.professor_id
    )


def test_concurrent_openers_agree_on_one_block(tmp_path: Path) -> None:
    """Each thread has its own manager (its own SQLite connection), like separate processes."""
    settings = _settings(tmp_path)
    MemoryManager(agent_id="bootstrap", settings=settings).close()
    start = threading.Barrier(6)
    found: list[str] = []

    def open_college() -> None:
        with MemoryManager(agent_id="bootstrap", settings=settings) as memory:
            start.wait()
            found.append(CollegeSession.open(memory, instance_id="race").block_id)

    threads = [threading.Thread(target=open_college) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(found) == 6 and len(set(found)) == 1
    with MemoryManager(agent_id="bootstrap", settings=settings) as memory:
        with memory.db.reading() as conn:
            count = conn.execute(
                "SELECT COUNT(*) FROM blocks WHERE label = ?", (LABEL,)
            ).fetchone()[0]
    assert count == 1


def test_a_read_only_role_sees_the_block_but_cannot_edit_it(settings: Settings) -> None:
    with CollegeSession.open(
        instance_id="ro", settings=settings, read_only_roles=["scribe"]
    ) as college:
        memory = college.memory
        assert college.shared_block("scribe").read_only
        assert not college.shared_block("critic").read_only
        memory.core_memory_append(LABEL, "Critic: finding one.", agent_id=college.critic_id)
        memory.memory_insert(LABEL, "Professor: decision one.", agent_id=college.professor_id)
        version = college.shared_block().version

        rendered = memory.get_system_prompt_addition(agent_id=college.scribe_id)
        assert "Critic: finding one." in rendered and "read_only=true" in rendered
        for tool, arguments in [
            ("core_memory_append", {"label": LABEL, "content": "Scribe: sneaky"}),
            ("memory_insert", {"label": LABEL, "text": "Scribe: sneaky"}),
            ("core_memory_replace", {"label": LABEL, "old_content": "one", "new_content": "two"}),
            ("memory_rethink", {"label": LABEL, "new_value": "Scribe: everything else is gone"}),
        ]:
            outcome = memory.execute_tool(tool, arguments, agent_id=college.scribe_id)
            assert outcome.is_error and "read-only" in outcome.text
        with pytest.raises(ReadOnlyBlockError):
            memory.core_memory_append(LABEL, "Scribe: sneaky", agent_id=college.scribe_id)
        assert college.shared_block().version == version
        assert "sneaky" not in college.shared_state()

        # Reopening with no read-only roles lets the Scribe write again.
        reopened = CollegeSession.open(memory, instance_id="ro")
        assert not reopened.shared_block("scribe").read_only
        memory.core_memory_append(LABEL, "Scribe: summary.", agent_id=college.scribe_id)
        assert college.shared_state().endswith("Scribe: summary.")


def test_history_and_journal_name_the_author_of_every_change(college: CollegeSession) -> None:
    memory = college.memory
    memory.core_memory_append(LABEL, "Critic: a gap in the proof.", agent_id=college.critic_id)
    memory.memory_insert(LABEL, "Professor: close it by induction.", agent_id=college.professor_id)
    memory.get_system_prompt_addition(agent_id=college.scribe_id)
    memory.memory_rethink(
        LABEL,
        "Scribe: gap found, closed by induction.",
        reasoning="condense",
        agent_id=college.scribe_id,
    )

    history = memory.block_history(LABEL, agent_id=college.professor_id)
    assert [(v.version, v.action, v.agent_id) for v in history] == [
        (1, "create", "c1_critic"),
        (2, "core_memory_append", "c1_critic"),
        (3, "memory_insert", "c1_professor"),
        (4, "memory_rethink", "c1_scribe"),
    ]
    assert history[2].value == "Critic: a gap in the proof.\nProfessor: close it by induction."

    edits = [
        e
        for e in reversed(memory.journal(limit=1000))
        if e.target_id == college.block_id and e.action != "attach_block"
    ]
    assert [(e.agent_id, e.action) for e in edits] == [
        ("c1_critic", "create_block"),
        ("c1_critic", "core_memory_append"),
        ("c1_professor", "memory_insert"),
        ("c1_scribe", "memory_rethink"),
    ]
    assert edits[3].old_value == history[2].value and edits[3].new_value == history[3].value
    assert edits[3].detail["reasoning"] == "condense"
    # Filtering the journal by agent gives that agent's own changes only.
    by_professor = memory.journal(agent_id=college.professor_id, limit=1000)
    assert [e.action for e in by_professor if e.target_id == college.block_id] == ["memory_insert"]


def test_a_refused_write_leaves_no_trace_in_history_or_journal(settings: Settings) -> None:
    with CollegeSession.open(
        instance_id="rf", settings=settings, read_only_roles=["critic"], block_limit=40
    ) as college:
        memory = college.memory
        entries, versions = len(memory.journal(limit=1000)), len(memory.block_history(LABEL))
        memory.execute_tool(
            "core_memory_append", {"label": LABEL, "content": "no"}, agent_id=college.critic_id
        )
        memory.execute_tool(
            "core_memory_append", {"label": LABEL, "content": "x" * 41}, agent_id=college.scribe_id
        )
        assert len(memory.journal(limit=1000)) == entries
        assert len(memory.block_history(LABEL)) == versions


def test_build_agent_puts_the_role_prompt_before_the_callers_own(college: CollegeSession) -> None:
    options = ClaudeAgentOptions(system_prompt="Be brief.", tools=[])
    professor = college.build_agent("professor", options)
    assert professor.agent_id == "c1_professor" and professor.memory is college.memory
    prompt = professor.options.system_prompt
    assert isinstance(prompt, str)
    assert prompt.startswith(college.system_prompt("professor")) and prompt.endswith("Be brief.")
    assert "You are the Professor." in prompt and LABEL in prompt
    assert options.system_prompt == "Be brief."  # the caller's options are not changed

    preset = college.build_agent(
        "critic",
        ClaudeAgentOptions(
            system_prompt={"type": "preset", "preset": "claude_code", "append": "Cite sources."}
        ),
    )
    assert preset.options.system_prompt["append"].endswith("Cite sources.")  # type: ignore[index]
    assert "You are the Critic." in preset.options.system_prompt["append"]  # type: ignore[index]
    assert "You are the Scribe." in college.build_agent("scribe").options.system_prompt  # type: ignore[operator]
