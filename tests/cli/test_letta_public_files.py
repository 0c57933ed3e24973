"""Every public Letta agent file in a directory imports, exports to Letta's rules and round-trips.

Slow and opt-in: point `LETTA_AGENT_FILES_DIR` at a checkout of letta-ai/agent-file (or any folder
of `.af` files) and run `python -m pytest -m slow tests/cli/test_letta_public_files.py`. The files
are not in this repository: most are larger than a test fixture should be.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from letta_af_rules import letta_errors

from memory_agent import MemoryManager, Settings
from memory_agent.portability import export_memory, import_file, load_document

pytestmark = pytest.mark.slow
FOLDER = os.environ.get("LETTA_AGENT_FILES_DIR")
FILES = sorted(Path(FOLDER).rglob("*.af")) if FOLDER else []


def _export(storage: Path, agent_ids: list[str]) -> dict:
    settings = Settings.from_env({"PERSIST_DIRECTORY": str(storage)}, env_file=None)
    with MemoryManager(agent_id=agent_ids[0], settings=settings) as memory:
        return export_memory(memory, agent_ids=agent_ids, format="af")


@pytest.mark.skipif(not FILES, reason="set LETTA_AGENT_FILES_DIR to a folder of .af files")
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_a_public_agent_file_imports_exports_and_round_trips(path: Path, tmp_path: Path) -> None:
    source = load_document(path)
    settings = Settings.from_env({"PERSIST_DIRECTORY": str(tmp_path / "a")}, env_file=None)
    report = import_file(path, settings=settings)
    assert len(report.agent_ids) == len(source["agents"])
    assert report.blocks == len(source.get("blocks") or [])
    first = _export(tmp_path / "a", report.agent_ids)
    assert letta_errors(first) == []
    again = tmp_path / "first.af"
    again.write_text(json.dumps(first), encoding="utf-8")
    import_file(again, settings=Settings.from_env({"PERSIST_DIRECTORY": str(tmp_path / "b")}, env_file=None))
    second = _export(tmp_path / "b", report.agent_ids)
    def without_time(export: dict) -> dict:
        return {k: v for k, v in export.items() if k != "created_at"}

    assert without_time(second) == without_time(first)
