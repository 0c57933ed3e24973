"""Optional: Letta itself checks our exports (skipped unless `letta` is importable).

Letta pins versions this project does not use, so it belongs in a venv of its own; run this file
there, or run `python tests/cli/letta_dry_import.py FILE...` with that venv's Python. The default
suite checks the same exports against the rules written out in `letta_af_rules`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from backends import backend_environ

from memory_agent import MemoryManager, Settings
from memory_agent.portability import export_memory, import_file

pytestmark = [pytest.mark.letta, pytest.mark.usefixtures("backend")]
pytest.importorskip("letta", reason="Letta is not installed here (use a separate venv)")

from letta_dry_import import letta_import_errors


@pytest.mark.parametrize("name", ["memgpt_agent.af", "memgpt_agent_with_convo.af"])
def test_letta_accepts_what_we_export(name: str, shared_data: Path, tmp_path: Path) -> None:
    settings = Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(tmp_path)}), env_file=None
    )
    report = import_file(shared_data / "agent-files" / name, settings=settings)
    with MemoryManager(agent_id=report.agent_ids[0], settings=settings) as memory:
        memory.create_block("system/human/family", "Two sisters", limit=200)
        document = export_memory(memory, format="af")
    assert letta_import_errors(json.loads(json.dumps(document))) == []
