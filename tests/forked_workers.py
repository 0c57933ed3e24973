"""Worker processes for the concurrency tests, forked from one spawned launcher.

Why: a spawned process imports the package, and whatever the target's module imports, before it
runs: about a second of CPU per process (1.3 s with Chroma), which was most of what the
eight-process stress tests cost. The launcher is spawned (a fresh interpreter: no thread, no
connection, nothing of the pytest process), imports the target's module once and forks one worker
per argument set. Each worker then opens its own stores and connections, as a process of its own
would; the launcher opens none, so a worker inherits none.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess

__all__ = ["run_workers", "start_workers"]

SPAWN = multiprocessing.get_context("spawn")
FORK = multiprocessing.get_context("fork")

Target = Callable[..., None]


def start_workers(target: Target, argument_sets: Sequence[tuple[object, ...]]) -> BaseProcess:
    """Start the launcher, which forks a worker per argument set; join it, then check its
    `exitcode`: 0 when every worker exited with 0."""
    launcher = SPAWN.Process(target=_fork_each, args=(target, list(argument_sets)))
    launcher.start()
    return launcher


def run_workers(
    target: Target, argument_sets: Sequence[tuple[object, ...]], timeout: float = 330
) -> None:
    """Run `target` once per argument set, each in a process of its own, all at once."""
    launcher = start_workers(target, argument_sets)
    launcher.join(timeout=timeout)
    assert launcher.exitcode == 0, f"a worker failed (launcher exit code {launcher.exitcode})"


def _fork_each(target: Target, argument_sets: list[tuple[object, ...]]) -> None:
    """In the launcher: fork the workers, wait for them, exit non-zero unless all succeeded."""
    workers = [FORK.Process(target=target, args=arguments) for arguments in argument_sets]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    codes = [worker.exitcode for worker in workers]
    if codes != [0] * len(workers):
        sys.exit(f"worker exit codes: {codes}")
