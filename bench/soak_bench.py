"""Soak: a conversation of real length through MemoryAwareAgent, the real SDK and CLI.

1,000 turns at the default 200,000-token window (trigger 0.8), mixing short chat, pasted logs of
10-20 kB (every third turn) and calls of a log tool whose results are 8-16 kB (every fifth),
against the local scripted Messages API server; the agent is reopened in the same working
directory (turn 250), in another one (turn 500) and after `memory-agent export` / `import` into
a new storage dir (turn 750). The last turn asks for the first turn's text through
`conversation_search`.

Printed: turns, compactions, the largest request against the trigger (the server's token count,
which is also the usage the agent calibrates on), the first request after each compaction
against the kept-window floor, latency of the first and last 100 non-compacting turns, process
RSS and open file descriptors, the stable-prefix share of consecutive requests (how much of the
previous request the next repeats verbatim, what a prompt cache reuses), and whether the first
turn was found at the end.

Goals (issue 10): every request under the trigger; last/first latency within 1.2x; RSS and
descriptors flat. Run: python bench/soak_bench.py [--turns 1000] [--quick]

On PostgreSQL (issue 17): `--postgres` runs the same soak on a throwaway local server (two
databases: the soak's, and the one the import restart imports into); `--database-url URL` uses an
existing database instead, with `--import-database-url URL` for the import restart (without it
that restart is left out).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from memory_agent.testing import ScriptedMessagesServer
from memory_agent.testing.postgres_cluster import PostgresCluster
from memory_agent.testing.soak import Restart, SoakConfig, TurnRecord, run_soak, summary_lines


@contextlib.contextmanager
def databases(args: argparse.Namespace) -> Iterator[tuple[str | None, str | None]]:
    """The soak's database URL and the import restart's (both None: SQLite in the storage dir)."""
    if not args.postgres:
        yield args.database_url, args.import_database_url
        return
    with PostgresCluster() as cluster:
        yield cluster.database_url("soak"), cluster.database_url("soak_imported")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="8 turns at a 16,000-token window, one restart of each kind",
    )
    parser.add_argument(
        "--no-restarts", action="store_true", help="one agent for the whole conversation"
    )
    backend = parser.add_mutually_exclusive_group()
    backend.add_argument(
        "--postgres", action="store_true", help="store on a throwaway local PostgreSQL server"
    )
    backend.add_argument(
        "--database-url", help="store in this PostgreSQL database (default: SQLite)"
    )
    parser.add_argument(
        "--import-database-url",
        help="with --database-url: the database the import restart "
        "imports into (without it, that restart is left out)",
    )
    args = parser.parse_args()
    # --quick is a smoke run of the script (a compaction, every restart kind; each of those starts
    # a CLI process, what a quick run pays for); the default suite's 58-turn soak on both
    # backends (tests/e2e/test_long_conversation_e2e.py) is the test.
    turns = 8 if args.quick else args.turns
    window = 16_000 if args.quick else None
    restarts: dict[int, Restart] = (
        {}
        if args.no_restarts
        else {turns // 4: "same-cwd", turns // 2: "other-cwd", 3 * turns // 4: "import"}
    )
    if args.database_url and not args.import_database_url:
        restarts = {turn: kind for turn, kind in restarts.items() if kind != "import"}
        print("no --import-database-url: the import restart is left out")
    began = time.perf_counter()

    def progress(turn: TurnRecord) -> None:
        if turn.compacted or turn.restarted or (turn.number + 1) % 100 == 0:
            what = "compacted" if turn.compacted else "restarted" if turn.restarted else ""
            print(
                f"  turn {turn.number + 1}: {turn.seconds * 1000:.0f} ms {what} "
                f"({time.perf_counter() - began:.0f} s)",
                flush=True,
            )

    with (
        tempfile.TemporaryDirectory() as directory,
        ScriptedMessagesServer() as server,
        databases(args) as (database_url, import_database_url),
    ):
        base = Path(directory)
        (base / "project").mkdir()
        (base / "elsewhere").mkdir()
        config = SoakConfig(
            turns=turns,
            storage_dir=base / "store",
            project_dir=base / "project",
            other_dir=base / "elsewhere",
            restarts=restarts,
            context_window=window,
            database_url=database_url,
            import_database_url=import_database_url,
        )
        result = await run_soak(server, config, progress=progress)
    print(
        f"soak of {turns} turns in {time.perf_counter() - began:.0f} s"
        + (f" (window {window:,} tokens)" if window else " (default 200,000-token window)")
        + (" on PostgreSQL" if database_url else " on SQLite")
    )
    for line in summary_lines(result):
        print(line)


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(lambda: asyncio.run(main()), __file__)
