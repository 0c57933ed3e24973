"""First load of the memory inspector (`memory-agent ui`) for an agent with 1,000 blocks and
100,000 archival passages.

Goal (issue 27): the first load of `/` and of `/agents/<id>` renders in under 1 s. The store is
seeded through the public API (`create_block`, `archival_memory_insert_many`, which validates,
journals, indexes keywords and writes vectors like any insert); the seeding time is printed too.
Then the real `memory-agent ui --no-browser --port 0` is started on it and each page is loaded
cold: the server's own time (the HTTP response, timed from the first request byte to the last
body byte, in a fresh server process) and a full load in headless Chromium (navigation start to
the load event, in a fresh server process again), when a browser can be driven here.

Vectors: the offline MiniLM embedding runs 31-70 texts/s on this 2-core machine, so 100,000
passages would take 25-50 minutes to embed; the seed passes a deterministic hashing embedding
(`HashEmbedding`, 384 dimensions like MiniLM) through the public `embedding_function=` instead.
Neither page embeds anything, so the figures do not depend on it. `--minilm` seeds with the real
model (slow).

Run: python bench/ui_first_load.py            (1,000 blocks, 100,000 passages)
     python bench/ui_first_load.py --quick    (50 blocks, 200 passages, one server process)
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_agent import MemoryManager, Settings  # noqa: E402
from memory_agent.testing.browser import REQUIRE_BROWSER, BrowserUnavailable, launch_chromium  # noqa: E402
from memory_agent.testing.ui_process import UiServer  # noqa: E402

AGENT = "bench-agent"
INSERT_BATCH = 5_000
"""Passages per `archival_memory_insert_many` call (each commits in chunks of its own)."""
GOAL_SECONDS = 1.0


class HashEmbedding:
    """A fast deterministic 384-dimension embedding: a unit vector seeded by the text's CRC-32.

    For seeding only; it carries no meaning, so vector search over it ranks at random."""

    dimensions = 384

    def __call__(self, input: list[str]) -> list[np.ndarray]:
        vectors = []
        for text in input:
            generator = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
            vector = generator.standard_normal(self.dimensions).astype(np.float32)
            vectors.append(vector / np.linalg.norm(vector))
        return vectors

    @staticmethod
    def name() -> str:
        return "bench-hash-384"


TOPICS = (
    "trip to Lisbon",
    "the garden shed",
    "quarterly taxes",
    "Marta's birthday",
    "the bike repair",
    "a Python refactor",
    "the violin lessons",
    "moving house",
    "the dentist",
    "a chess opening",
)


def block_label(number: int) -> str:
    """Labels that make a /memories tree: 20 folders of 50 blocks, a few nested one level more."""
    folder = f"projects/p{number % 20:02d}"
    if number % 7 == 0:
        folder += "/archive"
    return f"{folder}/note_{number:04d}"


def seed(settings: Settings, blocks: int, passages: int, *, minilm: bool) -> dict[str, float]:
    """Create the agent, its blocks and passages; seconds taken per part."""
    embedding = None if minilm else HashEmbedding()
    timings: dict[str, float] = {}
    with MemoryManager(agent_id=AGENT, settings=settings, embedding_function=embedding) as memory:
        started = time.perf_counter()
        for number in range(max(0, blocks - 2)):  # persona and human come with the agent
            memory.create_block(
                block_label(number),
                f"Block {number}: what I know about {TOPICS[number % 10]}.",
                limit=2000,
                in_prompt=number % 3 != 0,
            )
        timings["blocks"] = time.perf_counter() - started
        started = time.perf_counter()
        for start in range(0, passages, INSERT_BATCH):
            batch = [
                {
                    "content": f"Passage {n}: a note about {TOPICS[n % 10]}, fact number {n}.",
                    "tags": [f"topic{n % 10}"],
                }
                for n in range(start, min(passages, start + INSERT_BATCH))
            ]
            memory.archival_memory_insert_many(batch)
        timings["passages"] = time.perf_counter() - started
    return timings


def server_time(server: UiServer, path: str) -> tuple[float, int, int]:
    """Seconds from request to the last body byte, the status and the body's size."""
    request = urllib.request.Request(server.page(path))
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        body = response.read()
        status = response.status
    return time.perf_counter() - started, status, len(body)


