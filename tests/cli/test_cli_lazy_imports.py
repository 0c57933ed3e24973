"""Commands that need no vectors and no model import none of the heavy packages: a cold
`memory-agent blocks list` costs Python's start and SQLite, not chromadb's second or the SDK's.
(Timings are printed by bench/cli_latency_bench.py; this pins what makes them possible.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from backends import backend_environ

from memory_agent import MemoryManager, Settings

pytestmark = pytest.mark.usefixtures("backend")

HEAVY = (
    "chromadb",
    "onnxruntime",
    "tokenizers",
    "torch",
    "sentence_transformers",
    "claude_agent_sdk",
    "anthropic",
)

_RUN_COMMANDS = """
import json, sys
from memory_agent.cli import cli
for args in json.loads(sys.argv[1]):
    try:
        cli.main(args, prog_name="memory-agent", standalone_mode=False)
    except SystemExit:
        pass
print(json.dumps([name for name in json.loads(sys.argv[2]) if name in sys.modules]))
"""


def test_commands_without_vectors_import_no_heavy_package(tmp_path: Path) -> None:
    storage = tmp_path / "store"
    settings = Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(storage)}), env_file=None
    )
    with MemoryManager(agent_id="ada", settings=settings) as memory:
        kept = memory.archival_memory_insert("Ada's sister lives in Lisbon.")
        gone = memory.archival_memory_insert("A passage to forget.")
        memory.store_message("user", "I like tea")
    commands = [
        ["blocks", "list"],
        ["blocks", "show", "human"],
        ["blocks", "set", "human", "Name: Ada"],
        ["agents", "list"],
        ["messages"],
        ["summary"],
        ["compact"],
        ["passages"],
        ["recall", "Lisbon", "--mode", "keyword"],
        ["forget", gone],
        ["export", "-o", str(tmp_path / "out.json")],
        ["--help"],
    ]
    env = {
        **os.environ,
        "PERSIST_DIRECTORY": str(storage),
        "AGENT_ID": "ada",
        "ANONYMIZED_TELEMETRY": "False",
    }
    result = subprocess.run(
        [sys.executable, "-c", _RUN_COMMANDS, json.dumps(commands), json.dumps(HEAVY)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
    assert "Forgot" in result.stdout or gone in result.stdout

    # The vector of the forgotten passage goes when the vector store is next opened.
    with MemoryManager(agent_id="ada", settings=settings) as memory:
        assert memory.archival_memory_get(gone) is None
        hits = memory.archival_memory_search("sister in Lisbon", mode="vector")
        assert [hit.passage.passage_id for hit in hits] == [kept]
        assert memory.archival.index.store.count("ada") == 1
