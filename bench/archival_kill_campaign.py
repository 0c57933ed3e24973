"""kill -9 campaign on `archival_memory_insert_many`: is every acknowledged passage kept, once?

A child process opens a MemoryManager on embedded Chroma and inserts passages in batches through
`archival_memory_insert_many`, printing each batch's ids once the call has returned (an
acknowledged write). The parent SIGKILLs it at a random moment, then checks the storage dir the
way a restarted agent would: open archival memory (which reconciles), compare both stores, and
if they still disagree or Chroma cannot be read, run the doctor's repair (`rebuild_vectors`).
Then it starts a new child from the first batch not acknowledged. At the end it prints the kills,
acknowledged writes, passages lost (acknowledged but absent from SQLite or from Chroma after
reconcile/repair), duplicated (two rows or two vectors for one text) and repairs needed.

On PostgreSQL (`--postgres` starts a throwaway cluster, `--database-url` names a database) the
rows live on the server and the vectors in the storage dir's embedded Chroma, so a kill lands
between a server-side transaction and a local vector write; the checks are the same.

The embedding is by default the tests' hashing one widened to 384 dimensions (no model: the
campaign is about storage, and a fast embedding makes Chroma's writes, where a kill can land, the
bulk of the time); `--embedding default` uses the manager's own model instead.

    python bench/archival_kill_campaign.py [--kills 40] [--passages 10000] [--batch 100] [--seed 11]
    python bench/archival_kill_campaign.py --quick      # 3 kills, 400 passages
    python bench/archival_kill_campaign.py --postgres   # the same on a throwaway PostgreSQL server
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "archival"))

from archival_helpers import HashEmbedding

from memory_agent import MemoryManager, Settings
from memory_agent.archival import ArchivalMemory, VectorConfig
from memory_agent.archival.rebuild import rebuild_vectors
from memory_agent.store.backend import open_store
from memory_agent.testing.postgres_cluster import PostgresCluster

AGENT = "writer"
DATABASE_URL = "MEMORY_DATABASE_URL"
"""How the child learns the database (the environment, so a password never shows in `ps`)."""


class WideHashEmbedding(HashEmbedding):
    """The tests' hashing embedding repeated to MiniLM's 384 dimensions (HNSW work of a real
    size)."""

    def __call__(self, input: Any) -> Any:
        return [vector * 6 for vector in super().__call__(input)]

    @staticmethod
    def name() -> str:
        return "test-hash-384"


EMBEDDINGS: dict[str, Callable[[], Any]] = {
    "hash384": WideHashEmbedding,
    "hash": HashEmbedding,
    "default": lambda: None,  # the manager's own default embedding function (a real model)
}


def content(number: int) -> str:
    return f"kill campaign passage {number} about topic {number % 97} and place {number % 13}"


# ----- the child: inserts until killed -------------------------------------------------------


def child(storage: Path, start: int, total: int, batch: int, embedding: str) -> None:
    settings = Settings(
        persist_directory=storage, agent_id=AGENT, database_url=os.environ.get(DATABASE_URL) or None
    )
    with MemoryManager(
        agent_id=AGENT, settings=settings, embedding_function=EMBEDDINGS[embedding]()
    ) as memory:
        memory.reconcile_archival()  # open (and reconcile) before reporting ready
        print("ready", flush=True)
        for first in range(start, total, batch):
            numbers = range(first, min(first + batch, total))
            ids = memory.archival_memory_insert_many([content(n) for n in numbers])
            print("ack", first, ",".join(ids), flush=True)
    print("done", flush=True)


# ----- the parent: kills, checks, repairs ------------------------------------------------------


@dataclass
class Tally:
    kills: int = 0
    acknowledged: dict[int, str] = field(default_factory=dict)
    lost: set[int] = field(default_factory=set)
    duplicated: int = 0
    repairs: int = 0
    reconcile_errors: list[str] = field(default_factory=list)


def run_child(
    storage: Path,
    start: int,
    total: int,
    batch: int,
    kill_after: float | None,
    tally: Tally,
    embedding: str,
    database_url: str | None,
) -> bool:
    """One child run; returns True if it finished on its own (not killed)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        DATABASE_URL: database_url or "",
    }
    process = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--child",
            str(storage),
            str(start),
            str(total),
            str(batch),
            embedding,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_read_lines, args=(process, lines), daemon=True)
    reader.start()
    killed = False
    deadline: float | None = None
    while True:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            process.send_signal(signal.SIGKILL)
            killed, deadline = True, None
            continue
        if line is None:
            break
        if line == "ready" and kill_after is not None and not killed:
            deadline = time.monotonic() + kill_after
        elif line.startswith("ack "):
            _, first, ids = line.split(" ", 2)
            for offset, passage_id in enumerate(ids.split(",")):
                tally.acknowledged[int(first) + offset] = passage_id
    process.wait()
    if killed and process.returncode == -signal.SIGKILL:
        tally.kills += 1
        return False
    return process.returncode == 0


