"""The offline demo and each example keep to an agent of their own in a shared storage dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_agent import MemoryManager, Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.e2e
# three programs through the SDK, about 20 s; the README test checks the demo's agent by default
@pytest.mark.slow
@pytest.mark.sqlite_only(
    reason="which agent a program opens is chosen before any store is touched, alike on both "
    "backends; test_examples.py runs every example on PostgreSQL too"
)
def test_the_demo_and_each_example_keep_to_an_agent_of_their_own(tmp_path: Path) -> None:
    """Issue 24: the offline demo's memories and the quickstart's never mix. Without AGENT_ID each
    example opens its own agent (and says which, and where); the demo's agent is not the default."""
    storage = tmp_path / "store"
    env = {name: value for name, value in os.environ.items() if name != "AGENT_ID"}
    env.update(PERSIST_DIRECTORY=str(storage))
    demo = subprocess.run(
        [
            sys.executable,
            "-c",
            "from memory_agent.cli import main; main()",
            "chat",
            "--offline-demo",
        ],
        input="hello\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert demo.returncode == 0, demo.stderr
    runs = {
        script: subprocess.run(
            [sys.executable, str(EXAMPLES / script), "--offline"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=tmp_path,
        )
        for script in ("quickstart.py", "anthropic_memory_tool.py")
    }
    for script, done in runs.items():
        assert done.returncode == 0, (script, done.stderr)
    assert f"Memory of agent 'quickstart' in {storage}" in runs["quickstart.py"].stdout
    assert (
        f"Memory of agent 'anthropic-memory-tool' in {storage}"
        in runs["anthropic_memory_tool.py"].stdout
    )
    with MemoryManager(
        agent_id="offline-demo", settings=Settings.from_env(env, env_file=None)
    ) as memory:
        demo_human = memory.get_block("human").value
        quickstart_human = memory.get_block("human", agent_id="quickstart").value
    assert (
        "Tried memory-agent with the offline demo." in demo_human and "Likes tea" not in demo_human
    )
    assert "Name: Ada. Likes tea." in quickstart_human and "offline demo" not in quickstart_human
