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
from backends import OtherEnviron, backend_environ
from letta_af_rules import letta_errors

from memory_agent import MemoryManager, Settings
from memory_agent.portability import export_memory, import_file, load_document

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("backend")]
FOLDER = os.environ.get("LETTA_AGENT_FILES_DIR")
FILES = sorted(Path(FOLDER).rglob("*.af")) if FOLDER else []


def _settings(storage: Path, environ: OtherEnviron) -> Settings:
    return Settings.from_env(environ({"PERSIST_DIRECTORY": str(storage)}), env_file=None)


def _export(storage: Path, agent_ids: list[str], environ: OtherEnviron) -> dict:
    settings = _settings(storage, environ)
    with MemoryManager(agent_id=agent_ids[0], settings=settings) as memory:
        return export_memory(memory, agent_ids=agent_ids, format="af")


@pytest.mark.skipif(not FILES, reason="set LETTA_AGENT_FILES_DIR to a folder of .af files")
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_a_public_agent_file_imports_exports_and_round_trips(
    path: Path, tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    source = load_document(path)
    report = import_file(path, settings=_settings(tmp_path / "a", backend_environ))
    assert len(report.agent_ids) == len(source["agents"])
    assert report.blocks == len(source.get("blocks") or [])
    first = _export(tmp_path / "a", report.agent_ids, backend_environ)
    assert letta_errors(first) == []
    again = tmp_path / "first.af"
    again.write_text(json.dumps(first), encoding="utf-8")
    import_file(again, settings=_settings(tmp_path / "b", other_store_environ))
    second = _export(tmp_path / "b", report.agent_ids, other_store_environ)

    def without_time(export: dict) -> dict:
        return {k: v for k, v in export.items() if k != "created_at"}

    assert without_time(second) == without_time(first)