def _read_lines(process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def verify(storage: Path, tally: Tally, embedding: str, database_url: str | None) -> None:
    """Reopen as a restarted agent would; repair if reconcile cannot make the stores agree."""
    with open_store(storage, database_url) as db:
        archival = ArchivalMemory(
            db, VectorConfig(path=storage / "chroma"), EMBEDDINGS[embedding]()
        )
        try:
            healthy = _reconciled(archival, tally)
            if not healthy:
                tally.repairs += 1
                rebuilt = rebuild_vectors(archival, None)
                archival = ArchivalMemory(
                    db, VectorConfig(path=storage / "chroma"), EMBEDDINGS[embedding]()
                )
                if not rebuilt.reconcile.ok or not _reconciled(archival, tally):
                    raise SystemExit(f"repair failed: {rebuilt}")
            _count_losses(archival, tally)
        finally:
            archival.close()


def _reconciled(archival: ArchivalMemory, tally: Tally) -> bool:
    try:
        report = archival.reconcile(AGENT)
        if not report.ok:
            tally.reconcile_errors.extend(report.errors[:1])
            return False
        with archival.db.reading() as conn:
            stored = {
                row[0]
                for row in conn.execute(
                    "SELECT passage_id FROM passages WHERE agent_id = ?", (AGENT,)
                )
            }
        vectors = archival.index.store.ids(AGENT)
        return vectors == stored and archival.index.store.count(AGENT) == len(stored)
    except Exception as error:  # Chroma itself unreadable: what the repair is for
        tally.reconcile_errors.append(f"{type(error).__name__}: {str(error)[:120]}")
        return False


def _count_losses(archival: ArchivalMemory, tally: Tally) -> None:
    with archival.db.reading() as conn:
        rows = conn.execute(
            "SELECT passage_id, content FROM passages WHERE agent_id = ?", (AGENT,)
        ).fetchall()
        tally.duplicated = int(
            conn.execute(
                "SELECT COUNT(*) - COUNT(DISTINCT content) FROM passages WHERE agent_id = ?",
                (AGENT,),
            ).fetchone()[0]
        )
    by_id = {row[0]: row[1] for row in rows}
    vectors = archival.index.store.ids(AGENT)
    tally.duplicated += max(0, archival.index.store.count(AGENT) - len(vectors))
    tally.lost = {
        number
        for number, passage_id in tally.acknowledged.items()
        if by_id.get(passage_id) != content(number) or passage_id not in vectors
    }


def campaign(
    kills: int,
    passages: int,
    batch: int,
    seed: int,
    storage: Path,
    embedding: str,
    database_url: str | None = None,
) -> Tally:
    """Kill at random moments spread so that the kills cover the whole run of `passages` (rows in
    SQLite in `storage`, or in the PostgreSQL database at `database_url`)."""
    rng = random.Random(seed)
    tally = Tally()
    started = time.monotonic()
    rate = 300.0  # acknowledged passages per second after 'ready'; re-estimated after every run
    while tally.kills < kills:
        start = _first_unacknowledged(tally, batch, passages)
        if start >= passages:
            break
        window = 0.8 * (passages - start) / (kills - tally.kills) / rate
        kill_after = rng.uniform(0.0, window)
        before = len(tally.acknowledged)
        run_child(storage, start, passages, batch, kill_after, tally, embedding, database_url)
        if kill_after > 0.2 and len(tally.acknowledged) > before:
            rate = 0.5 * rate + 0.5 * (len(tally.acknowledged) - before) / kill_after
        verify(storage, tally, embedding, database_url)
        print(
            f"kill {tally.kills:3d} at {kill_after:5.2f} s: {len(tally.acknowledged):6d} "
            "acknowledged, "
            f"lost {len(tally.lost)}, repairs {tally.repairs}  ({time.monotonic() - started:.0f} "
            "s)",
            flush=True,
        )
    start = _first_unacknowledged(tally, batch, passages)
    if start < passages:  # finish the job without killing, then check once more
        run_child(storage, start, passages, batch, None, tally, embedding, database_url)
        verify(storage, tally, embedding, database_url)
    return tally


def _first_unacknowledged(tally: Tally, batch: int, passages: int) -> int:
    for first in range(0, passages, batch):
        if first not in tally.acknowledged:
            return first
    return passages


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--embedding",
        choices=sorted(EMBEDDINGS),
        default="hash384",
        help="hash384 (default): fast hashing, 384 dimensions; default: the manager's own model",
    )
    parser.add_argument("--quick", action="store_true", help="3 kills, 400 passages")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--database-url", help="an empty PostgreSQL database to keep the rows in (default: SQLite)"
    )
    where.add_argument(
        "--postgres", action="store_true", help="keep the rows on a throwaway PostgreSQL cluster"
    )
    args = parser.parse_args()
    kills, passages = (3, 400) if args.quick else (args.kills, args.passages)
    cluster = PostgresCluster().start() if args.postgres else None
    database_url = cluster.database_url("kill") if cluster else args.database_url
    try:
        with tempfile.TemporaryDirectory(prefix="kill-campaign-") as directory:
            storage = Path(directory) / "store"
            started = time.monotonic()
            tally = campaign(
                kills, passages, args.batch, args.seed, storage, args.embedding, database_url
            )
            elapsed = time.monotonic() - started
    finally:
        if cluster:
            cluster.stop()
    print()
    print(f"rows in:               {'PostgreSQL' if database_url else 'SQLite'}")
    print(f"kills:                 {tally.kills}")
    print(f"acknowledged passages: {len(tally.acknowledged)} of {passages}")
    print(f"lost:                  {len(tally.lost)}")
    print(f"duplicated:            {tally.duplicated}")
    print(f"repairs needed:        {tally.repairs}")
    if tally.reconcile_errors:
        print(f"first store error:     {tally.reconcile_errors[0]}")
    print(f"elapsed:               {elapsed:.0f} s")
    if tally.lost or tally.duplicated:
        raise SystemExit(1)


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(main, __file__)
