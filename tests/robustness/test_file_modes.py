"""Owner-only files whatever the umask: the storage dir 0700, every file memory-agent creates
0600 (the database and its -wal and -shm, Chroma's files, exports, the system-prompt file), and
`doctor` reports a looser mode that `--repair` tightens."""

from __future__ import annotations

import gc
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from robustness_helpers import HashEmbedding, cli_run

from memory_agent import MemoryManager
from memory_agent.agent.prompt_file import PromptFile
from memory_agent.portability import export_memory, write_export


@pytest.fixture(params=[0o022, 0o000], ids=["umask 022", "umask 000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    try:
        yield int(request.param)
    finally:
        os.umask(previous)


def modes(root: Path) -> dict[str, int]:
    return {
        str(path.relative_to(root.parent)): stat.S_IMODE(path.stat().st_mode)
        for path in (root, *root.rglob("*"))
    }


@pytest.mark.usefixtures("backend")
def test_everything_memory_agent_creates_is_the_owners_alone(tmp_path: Path, umask: int) -> None:
    storage = tmp_path / "deep" / "store"
    with MemoryManager(storage, agent_id="ada", embedding_function=HashEmbedding()) as memory:
        memory.archival_memory_insert_many(
            [f"passage {n}" for n in range(20)]
        )  # Chroma writes its segments
        memory.core_memory_append("human", "Likes tea.")
        found = modes(storage)  # while open: the -wal and -shm files exist on SQLite
        export = write_export(export_memory(memory), storage / "export.json")
    prompt = PromptFile()
    try:
        written = prompt.write("the system prompt")
        assert (
            stat.S_IMODE(written.stat().st_mode) == 0o600
            and stat.S_IMODE(written.parent.stat().st_mode) == 0o700
        )
    finally:
        prompt.close()
    assert stat.S_IMODE(export.stat().st_mode) == 0o600
    assert any("chroma" in name for name in found)
    if not os.environ.get("MEMORY_DATABASE_URL"):
        assert {"store/memory.db", "store/memory.db-wal", "store/memory.db-shm"} <= set(found)
    loose = {
        name: oct(mode)
        for name, mode in found.items()
        if mode != (0o700 if (tmp_path / "deep" / name).is_dir() else 0o600)
    }
    assert loose == {}, loose


@pytest.mark.usefixtures("backend")
def test_doctor_reports_loose_modes_and_repair_tightens_them(tmp_path: Path) -> None:
    storage = tmp_path / "store"
    assert cli_run("--storage-dir", str(storage), "--agent", "ada", "init").exit_code == 0
    assert cli_run("--storage-dir", str(storage), "remember", "A passage").exit_code == 0
    report = cli_run("--storage-dir", str(storage), "--json", "doctor")
    assert {c["name"]: c for c in json.loads(report.stdout)["checks"]}["file modes"][
        "status"
    ] == "ok"

    os.chmod(storage, 0o755)
    chroma_file = storage / "chroma" / "chroma.sqlite3"
    os.chmod(chroma_file, 0o644)
    report = cli_run("--storage-dir", str(storage), "--json", "doctor")
    assert report.exit_code == 1
    failed = {c["name"]: c for c in json.loads(report.stdout)["checks"]}["file modes"]
    assert (
        failed["status"] == "fail"
        and f"{storage} (0755)" in failed["detail"]
        and "--repair" in failed["detail"]
    )
    assert f"{chroma_file} (0644)" in failed["detail"]

    repaired = cli_run("--storage-dir", str(storage), "--json", "doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert (
        "owner-only"
        in {c["name"]: c for c in json.loads(repaired.stdout)["checks"]}["file modes"]["detail"]
    )
    assert (
        stat.S_IMODE(storage.stat().st_mode) == 0o700
        and stat.S_IMODE(chroma_file.stat().st_mode) == 0o600
    )
    assert cli_run("--storage-dir", str(storage), "doctor").exit_code == 0


def test_a_prompt_file_never_closed_is_removed_when_its_process_exits(tmp_path: Path) -> None:
    """The prompt holds memory's text: a program that ends without closing its agent must not
    leave it in the temporary directory."""
    program = (
        "from memory_agent.agent.prompt_file import PromptFile\n"
        "keep = PromptFile()\n"
        "print(keep.write('Likes tea.'))\n"
    )
    environ = {**os.environ, "TMPDIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=environ, check=True
    )
    written = Path(result.stdout.strip())
    assert written.parent.parent == tmp_path  # it was made where TMPDIR said
    assert not written.parent.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_prompt_file_dropped_without_close_is_removed_and_close_stays_safe() -> None:
    prompt = PromptFile()
    folder = prompt.write("Likes tea.").parent
    assert folder.is_dir()
    del prompt
    gc.collect()
    assert not folder.exists()
    reused = PromptFile()
    first = reused.write("one").parent
    reused.close()
    reused.close()  # a second close does nothing
    second = reused.write("two").parent  # a write after close makes a new folder
    assert not first.exists() and second.is_dir() and second != first
    reused.close()
    assert not second.exists()
