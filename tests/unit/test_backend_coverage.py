"""Every storage test runs on PostgreSQL too, or says in writing why it cannot (issue 17), and every
test that starts the PostgreSQL server is marked `postgres`, so that -m 'not postgres' runs none.

The rule is tests/backend_coverage.py. On a run that collected the whole suite, tests/conftest.py
already recorded its verdicts (slow tests included, before `-m` dropped them); on a narrower run
this test collects the whole suite in a subprocess to judge it all the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from backend_coverage import TESTS, UNCOVERED, collected_whole_suite

SAMPLE = Path(__file__).resolve().parent / "backend_coverage_sample"


def _uncovered_in(folder: Path) -> dict[str, str]:
    """The rule's verdicts on every test under `folder`, from a `--collect-only` run of its own."""
    path = os.pathsep.join([str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-m",
            "",
            "-p",
            "backend_coverage",
            "-p",
            "no:cacheprovider",
            str(folder),
        ],
        cwd=folder.parent,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"collection failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    lines = [
        line.removeprefix("UNCOVERED ")
        for line in done.stdout.splitlines()
        if line.startswith("UNCOVERED ")
    ]
    return dict(line.split(" :: ", 1) for line in lines)


def test_every_storage_test_runs_on_postgresql_too_or_says_why(
    request: pytest.FixtureRequest,
) -> None:
    if collected_whole_suite(request.config):
        uncovered = request.config.stash.get(UNCOVERED, {})
    else:
        uncovered = _uncovered_in(TESTS)
    assert uncovered == {}, (
        "storage tests that run on SQLite only without a written reason:\n"
        + "\n".join(f"{nodeid}: {problem}" for nodeid, problem in sorted(uncovered.items()))
    )


def test_the_rule_flags_storage_tests_without_postgresql_or_a_reason(tmp_path: Path) -> None:
    suite = tmp_path / "sample"
    suite.mkdir()
    shutil.copy(SAMPLE / "sample_conftest.py", suite / "conftest.py")
    shutil.copy(SAMPLE / "sample_suite.py", suite / "test_sample.py")

    uncovered = _uncovered_in(suite)

    flagged = sorted(nodeid.split("::", 1)[1] for nodeid in uncovered)
    assert flagged == [
        "TestGrouped::test_flagged_a_method",
        "test_flagged_a_blank_reason",
        "test_flagged_a_storage_dir_given_to_the_cli",
        "test_flagged_a_store_fixture",
        "test_flagged_each_parameter[1]",
        "test_flagged_each_parameter[2]",
        "test_flagged_no_reason",
        "test_flagged_the_server_without_the_marker",
        "test_flagged_through_a_helper_of_its_module",
    ]
    by_name = {nodeid.split("::")[-1]: problem for nodeid, problem in uncovered.items()}
    assert "fixture 'memory'" in by_name["test_flagged_a_store_fixture"]
    assert "in _open_the_store)" in by_name["test_flagged_through_a_helper_of_its_module"]
    assert "usefixtures('backend')" in by_name["test_flagged_a_store_fixture"]
    assert "without a reason" in by_name["test_flagged_a_blank_reason"]
    assert "add @pytest.mark.postgres" in by_name["test_flagged_the_server_without_the_marker"]
