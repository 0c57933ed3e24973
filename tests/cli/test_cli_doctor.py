"""`doctor`: a healthy storage dir passes; broken indexes are found, reported and repaired."""

from __future__ import annotations

import json
from collections.abc import Callable

from click.testing import Result

from memory_agent import MemoryManager

Run = Callable[..., Result]
Open = Callable[[str], MemoryManager]


def _checks(result: Result) -> dict[str, str]:
    return {check["name"]: check["status"] for check in json.loads(result.stdout)["checks"]}


def test_a_healthy_storage_dir_passes(initialised: Run, open_store: Open) -> None:
    with open_store("ada") as memory:
        memory.store_message("user", "hello there")
    result = initialised("doctor")
    assert result.exit_code == 0, result.output
    assert "All checks passed." in result.stdout and "messages_fts" in result.stdout
    checks = _checks(initialised("--json", "doctor"))
    assert set(checks.values()) == {"ok"}
    assert {"sqlite integrity", "foreign keys", "messages_fts index", "passages_fts index",
            "vectors vs passages", "archival reconcile"} <= set(checks)


def test_a_drifted_full_text_index_fails_and_is_repaired(initialised: Run, open_store: Open) -> None:
    with open_store("ada") as memory, memory.db.transaction() as conn:
        conn.execute("INSERT INTO messages_fts(rowid, text) VALUES (4242, 'ghost row')")
    broken = initialised("--json", "doctor")
    assert broken.exit_code == 1 and _checks(broken)["messages_fts index"] == "fail"
    assert "--repair" in initialised("doctor").stdout
    repaired = initialised("doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "rebuilt" in repaired.stdout
    assert initialised("doctor").exit_code == 0


def test_pending_passages_and_orphan_vectors_are_reconciled(initialised: Run, open_store: Open) -> None:
    kept = json.loads(initialised("--json", "remember", "Kept passage about tides").stdout)["id"]
    gone = json.loads(initialised("--json", "remember", "Passage deleted behind our back").stdout)["id"]
    with open_store("ada") as memory, memory.db.transaction() as conn:
        conn.execute("UPDATE passages SET vector_state = 'pending' WHERE passage_id = ?", (kept,))
        conn.execute("DELETE FROM passages WHERE passage_id = ?", (gone,))  # its vector is now an orphan
    result = initialised("--json", "doctor", "--full")
    assert result.exit_code == 0, result.output
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["vectors vs passages"]["status"] == "warn"
    assert "1 waiting for vectors" in checks["vectors vs passages"]["detail"]
    assert "removed 1 orphan vectors" in checks["archival reconcile"]["detail"]
    assert _checks(initialised("--json", "doctor"))["vectors vs passages"] == "ok"


def test_doctor_without_storage_is_one_error(run: Run, error_of: Callable[[Result], str]) -> None:
    assert "No memory-agent storage" in error_of(run("doctor"))
