"""Worker processes for the concurrency tests, forked from one launcher
(`memory_agent.testing.forked`, which the benchmarks' writers use too).

Why: a spawned process imports the package, and whatever the target's module imports, before it
runs: about a second of CPU per process (1.3 s with Chroma), which was most of what the
eight-process stress tests cost. Each worker opens its own stores and connections, as a process of
its own would; the launcher opens none, so a worker inherits none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess

from memory_agent.testing.forked import start_forked

__all__ = ["run_workers", "start_workers"]

Target = Callable[..., None]
WORKER_TIMEOUT_S = 300
"""How long the launcher waits for each worker: a hung one fails the test instead of hanging it."""


def start_workers(target: Target, argument_sets: Sequence[tuple[object, ...]]) -> BaseProcess:
    """Start the launcher, which forks a worker per argument set; join it, then check its
    `exitcode`: 0 when every worker exited with 0."""
    return start_forked(target, argument_sets, writer_timeout=WORKER_TIMEOUT_S)


def run_workers(
    target: Target, argument_sets: Sequence[tuple[object, ...]], timeout: float = 330
) -> None:
    """Run `target` once per argument set, each in a process of its own, all at once."""
    launcher = start_workers(target, argument_sets)
    launcher.join(timeout=timeout)
    assert launcher.exitcode == 0, f"a worker failed (launcher exit code {launcher.exitcode})"
