"""`consolidate` and `consolidations list|show|rollback`, and what `doctor` says about them."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import Result

from memory_agent import MemoryManager
from memory_agent.consolidation import MemoryView, Plan
from memory_agent.consolidation.protocol import Embed

Run = Callable[..., Result]
Open = Callable[[str], MemoryManager]

pytestmark = pytest.mark.usefixtures("backend")

HARBOUR = ("The harbour master is called Ines Duarte.", "Ines Duarte is the harbour master.")


def _duplicates(open_store: Open) -> list[str]:
    with open_store("ada") as memory:
        return [memory.archival_memory_insert(text) for text in HARBOUR]


def test_a_dry_run_then_a_run_then_its_rollback(
    initialised: Run, open_store: Open, error_of: Callable[[Result], str]
) -> None:
    ids = _duplicates(open_store)
    planned = initialised("--json", "consolidate", "--dry-run")
    assert planned.exit_code == 0, planned.output
    dry = json.loads(planned.stdout)
    assert (
        dry["status"] == "dry_run"
        and dry["session_id"] is None
        and dry["counts"]["passages_merged"] == 1
    )
    assert json.loads(initialised("--json", "consolidations", "list").stdout) == []
    assert "No consolidation sessions yet." in initialised("consolidations", "list").stdout

    done = initialised("consolidate", "--rules-only")
    assert done.exit_code == 0, done.output
    assert "Consolidation consolidation-" in done.stdout and "1 merged" in done.stdout
    assert ids[1] in done.stdout  # the change is listed
    (session,) = json.loads(initialised("--json", "consolidations", "list").stdout)
    assert session["status"] == "completed" and session["consolidator"] == "rules"
    shown = initialised("consolidations", "show", session["session_id"])
    assert "passages merged 1" in shown.stdout and "completed" in shown.stdout

    rolled = initialised("consolidations", "rollback", session["session_id"])
    assert rolled.exit_code == 0, rolled.output
    assert "Rolled back" in rolled.stdout
    with open_store("ada") as memory:
        passages = [memory.archival_memory_get(passage_id) for passage_id in ids]
    assert all(passage is not None and passage.superseded_by is None for passage in passages)
    again = initialised("consolidations", "rollback", session["session_id"])
    assert "already rolled back" in error_of(again) and again.exit_code == 1


def test_usage_errors_exit_2_and_other_failures_one_line(
    initialised: Run, error_of: Callable[[Result], str]
) -> None:
    assert initialised("consolidate", "--no-such-flag").exit_code == 2
    assert initialised("consolidations", "rollback").exit_code == 2
    assert initialised("consolidations", "list", "--limit", "0").exit_code == 2
    missing = initialised("consolidations", "show", "consolidation-nope")
    assert (
        "No consolidation session 'consolidation-nope'" in error_of(missing)
        and missing.exit_code == 1
    )


class _Broken:
    @property
    def name(self) -> str:
        return "broken"

    async def plan(self, view: MemoryView, embed: Embed) -> Plan:
        raise RuntimeError("the embedding server is gone")


def test_doctor_and_list_show_the_last_success_and_failure(
    initialised: Run, open_store: Open
) -> None:
    _duplicates(open_store)
    assert initialised("consolidate", "--rules-only").exit_code == 0
    with open_store("ada") as memory:
        failed = memory.consolidate(consolidator=_Broken())
    assert failed.status == "failed"

    listing = initialised("consolidations", "list").stdout
    assert "failed" in listing and "completed" in listing
    doctor = initialised("--json", "doctor")
    checks = {check["name"]: check for check in json.loads(doctor.stdout)["checks"]}
    check = checks["consolidation of ada"]
    assert check["status"] == "warn"  # the newest run failed
    assert "last success" in check["detail"] and "embedding server is gone" in check["detail"]
    assert doctor.exit_code == 0  # a warning, not a failed check
    assert initialised("consolidate", "--rules-only").exit_code == 0
    checks = {
        check["name"]: check
        for check in json.loads(initialised("--json", "doctor").stdout)["checks"]
    }
    assert checks["consolidation of ada"]["status"] == "ok"


def test_an_unreachable_model_falls_back_and_the_output_says_so(
    initialised: Run, open_store: Open
) -> None:
    with open_store("ada") as memory:
        memory.create_block("notes", "x" * 90, limit=100)
    # A model is configured but unreachable: the run falls back to the rules and says so.
    result = initialised(
        "consolidate",
        env={
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
            "ANTHROPIC_API_KEY": "k",
            "COMPACTION_MAX_ATTEMPTS": "1",
        },
    )
    assert result.exit_code == 0, result.output
    assert "warning: the model consolidator" in result.stdout and "rules decided" in result.stdout
