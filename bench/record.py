"""Keep what a full benchmark run printed, with when, on what code and under what load it ran.

Each bench script ends with `run_recorded(main, __file__)`: the run's standard output is shown
as usual and, for a full run (no `--quick`, which the test suite uses, nor a script's internal
`--child` runs) that ends with status 0, also stored as `bench/results/<script>.json` with the
date (UTC), the commit (`-dirty` when the tree had uncommitted changes), the load average before
and after, the machine (cores, architecture) and the command line. `python bench/render_results.py`
turns those files into docs/benchmarks.md, the one page that states benchmark figures; a test
fails when the page and the files disagree. Runs accumulate, newest first: a figure is never
overwritten by a later one, so a regression shows beside what it regressed from.

Not a benchmark itself (tests/bench/test_bench_quick.py leaves this file and the renderer out).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
NOT_RECORDED_FLAGS = ("--quick", "--child")
"""A run with one of these on its command line is a smoke test or a worker: nothing is stored."""


def _commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def _load() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def machine() -> str:
    return f"{os.cpu_count()} cores, {platform.machine()}, {platform.system()}"


def record(
    name: str,
    figures: Mapping[str, Any] | None = None,
    *,
    output: str | None = None,
    quick: bool = False,
    command: str | None = None,
    load_before: str | None = None,
    results: Path = RESULTS,
) -> Path | None:
    """Store one run of the bench `name`: its `figures` (label -> value) and/or its printed
    `output`.

    A quick run is checked (the figures must be JSON) and not stored; returns the file written.
    """
    run: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "load": f"{load_before} before, {_load()} after" if load_before else _load(),
        "machine": machine(),
        "command": command or f"python bench/{name}.py",
        "figures": dict(figures or {}),
        "output": output,
    }
    json.dumps(run)  # a figure JSON cannot hold fails here, in quick runs too
    if quick:
        return None
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{name}.json"
    existing = (
        json.loads(path.read_text(encoding="utf-8"))
        if path.exists()
        else {"script": f"bench/{name}.py"}
    )
    existing["runs"] = [run, *existing.get("runs", [])]
    path.write_text(json.dumps(existing, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


class _Tee(io.TextIOBase):
    """Standard output as usual, and a copy kept."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()


def run_recorded(main: Callable[[], Any], script: str) -> Any:
    """Run a bench script's `main` and record its output when it is a full run that succeeded."""
    name = Path(script).stem
    arguments = sys.argv[1:]
    if any(flag in arguments for flag in NOT_RECORDED_FLAGS):
        return main()
    load_before = _load()
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        status = main()
    finally:
        sys.stdout = tee.stream
    if status in (None, 0):
        written = record(
            name,
            output=tee.copy.getvalue(),
            load_before=load_before,
            command=" ".join(["python", f"bench/{name}.py", *arguments]),
        )
        print(
            f"(recorded in {written.relative_to(ROOT) if written else '-'}; "
            "python bench/render_results.py updates docs/benchmarks.md)"
        )
    return status
