"""Forgetting keeps everything else intact; the journal's hash chain shows tampering (issue 26,
items 2 and 5).

Both backends. The tamper test edits the journal with raw SQL, bypassing the database's append-only
trigger (which only a test may do), and `doctor` names the edited entry.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory_agent import MemoryAgentError, MemoryManager
from memory_agent.store import journal
from memory_agent.store.backend import open_store as open_database
from memory_agent.store.database import utc_now
from memory_agent.store.snapshot import store_snapshot

pytestmark = pytest.mark.usefixtures("backend")

Run = Callable[..., Result]
Open = Callable[[str], MemoryManager]


def _raw_sql(memory: MemoryManager, *statements: str) -> None:
    """Run statements as the database's owner would, the journal's trigger switched off (tests
    only)."""
    url = os.environ.get("MEMORY_DATABASE_URL")
    if url:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER TABLE journal DISABLE TRIGGER journal_no_update")
            for statement in statements:
                conn.execute(statement)
            conn.execute("ALTER TABLE journal ENABLE TRIGGER journal_no_update")
        return
    with memory.database.transaction() as conn:
        triggers = [
            row[0]
            for row in conn.execute(
                "SELECT sql FROM sqlite_master WHERE name IN ('journal_no_update', "
                "'journal_no_delete')"
            )
        ]
        conn.execute("DROP TRIGGER journal_no_update")
        conn.execute("DROP TRIGGER journal_no_delete")
        for statement in statements:
            conn.execute(statement)
        for trigger in triggers:
            conn.execute(trigger)


def _some_memory(memory: MemoryManager) -> dict[str, Any]:
    made = {
        "keep": memory.archival_memory_insert("Keeper passage about tide tables", tags=["sea"]),
        "also": memory.archival_memory_insert("Another passage about lighthouse keepers"),
        "drop": memory.archival_memory_insert("The locker combination is 4451-drop"),
    }
    memory.core_memory_append("human", "Enjoys long walks")
    memory.core_memory_append("persona", "Speaks calmly")
    memory.create_block("secret", "Locker note")
    memory.core_memory_append("secret", "more locker notes")
    memory.store_message("user", "Hello about the tide tables")
    made["message"] = memory.store_message("user", "A message to drop entirely").message_id  # type: ignore[union-attr]  # stored
    memory.store_message("assistant", "Replying about lighthouses")
    return made


def _entries(memory: MemoryManager) -> dict[int, journal.JournalEntry]:
    return {e.entry_id: e for e in memory.journal(limit=10_000)}


def test_forgetting_leaves_everything_else_intact(initialised: Run, open_store: Open) -> None:
    with open_store("ada") as memory:
        made = _some_memory(memory)
        blocks = {
            b.label: (b.value, memory.block_history(b.label))
            for b in memory.list_blocks()
            if b.label != "secret"
        }
        messages = [
            (m.message_id, m.text) for m in memory.all_messages() if m.message_id != made["message"]
        ]
        before = _entries(memory)

        passage = memory.forget_passage(made["drop"])
        message = memory.forget_message(made["message"])
        block = memory.forget_block("secret")

        assert (passage.passages, message.messages, block.blocks) == (1, 1, 1)
        for mode in ("keyword", "vector", "hybrid", "scored"):
            hits = memory.archival_memory_search("tide tables", mode=mode)  # type: ignore[arg-type]  # each mode
            assert hits and hits[0].passage.passage_id == made["keep"], mode
        assert (
            memory.archival_memory_search("lighthouse keepers", mode="vector")[0].passage.passage_id
            == made["also"]
        )
        assert {
            b.label: (b.value, memory.block_history(b.label)) for b in memory.list_blocks()
        } == blocks
        assert [(m.message_id, m.text) for m in memory.all_messages()] == messages
        assert memory.search_messages("lighthouses")
        after = _entries(memory)
        redacted = {i for i, e in after.items() if i in before and e != before[i]}
        assert redacted and all(
            after[i].old_value is None and after[i].new_value is None for i in redacted
        )
        untouched = {i: e for i, e in before.items() if i not in redacted}
        assert {i: after[i] for i in untouched} == untouched
        assert [e.action for i, e in sorted(after.items()) if i not in before] == ["forget"] * 3
        with memory.database.reading() as conn:
            assert journal.verify_chain(conn).ok
    doctor = initialised("--json", "doctor")
    assert doctor.exit_code == 0, doctor.output
    assert json.loads(doctor.stdout)["journal_chain"]["first_broken_entry"] is None


def test_doctor_names_the_first_edited_entry(initialised: Run, open_store: Open) -> None:
    with open_store("ada") as memory:
        _some_memory(memory)
        entries = sorted(_entries(memory))
        victim = entries[len(entries) // 2]
        _raw_sql(
            memory, f"UPDATE journal SET new_value = 'rewritten history' WHERE entry_id = {victim}"
        )

    result = initialised("--json", "doctor")

    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert found["journal_chain"]["first_broken_entry"] == victim
    chain = next(c for c in found["checks"] if c["name"] == "journal chain")
    assert chain["status"] == "fail" and f"entry {victim}" in chain["detail"]
    assert f"broken at entry {victim}" in initialised("doctor").stdout


def test_a_removed_entry_breaks_the_chain_at_the_next_one(
    initialised: Run, open_store: Open
) -> None:
    with open_store("ada") as memory:
        _some_memory(memory)
        entries = sorted(_entries(memory))
        _raw_sql(memory, f"DELETE FROM journal WHERE entry_id = {entries[3]}")
        with memory.database.reading() as conn:
            report = journal.verify_chain(conn)
    assert report.first_broken == entries[4] and "link" in report.reason


def test_values_erased_by_hand_to_look_forgotten_are_seen(
    initialised: Run, open_store: Open
) -> None:
    """A forgotten mark carries no values to check, so one set by hand (not by a forget, whose
    record counts what it redacted) must not pass; genuine forgets, an agent's after a passage's,
    still
    do."""
    with open_store("ada") as memory:
        made = _some_memory(memory)
        memory.forget_passage(made["drop"])
        memory.ensure_agent("leaver")
        memory.archival_memory_insert("A passage of the leaver's", agent_id="leaver")
        memory.forget_passage(
            memory.archival_memory_list(agent_id="leaver")[0].passage_id, agent_id="leaver"
        )
        memory.forget_agent("leaver")
        with memory.database.reading() as conn:
            assert journal.verify_chain(conn).ok
        victim = next(
            e.entry_id
            for e in sorted(_entries(memory).values(), key=lambda e: e.entry_id)
            if e.action == "core_memory_append" and e.agent_id == "ada"
        )
        _raw_sql(
            memory,
            "UPDATE journal SET label = NULL, old_value = NULL, new_value = NULL, detail = '{}',"
            f" salt = NULL, forgotten = 1 WHERE entry_id = {victim}",
        )

    result = initialised("--json", "doctor")

    assert result.exit_code == 1, result.output
    assert "outside forgetting" in json.dumps(json.loads(result.stdout)["checks"])


def test_removing_the_newest_entries_is_seen(
    initialised: Run, open_store: Open, backend: str
) -> None:
    if backend == "postgres":
        pytest.skip(
            "SQLite's AUTOINCREMENT counter names removed newest entries; PostgreSQL's identity "
            "sequence "
            "also keeps the ids of rolled-back writes, so a gap there proves nothing"
        )
    with open_store("ada") as memory:
        _some_memory(memory)
        entries = sorted(_entries(memory))
        _raw_sql(memory, f"DELETE FROM journal WHERE entry_id >= {entries[-2]}")

    result = initialised("--json", "doctor")

    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["journal_chain"]["first_broken_entry"] == entries[-2]
    assert "removed from the end" in initialised("doctor").stdout


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE journal SET new_value = 'x' WHERE entry_id = {id}",
        "UPDATE journal SET action = 'other' WHERE entry_id = {id}",
        "UPDATE journal SET label = NULL, old_value = NULL, new_value = NULL, detail = '{{}}', "
        "salt = NULL,"
        " forgotten = 1, created_at = 'then' WHERE entry_id = {id}",
        "DELETE FROM journal WHERE entry_id = {id}",
    ],
)
def test_the_database_refuses_every_journal_change_but_forgettings(
    open_store: Open, statement: str
) -> None:
    with open_store("ada") as memory:
        memory.core_memory_append("human", "A fact")
        entry = memory.journal(limit=1)[0].entry_id
        with (
            pytest.raises(MemoryAgentError, match="append-only"),
            memory.database.transaction() as conn,
        ):
            conn.execute(statement.format(id=entry))
        with memory.database.transaction() as conn:
            assert journal.redact(conn, [entry]) == 1
        assert memory.journal(limit=1)[0].new_value is None
        with memory.database.reading() as conn:  # a redaction no forget record counts shows
            assert "outside forgetting" in journal.verify_chain(conn).reason
        with (
            memory.database.transaction() as conn
        ):  # as forgetting writes it: the record of what it redacted
            journal.record(
                conn,
                agent_id="ada",
                action="forget",
                target_type="passage",
                target_id="p",
                created_at=utc_now(),
                detail={"journal_entries_redacted": 1},
            )
        with memory.database.reading() as conn:
            assert journal.verify_chain(conn).ok


def test_imported_entries_are_chained_on_arrival(
    initialised: Run, open_store: Open, tmp_path: Path, storage: Path
) -> None:
    with open_store("ada") as memory:
        _some_memory(memory)
    exported = tmp_path / "ada.json"
    assert initialised("export", "--output", str(exported)).exit_code == 0
    target = tmp_path / "other"
    result = initialised("import", str(exported), storage_dir=target)
    assert result.exit_code == 0, result.output
    doctor = initialised("--json", "doctor", storage_dir=target)
    chain = json.loads(doctor.stdout)["journal_chain"]
    assert chain["ok"] and chain["entries"] > 0


def test_cli_forget_purge_asks_then_forgets_each_kind(initialised: Run, open_store: Open) -> None:
    with open_store("ada") as memory:
        made = _some_memory(memory)
    refused = initialised("forget", "--purge", made["drop"], input="n\n")
    assert refused.exit_code != 0
    with open_store("ada") as memory:
        assert memory.archival_memory_get(made["drop"]) is not None
    done = initialised("--json", "forget", "--purge", made["drop"], input="y\n")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["passages"] == 1
    assert (
        initialised("forget", "--purge", "--yes", "--message", str(made["message"])).exit_code == 0
    )
    assert initialised("forget", "--purge", "--yes", "--block", "secret").exit_code == 0
    usage = initialised("forget", "--block", "human")
    assert usage.exit_code == 2 and "--purge" in usage.output
    both = initialised("forget", "--purge", "--yes", made["keep"], "--block", "human")
    assert both.exit_code == 2
    with open_store("ada") as memory:
        assert memory.archival_memory_get(made["keep"]) is not None
        assert [e.action for e in memory.journal(limit=3)] == ["forget"] * 3


@pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
def test_cli_forget_under_an_older_open_transaction_exits_1_and_names_it(
    initialised: Run, open_store: Open
) -> None:
    """A forget whose bytes a transaction older than it still holds (a long REPEATABLE READ
    report here) is not reported as done: exit status 1, the holder named, and how to finish."""
    import psycopg

    with open_store("ada") as memory:
        made = _some_memory(memory)
    held = psycopg.connect(os.environ["MEMORY_DATABASE_URL"], application_name="nightly-report")
    held.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    held.execute("SELECT 1").fetchone()
    pid = held.info.backend_pid
    quick = {"MEMORY_FORGET_WAIT_SECONDS": "0.2"}
    try:
        said = initialised("forget", "--purge", "--yes", made["drop"], env=quick)
        data = initialised("--json", "forget", "--purge", "--yes", made["also"], env=quick)
    finally:
        held.close()
    text = " ".join(said.output.split())  # the console wraps long lines
    assert said.exit_code == 1 and "(not finished: bytes may remain" in text, said.output
    assert f"pid {pid} (application 'nightly-report'" in text
    assert "run 'memory-agent doctor --repair' to finish" in text
    report = json.loads(data.stdout)
    assert data.exit_code == 1 and report["complete"] is False and report["passages"] == 1
    assert initialised("doctor").exit_code == 1
    repaired = initialised("--json", "doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert initialised("doctor").exit_code == 0


texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["", " ", "passage-", "../etc", "human\x00", "'; DROP TABLE x;--", "a" * 300, "\ud800"]
    ),
)


@hypothesis_settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(["passage", "message", "block", "agent"]),
    text=texts,
    number=st.one_of(st.integers(), st.integers(min_value=2**63, max_value=2**70)),
)
def test_hostile_forgets_raise_only_our_errors_and_change_nothing(
    open_store: Open, storage: Path, kind: str, text: str, number: int
) -> None:
    with open_store("ada") as memory:
        if not memory.list_blocks():
            _some_memory(memory)
        watcher = open_database(storage, os.environ.get("MEMORY_DATABASE_URL"))
        try:
            before = store_snapshot(watcher)
            with pytest.raises(MemoryAgentError):
                if kind == "passage":
                    memory.forget_passage(text)
                elif kind == "message":
                    memory.forget_message(
                        number if number > 10_000 or number < 0 else number + 10_000
                    )
                elif kind == "block":
                    memory.forget_block(
                        text if text not in ("human", "persona", "secret") else text + "/x"
                    )
                else:
                    memory.forget_agent(text if text != "ada" else "ada-other")
            assert store_snapshot(watcher) == before
        finally:
            watcher.close()


def test_concurrent_writers_never_fork_the_chain(open_store: Open) -> None:
    """Four managers, each with its own connection (as four processes would have), write at once."""
    import threading

    with open_store("ada") as memory:
        memory.create_block("shared_notes", "", is_shared=True)
    errors: list[BaseException] = []

    def write(number: int) -> None:
        try:
            with open_store(f"writer-{number}") as writer:
                writer.join_shared_block("shared_notes")
                for edit in range(15):
                    writer.core_memory_append("shared_notes", f"w{number} e{edit}")
                    writer.archival_memory_insert(f"writer {number} passage {edit}")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with open_store("ada") as memory, memory.database.reading() as conn:
        report = journal.verify_chain(conn)
        hashes = [
            row[0]
            for row in conn.execute("SELECT prev_hash FROM journal WHERE prev_hash IS NOT NULL")
        ]
    assert report.ok and report.entries >= 4 * 30
    assert len(hashes) == len(set(hashes))  # no two entries link to the same one
