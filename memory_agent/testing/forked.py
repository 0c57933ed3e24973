"""Writer processes for the benchmarks, forked from one spawned launcher.

Why: a spawned writer imports the package, the benchmark script and, at its first write, Chroma,
onnxruntime and the tokenizer before it does anything: about a second of CPU per process, which
was most of what a benchmark's quick run paid for its writers. The launcher is spawned (a fresh
interpreter: no thread, no connection, nothing of the parent), imports all that once and forks
one writer per argument set. Each writer then opens its own stores and connections, as a process
of its own would; the launcher opens none, so a writer inherits none. Barriers and queues passed
in the arguments reach the writers as they would reach spawned ones (the launcher is spawned with
them, the writers inherit them by forking).
"""

from __future__ import annotations

import importlib
import multiprocessing
import sys
from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess

__all__ = ["start_forked"]

_SPAWN = multiprocessing.get_context("spawn")
_FORK = multiprocessing.get_context("fork")


def start_forked(
    target: Callable[..., None],
    argument_sets: Sequence[tuple[object, ...]],
    preload: Sequence[str] = (),
    writer_timeout: float | None = None,
) -> BaseProcess:
    """Start the launcher, which imports `preload` (module names), then forks a process running
    `target(*arguments)` per argument set and waits for them all (each for at most
    `writer_timeout` seconds, when given, so that a hung writer cannot keep the launcher alive).

    The returned launcher is alive while any writer is; after `join()`, its `exitcode` is 0 when
    every writer exited with 0, else 1 (the writers' exit codes are printed on its stderr)."""
    launcher = _SPAWN.Process(
        target=_fork_each, args=(target, list(argument_sets), list(preload), writer_timeout)
    )
    launcher.start()
    return launcher


def _fork_each(
    target: Callable[..., None],
    argument_sets: list[tuple[object, ...]],
    preload: list[str],
    writer_timeout: float | None,
) -> None:
    """In the launcher: import, fork the writers, wait for them, exit non-zero unless all
    succeeded."""
    for name in preload:
        importlib.import_module(name)
    writers = [_FORK.Process(target=target, args=arguments) for arguments in argument_sets]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=writer_timeout)
    codes = [writer.exitcode for writer in writers]
    if codes != [0] * len(writers):
        sys.exit(f"writer exit codes: {codes}")
