"""Every code block of the README runs as written, on a fresh storage dir, offline (issue 24: "a
test executes every code block of the README"; a block this test cannot run must not be there).

Python blocks run as a program of their own in a subprocess, in an empty working directory with
its own storage dir and home, without an API key (the quickstart brings the scripted model from
`memory_agent.testing`). Shell blocks run line by line through bash against a fresh storage dir
(`PERSIST_DIRECTORY`); the only lines skipped are the install and test commands, which are what
`.ci/run` itself does (a fresh venv, `pip install -e ...`, `python -m pytest`): running them here
would reinstall the package and start the suite inside the suite. The Python block of
docs/testing-offline.md (the page that once held a snippet failing on a fresh agent) runs too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory_agent import MemoryManager, Settings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES_RUN_TOO = [ROOT / "docs" / "testing-offline.md"]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)

# Shell lines that are .ci/run's own steps (see the module doc): skipped, with that reason.
SKIPPED_LINES = {
    "python3 -m venv .venv && . .venv/bin/activate": ".ci/run makes its own fresh venv",
    "pip install -e .": ".ci/run installs the package (with its extras) before the suite",
    'pip install -e ".[dev,postgres,encryption,browser]"': (
        ".ci/run installs the package (with its extras) before the suite"
    ),
    "python -m pytest": "this is the suite; .ci/run starts it",
}

# What a block must print, beyond exiting 0 (keyed by a line of the block).
EXPECTED_OUTPUT = {
    "Hi! I'm Ada and I like tea.": [
        "Claude: Nice to meet you, Ada.",
        "Name: Ada. Likes tea.",
        "Messages stored: ",
    ],
    'memory-agent recall "who is in Ada\'s family?" --limit 2': [
        "Ada's sister lives in Lisbon and teaches piano."
    ],
    'echo "Hi, I\'m Ada." | memory-agent chat --offline-demo': [
        "(memory: core_memory_append)",
        "Created agent 'offline-demo'",
    ],
    "memory-agent doctor": ["All checks passed."],
}


def _blocks(path: Path) -> list[tuple[str, str]]:
    return [(language, body) for language, body in _FENCE.findall(path.read_text(encoding="utf-8"))]


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(
            ("ANTHROPIC_", "MEMORY_", "PERSIST_", "AGENT_", "CHROMA_", "COMPACTION_")
        )
    }
    bin_dir = str(Path(sys.executable).parent)  # the venv's memory-agent and python, first on PATH
    return {
        **env,
        "HOME": str(tmp_path / "home"),
        "PERSIST_DIRECTORY": str(tmp_path / "storage"),
        "PATH": bin_dir + os.pathsep + env.get("PATH", ""),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "COLUMNS": "120",
    }


def _expected(text: str) -> list[str]:
    return [want for key, wants in EXPECTED_OUTPUT.items() if key in text for want in wants]


def test_the_readme_has_blocks_of_known_kinds_only() -> None:
    kinds = {language for language, _ in _blocks(README)}
    assert kinds <= {"python", "bash"}, (
        f"a README block this test cannot run: {kinds - {'python', 'bash'}}"
    )
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def _python_blocks() -> list[tuple[str, str]]:
    found = []
    for path in [README, *PAGES_RUN_TOO]:
        found += [
            (f"{path.name}#{index}", body)
            for index, (language, body) in enumerate(_blocks(path))
            if language == "python"
        ]
    return found


@pytest.mark.e2e
@pytest.mark.sqlite_only(
    reason="the README is what a newcomer runs on a fresh machine: SQLite in a fresh storage "
    "dir; the same calls run on PostgreSQL in tests/examples and tests/cli"
)
@pytest.mark.parametrize("name, code", _python_blocks(), ids=[name for name, _ in _python_blocks()])
def test_a_python_block_runs_as_written(name: str, code: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    program = work / "block.py"
    program.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(program)],
        cwd=work,
        env=_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    for want in _expected(code):
        assert want in done.stdout, (want, done.stdout)


def _shell_lines() -> list[str]:
    lines: list[str] = []
    for language, body in _blocks(README):
        if language == "bash":
            lines += [
                line for line in body.splitlines() if line.strip() and not line.startswith("#")
            ]
    return lines


@pytest.mark.e2e
@pytest.mark.sqlite_only(
    reason="the README's commands as a newcomer types them: a fresh SQLite storage dir; "
    "tests/cli runs every command on both backends"
)
def test_the_shell_blocks_run_in_order_on_a_fresh_storage_dir(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = _environment(tmp_path)
    ran = 0
    for line in _shell_lines():
        if line in SKIPPED_LINES:
            continue
        assert line.startswith(("memory-agent ", "echo ")) and "memory-agent" in line, (
            f"a README shell line this test cannot run (so it must not be in the README): {line}"
        )
        done = subprocess.run(
            ["bash", "-c", f"set -o pipefail; {line}"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        for want in _expected(line):
            assert want in done.stdout, (line, want, done.stdout)
        ran += 1
    assert ran >= 8
    assert (tmp_path / "storage" / "memory.db").is_file()
    assert (work / "ada.json").is_file()  # `export -o ada.json` wrote where the reader stands
    # The demo ran first, yet the reader's commands made an agent of their own: the demo's
    # memories and the reader's never mix (the demo's agent is never the default).
    settings = Settings.from_env({"PERSIST_DIRECTORY": str(tmp_path / "storage")}, env_file=None)
    with MemoryManager(settings=settings) as memory:
        assert memory.agent_id != "offline-demo"
        assert "Sails a blue sloop" in memory.get_block("human").value
        demo_human = memory.get_block("human", agent_id="offline-demo").value
    assert "Sails a blue sloop" not in demo_human and "offline demo" in demo_human
