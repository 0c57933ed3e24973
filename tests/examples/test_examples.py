"""The examples run offline (scripted model) as a user would start them, on either backend (the
`backend` fixture's MEMORY_DATABASE_URL reaches them through the environment). Each run is the
script as `__main__` in a child forked from the warm interpreter (tests/warm_interpreter.py): its
own process, argv, input and environment, without paying the SDK's imports again."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from warm_interpreter import ScriptRun, WarmInterpreter

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]


@pytest.fixture
def run(
    warm_interpreter: WarmInterpreter, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., ScriptRun]:
    """Run an example as `python examples/<script> [--offline]` would (forked from the warm
    interpreter, which imported the SDK once), with its storage named by PERSIST_DIRECTORY."""

    def _run(script: str, storage: Path, stdin: str = "", *, offline: bool = True) -> ScriptRun:
        return warm_interpreter.run(
            EXAMPLES / script,
            ["--offline"] if offline else [],
            cwd=storage.parent,
            environment={
                **os.environ,
                "PERSIST_DIRECTORY": str(storage),
                "AGENT_ID": "example-agent",
            },
            output_dir=tmp_path_factory.mktemp("output"),
            timeout=120,
            stdin=stdin,
        )

    return _run


def test_quickstart_offline_says_where_it_stores_and_saves_its_fact_once(
    tmp_path: Path, run: Callable[..., ScriptRun]
) -> None:
    done = run("quickstart.py", tmp_path / "store")
    assert done.returncode == 0, done.stderr
    assert f"Memory of agent 'example-agent' in {tmp_path / 'store'}" in done.stdout
    assert "Claude: Nice to meet you, Ada." in done.stdout
    assert "Name: Ada. Likes tea." in done.stdout
    again = run("quickstart.py", tmp_path / "store")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("Name: Ada. Likes tea.") == 1


def test_quickstart_without_a_key_exits_non_zero_with_one_line(
    tmp_path: Path, run: Callable[..., ScriptRun]
) -> None:
    """The isolated environment has no ANTHROPIC_API_KEY: the CLI is "not logged in"."""
    done = run("quickstart.py", tmp_path / "store", offline=False)
    assert done.returncode == 1
    assert (
        done.stderr.strip().splitlines() == [done.stderr.strip()]
        and "ANTHROPIC_API_KEY" in done.stderr
    )
    assert "turn finished" not in done.stdout and "Not logged in" not in done.stdout


def test_universal_agent_main_loop_offline_and_after_a_restart(
    tmp_path: Path, run: Callable[..., ScriptRun]
) -> None:
    first = run("universal_agent.py", tmp_path / "store", "Plan the launch\nWhat is next?\n")
    assert first.returncode == 0, first.stderr
    assert "agent> Answer 1: noted." in first.stdout and "agent> Answer 2: noted." in first.stdout
    assert "Working on: the memory-agent launch." in first.stdout
    # Money and time rounded for people ($0.0710, 1.2 s), never a float's full repr.
    costs = re.findall(r"\(tools: [^;]*; cost: (.*?); (.*?)\)", first.stdout)
    assert len(costs) == 2 and all(re.fullmatch(r"\$\d+\.\d{4}", cost) for cost, _ in costs), costs
    assert all(re.fullmatch(r"\d+\.\d s", took) for _, took in costs), costs
    second = run("universal_agent.py", tmp_path / "store", "Remind me\n")
    assert second.returncode == 0, second.stderr
    assert (
        second.stdout.count("Working on: the memory-agent launch.") == 1
    )  # kept, not inserted again


def test_anthropic_memory_tool_offline_twice(tmp_path: Path, run: Callable[..., ScriptRun]) -> None:
    first = run("anthropic_memory_tool.py", tmp_path / "store")
    assert first.returncode == 0, first.stderr
    assert "Claude: Noted: tea, no sugar." in first.stdout
    assert "Drinks: tea, no sugar." in first.stdout and "create_block" in first.stdout
    second = run("anthropic_memory_tool.py", tmp_path / "store")
    assert second.returncode == 0, second.stderr
    # The file from the first run is there: the scripted create is refused and nothing is lost.
    assert "error: File /memories/preferences.md already exists" in second.stdout
    assert "result: File created successfully" in first.stdout
    journal = [line for line in second.stdout.splitlines() if line.startswith("Journal:")]
    assert journal == [line for line in first.stdout.splitlines() if line.startswith("Journal:")]


def test_anthropic_memory_tool_without_a_key_exits_non_zero_with_one_line(
    tmp_path: Path, run: Callable[..., ScriptRun]
) -> None:
    """Like the quickstart: no ANTHROPIC_API_KEY in the isolated environment is one line, no
    traceback."""
    done = run("anthropic_memory_tool.py", tmp_path / "store", offline=False)
    assert done.returncode == 1, done.stderr
    assert (
        done.stderr.strip().splitlines() == [done.stderr.strip()]
        and "ANTHROPIC_API_KEY" in done.stderr
    )
    assert "Traceback" not in done.stderr and "Claude:" not in done.stdout
