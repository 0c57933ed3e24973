"""The examples run offline (scripted model) exactly as a user would start them, on either backend
(the `backend` fixture's MEMORY_DATABASE_URL reaches them through the environment)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]


def _run(
    script: str, storage: Path, stdin: str = "", *, offline: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PERSIST_DIRECTORY": str(storage), "AGENT_ID": "example-agent"}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *(["--offline"] if offline else [])],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=storage.parent,
    )


def test_quickstart_offline_says_where_it_stores_and_saves_its_fact_once(tmp_path: Path) -> None:
    done = _run("quickstart.py", tmp_path / "store")
    assert done.returncode == 0, done.stderr
    assert f"Memory of agent 'example-agent' in {tmp_path / 'store'}" in done.stdout
    assert "Claude: Nice to meet you, Ada." in done.stdout
    assert "Name: Ada. Likes tea." in done.stdout
    again = _run("quickstart.py", tmp_path / "store")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("Name: Ada. Likes tea.") == 1


def test_quickstart_without_a_key_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    """The isolated environment has no ANTHROPIC_API_KEY: the CLI is "not logged in"."""
    done = _run("quickstart.py", tmp_path / "store", offline=False)
    assert done.returncode == 1
    assert (
        done.stderr.strip().splitlines() == [done.stderr.strip()]
        and "ANTHROPIC_API_KEY" in done.stderr
    )
    assert "turn finished" not in done.stdout and "Not logged in" not in done.stdout


def test_universal_agent_main_loop_offline_and_after_a_restart(tmp_path: Path) -> None:
    first = _run("universal_agent.py", tmp_path / "store", "Plan the launch\nWhat is next?\n")
    assert first.returncode == 0, first.stderr
    assert "agent> Answer 1: noted." in first.stdout and "agent> Answer 2: noted." in first.stdout
    assert "Working on: the memory-agent launch." in first.stdout
    # Money and time rounded for people ($0.0710, 1.2 s), never a float's full repr.
    costs = re.findall(r"\(tools: [^;]*; cost: (.*?); (.*?)\)", first.stdout)
    assert len(costs) == 2 and all(re.fullmatch(r"\$\d+\.\d{4}", cost) for cost, _ in costs), costs
    assert all(re.fullmatch(r"\d+\.\d s", took) for _, took in costs), costs
    second = _run("universal_agent.py", tmp_path / "store", "Remind me\n")
    assert second.returncode == 0, second.stderr
    assert (
        second.stdout.count("Working on: the memory-agent launch.") == 1
    )  # kept, not inserted again


def test_anthropic_memory_tool_offline_twice(tmp_path: Path) -> None:
    first = _run("anthropic_memory_tool.py", tmp_path / "store")
    assert first.returncode == 0, first.stderr
    assert "Claude: Noted: tea, no sugar." in first.stdout
    assert "Drinks: tea, no sugar." in first.stdout and "create_block" in first.stdout
    second = _run("anthropic_memory_tool.py", tmp_path / "store")
    assert second.returncode == 0, second.stderr
    # The file from the first run is there: the scripted create is refused and nothing is lost.
    assert "error: File /memories/preferences.md already exists" in second.stdout
    assert "result: File created successfully" in first.stdout
    journal = [line for line in second.stdout.splitlines() if line.startswith("Journal:")]
    assert journal == [line for line in first.stdout.splitlines() if line.startswith("Journal:")]


def test_anthropic_memory_tool_without_a_key_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    """Like the quickstart: no ANTHROPIC_API_KEY in the isolated environment is one line, no
    traceback."""
    done = _run("anthropic_memory_tool.py", tmp_path / "store", offline=False)
    assert done.returncode == 1, done.stderr
    assert (
        done.stderr.strip().splitlines() == [done.stderr.strip()]
        and "ANTHROPIC_API_KEY" in done.stderr
    )
    assert "Traceback" not in done.stderr and "Claude:" not in done.stdout
