"""examples/agent_college.py runs offline as a user would start it, and a second run continues."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from backends import backend_environ
from warm_interpreter import ScriptRun, WarmInterpreter

from memory_agent import MemoryManager, Settings
from memory_agent.integrations.college import COLLEGE_BLOCK_LABEL

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "agent_college.py"

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]


def _run(
    warm: WarmInterpreter, tmp_path: Path, output_dir: Path, *arguments: str, **env: str
) -> ScriptRun:
    """`python examples/agent_college.py --offline ...`, forked from the warm interpreter."""
    return warm.run(
        SCRIPT,
        ["--offline", *arguments],
        cwd=tmp_path,
        environment={**os.environ, **env},
        output_dir=output_dir,
        timeout=180,
    )


def test_the_college_runs_offline_coordinates_and_a_second_run_continues_it(
    tmp_path: Path, warm_interpreter: WarmInterpreter, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A first run named by options (--storage-dir, --instance), then a second run named by the
    environment alone (PERSIST_DIRECTORY, AGENT_INSTANCE_ID) that continues the same college.

    Why one test: each run starts Python and three CLIs, so continuing the first run's college
    costs one more run where a test of its own needed two."""
    storage = tmp_path / "store"
    done = _run(
        warm_interpreter,
        tmp_path,
        tmp_path_factory.mktemp("output"),
        "--storage-dir",
        str(storage),
        "--instance",
        "exam",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Agent College 'exam'" in out
    for line in (
        "[critic] (1 memory edit) Sound for integers, but the claim must say n is an integer.",
        "[professor] (1 memory edit) Final: for every integer n, n^2 - n is even; the proof stands "
        "as written.",
        "[scribe] (1 memory edit) Recorded: the claim holds for integers and the proof needs its "
        "domain stated.",
    ):
        assert line in out
    assert (
        out.index("--- round 1 ---")
        < out.index("--- round 2 ---")
        < out.index("=== final shared block")
    )
    final = out.split("=== final shared block")[1]
    assert "(version 7, " in final
    for entry in (
        "Critic: with n an integer, no further objection.",
        "Professor: n(n - 1) multiplies two consecutive integers, one of them even.",
        "Scribe: agreed: true for all integers n; the proof must state the domain.",
    ):
        assert final.count(entry) == 1
    # Round 2 ran after round 1's writes: every agent's system prompt showed all of them.
    for role in ("critic", "professor", "scribe"):
        assert f"offline check: {role}'s last request showed 3/3 earlier-round entries" in out

    settings = Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(storage)}), env_file=None
    )
    with MemoryManager(agent_id="exam_scribe", settings=settings) as memory:
        authors = [v.agent_id for v in memory.block_history(COLLEGE_BLOCK_LABEL)]
    assert sorted(authors[1:]) == sorted(["exam_critic", "exam_professor", "exam_scribe"] * 2)

    env = {"PERSIST_DIRECTORY": str(storage), "AGENT_INSTANCE_ID": "exam"}
    second = _run(
        warm_interpreter, tmp_path, tmp_path_factory.mktemp("output"), "--rounds", "1", **env
    )
    assert second.returncode == 0, second.stderr
    assert "Agent College 'exam'" in second.stdout and "(version 10, " in second.stdout
    # Round 1's entries again, after the first run's: the final block shows each of them twice.
    assert second.stdout.count("Critic: the statement never says n is an integer") == 2
    assert second.stdout.count("Critic: with n an integer, no further objection.") == 1
