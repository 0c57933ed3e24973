"""Archival memory against a real Chroma server (`chroma run`), through HttpClient mode."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from archival_helpers import HashEmbedding

from memory_agent import Settings
from memory_agent.archival import ArchivalMemory, VectorConfig
from memory_agent.store.database import Database

STARTUP_SECONDS = 60

pytestmark = pytest.mark.usefixtures("backend")



def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_heartbeat(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chroma run exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"chroma run did not answer on port {port} within {STARTUP_SECONDS}s")


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[int]:
    executable = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if executable is None:
        pytest.skip("the `chroma` command (from the chromadb wheel) is not installed")
    port = _free_port()
    process = subprocess.Popen(
        [executable, "run", "--path", str(tmp_path / "server-data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    try:
        _wait_for_heartbeat(port, process)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_insert_and_search_through_a_chroma_server(chroma_server: int, db: Database, tmp_path: Path) -> None:
    settings = Settings(persist_directory=tmp_path / "store", chroma_host="127.0.0.1", chroma_port=chroma_server)
    config = VectorConfig.from_settings(settings)
    assert config.host == "127.0.0.1" and config.location == f"http://127.0.0.1:{chroma_server}"
    archival = ArchivalMemory(db, config, HashEmbedding())
    first = archival.insert("alice", "The server keeps the vectors of archival memory.", tags=["infra"],
                            created_at="2024-06-01")
    archival.insert_many("alice", ["Unrelated note about gardening tomatoes.", "Another note about bread baking."])
    archival.insert("bob", "Bob's note: the server keeps vectors too.")
    assert not (tmp_path / "store" / "chroma").exists()  # nothing embedded when a host is set

    for mode in ("vector", "hybrid"):
        hits = archival.search("alice", "server keeps vectors", limit=3, mode=mode)  # type: ignore[arg-type]
        assert hits[0].passage_id == first and all(h.passage.agent_id == "alice" for h in hits)
    assert [h.passage_id for h in archival.search("alice", "vectors", tags=["infra"], end_date="2024-06-01",
                                                  mode="vector")] == [first]
    assert archival.reconcile(full=True).ok
    archival.delete("alice", first)
    assert first not in archival.index.store.ids("alice")


def test_a_server_that_is_down_leaves_inserts_pending(db: Database) -> None:
    archival = ArchivalMemory(db, VectorConfig(path=Path("unused"), host="127.0.0.1", port=_free_port()),
                              HashEmbedding())
    passage_id = archival.insert("alice", "Written while the server is down.")
    assert archival.get("alice", passage_id).vector_state == "pending"
    assert [h.passage_id for h in archival.search("alice", "server down")] == [passage_id]
    assert archival.reconcile().errors
