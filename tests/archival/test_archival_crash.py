"""A writer killed with SIGKILL in the middle of 1,000 inserts (after 100 reported) loses nothing
it reported done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from archival_crash_writer import AGENT, content
from archival_helpers import HashEmbedding

from memory_agent import MemoryManager, Settings
from memory_agent.archival import ArchivalMemory, VectorConfig
from memory_agent.store.backend import open_store

pytestmark = pytest.mark.usefixtures("backend")

WRITER = Path(__file__).resolve().parent / "archival_crash_writer.py"
TOTAL = 1000
KILL_AFTER = 100


def _run_and_kill(storage: Path) -> dict[int, str]:
    """Start the writer, SIGKILL it once KILL_AFTER inserts are reported; returns what it
    reported."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")]),
    }
    process = subprocess.Popen(
        [sys.executable, str(WRITER), str(storage), str(TOTAL)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    reported: dict[int, str] = {}
    deadline = time.monotonic() + 120
    try:
        assert process.stdout is not None
        for line in process.stdout:
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit():
                reported[int(parts[0])] = parts[1]
            if len(reported) >= KILL_AFTER or time.monotonic() > deadline:
                break
        process.send_signal(signal.SIGKILL)
        # Whatever was flushed before the kill also counts as reported.
        for line in process.stdout:
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit():
                reported[int(parts[0])] = parts[1]
    finally:
        process.kill()
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    return reported


def test_sigkill_during_inserts_loses_no_reported_passage(tmp_path: Path) -> None:
    storage = tmp_path / "store"
    database_url = os.environ.get(
        "MEMORY_DATABASE_URL"
    )  # set on the `backend` fixture's PostgreSQL run
    with MemoryManager(
        agent_id=AGENT, settings=Settings(persist_directory=storage, database_url=database_url)
    ):
        pass
    reported = _run_and_kill(storage)
    assert KILL_AFTER <= len(reported) < TOTAL, "the writer must be killed in the middle"

    with open_store(storage, database_url) as db:
        archival = ArchivalMemory(db, VectorConfig(path=storage / "chroma"), HashEmbedding())
        report = archival.reconcile()
        assert report.ok, report
        for number, passage_id in reported.items():
            passage = archival.get(AGENT, passage_id)
            assert passage is not None and passage.content == content(number)
        stored = {p.passage_id for p in archival.list(AGENT, limit=TOTAL)}
        in_chroma = archival.index.store.ids(AGENT)
        assert set(reported.values()) <= stored
        assert in_chroma == stored  # every stored passage has exactly its vector, no orphans
        assert archival.index.store.count(AGENT) == len(stored)
        assert len(stored) <= len(reported) + 1  # at most the insert cut short was also committed
        # Inserting the reported contents again creates nothing new.
        again = archival.insert_many(AGENT, [content(n) for n in sorted(reported)])
        assert again == [reported[n] for n in sorted(reported)]
        assert archival.count(AGENT) == len(stored)
        assert archival.search(AGENT, content(0), limit=1)[0].passage_id == reported[0]


@pytest.fixture(autouse=True)
def _writer_is_present() -> None:
    if not WRITER.is_file():
        pytest.skip(f"crash writer script missing at {WRITER}")