def browser_time(browser: Any, server: UiServer, path: str) -> float:
    """Seconds from navigation start to the load event, in a fresh page of headless Chromium."""
    page = browser.new_page()
    try:
        page.goto(server.page(path), wait_until="load", timeout=120_000)
        return float(
            page.evaluate(
                "() => { const n = performance.getEntriesByType('navigation')[0];"
                " return (n.loadEventEnd - n.startTime) / 1000; }"
            )
        )
    finally:
        page.close()


def load() -> str:
    return " ".join(f"{figure:.2f}" for figure in os.getloadavg())


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--blocks", type=int, default=1000)
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument(
        "--minilm", action="store_true", help="seed vectors with the real MiniLM model (slow)"
    )
    parser.add_argument(
        "--database-url", help="seed and serve this PostgreSQL database instead of SQLite"
    )
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="seed and serve a throwaway local PostgreSQL server's database (needs the postgres "
        "extra)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: 50 blocks, 200 passages, one server for every load",
    )
    args = parser.parse_args()
    if args.quick:
        args.blocks, args.passages = 50, 200

    print(
        f"ui first load  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC  commit "
        f"{commit()}  "
        f"load average {load()} ({os.cpu_count()} cores)  "
        f"{'PostgreSQL' if args.postgres or args.database_url else 'SQLite'}"
    )
    cluster = None
    if args.postgres and not args.database_url:
        from memory_agent.testing.postgres_cluster import PostgresCluster

        cluster = PostgresCluster().start()
        args.database_url = cluster.database_url("ui_first_load")
    try:
        measure(args)
    finally:
        if cluster is not None:
            cluster.stop()


def measure(args: argparse.Namespace) -> None:
    """Seed, then time each page's first load on a fresh server."""
    with tempfile.TemporaryDirectory() as directory:
        environ = {"PERSIST_DIRECTORY": directory}
        if args.database_url:
            environ["MEMORY_DATABASE_URL"] = args.database_url
        settings = Settings.from_env(environ, env_file=None)
        timings = seed(settings, args.blocks, args.passages, minilm=args.minilm)
        print(
            f"seeded {args.blocks} blocks in {timings['blocks']:.1f} s, {args.passages} passages "
            "in "
            f"{timings['passages']:.1f} s ({args.passages / max(timings['passages'], 1e-9):.0f}/s, "
            f"{'MiniLM' if args.minilm else 'hashing'} vectors) through the public API"
        )

        store = (
            {"database_url": args.database_url}
            if args.database_url
            else {"storage_dir": Path(directory)}
        )
        # With a database URL the vectors still live in the storage dir: the server is told where.
        server_environ = {**os.environ, "PERSIST_DIRECTORY": directory}
        pages = ("/", f"/agents/{AGENT}")
        print(f"{'page':24} {'server s':>9} {'bytes':>9} {'browser s':>10}")
        with contextlib.ExitStack() as stack:
            # A fresh process per page and pass: a cold load. A quick run's figures are not read,
            # so it starts one server for all four loads (each start is a Python process).
            shared = (
                stack.enter_context(UiServer(**store, environ=server_environ))
                if args.quick
                else None
            )

            def cold() -> contextlib.AbstractContextManager[UiServer]:
                if shared is not None:
                    return contextlib.nullcontext(shared)
                return UiServer(**store, environ=server_environ)

            served: dict[str, tuple[float, int, int]] = {}
            for path in pages:
                with cold() as server:
                    served[path] = server_time(server, path)
            loaded: dict[str, float] = {}
            try:
                with launch_chromium() as browser:
                    for path in pages:
                        with cold() as server:
                            loaded[path] = browser_time(browser, server, path)
            except BrowserUnavailable as error:
                if os.environ.get(REQUIRE_BROWSER):
                    raise SystemExit(
                        f"a browser is required ({REQUIRE_BROWSER} is set): {error}"
                    ) from None
                print(f"(no browser figures: {error})")
        for path in pages:
            seconds, status, size = served[path]
            if status != 200:
                raise SystemExit(f"{path} answered {status}")
            browser_figure = f"{loaded[path]:>10.3f}" if path in loaded else f"{'-':>10}"
            verdict = (
                ""
                if args.quick
                else (
                    "  (goal < 1 s met)"
                    if max(seconds, loaded.get(path, 0)) < GOAL_SECONDS
                    else "  (goal < 1 s NOT met)"
                )
            )
            print(f"{path:24} {seconds:>9.3f} {size:>9} {browser_figure}{verdict}")
        print(f"load average at the end {load()}")


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(main, __file__)
