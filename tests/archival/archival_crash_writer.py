"""Child process of the crash test: inserts passages one by one and prints each id when done.

Run as: python archival_crash_writer.py <storage_dir> <count>. Each line is "<n> <passage_id>",
printed (and flushed) only after `insert` returned, so every printed id is a completed insert.
The store is the storage dir's SQLite file, or PostgreSQL when MEMORY_DATABASE_URL is set.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from archival_helpers import HashEmbedding  # noqa: E402

from memory_agent.archival import ArchivalMemory, VectorConfig  # noqa: E402
from memory_agent.store.backend import open_store  # noqa: E402

AGENT = "writer"


def content(number: int) -> str:
    return f"crash test passage {number} about topic {number % 17}"


def main() -> None:
    storage, count = Path(sys.argv[1]), int(sys.argv[2])
    db = open_store(storage, os.environ.get("MEMORY_DATABASE_URL"))
    archival = ArchivalMemory(db, VectorConfig(path=storage / "chroma"), HashEmbedding())
    print("ready", flush=True)
    for number in range(count):
        passage_id = archival.insert(AGENT, content(number))
        print(number, passage_id, flush=True)


if __name__ == "__main__":
    main()
