"""Writer processes for the benchmarks and the concurrency tests, forked from one launcher.

Why: a spawned writer imports the package, the benchmark script and, at its first write, Chroma,
onnxruntime and the tokenizer before it does anything: about a second of CPU per process, which
was most of what a benchmark's quick run paid for its writers. The launcher imports all that once
and forks one writer per argument set. Each writer then opens its own stores and connections, as a
process of its own would; the launcher opens none, so a writer inherits none. Barriers and queues
passed in the arguments reach the writers as they would reach spawned ones.

The launcher itself comes from multiprocessing's fork server (one fresh interpreter per calling
process, started at the first launch, which imports `SERVER_PRELOAD` once): a spawned launcher
paid those imports again at every launch, and a test run or a benchmark launches several. The
fork server has no thread, connection or store of the caller, as a spawned process has none. It
keeps the environment it started with, so each launch takes the caller's current one along.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.process import BaseProcess

__all__ = ["SERVER_PRELOAD", "start_forked"]

_SERVER = multiprocessing.get_context("forkserver")
_FORK = multiprocessing.get_context("fork")

SERVER_PRELOAD = (
    "memory_agent",
    "memory_agent.manager",
    "chromadb",
    "chromadb.api.rust",
    "onnxruntime",
    "tokenizers",
)
"""What the fork server imports once: what a writer of the package imports by its first write."""


def start_forked(
    target: Callable[..., None],
    argument_sets: Sequence[tuple[object, ...]],
    preload: Sequence[str] = (),
    writer_timeout: float | None = None,
) -> BaseProcess:
    """Start the launcher, which imports `preload` (module names) if the fork server has not,
    then forks a process running `target(*arguments)` per argument set and waits for them all
    (each for at most `writer_timeout` seconds, when given, so that a hung writer cannot keep
    the launcher alive).

    The returned launcher is alive while any writer is; after `join()`, its `exitcode` is 0 when
    every writer exited with 0, else 1 (the writers' exit codes are printed on its stderr)."""
    _SERVER.set_forkserver_preload([*SERVER_PRELOAD, *preload])  # read when the server starts
    launcher = _SERVER.Process(
        target=_fork_each,
        args=(target, list(argument_sets), list(preload), writer_timeout, dict(os.environ)),
    )
    launcher.start()
    return launcher


def _fork_each(
    target: Callable[..., None],
    argument_sets: list[tuple[object, ...]],
    preload: list[str],
    writer_timeout: float | None,
    environ: Mapping[str, str],
) -> None:
    """In the launcher: take the caller's environment, import, fork the writers, wait for them,
    exit non-zero unless all succeeded."""
    os.environ.clear()
    os.environ.update(environ)
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
