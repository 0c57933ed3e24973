"""A Python process that imports the heavy packages once and forks a fresh child per script.

Why: every bench script's `--quick` run, and every run of an example, used to start its own
interpreter, and 1-3 s of CPU of each went on importing anthropic, the Agent SDK, Chroma and
onnxruntime before the script did anything. The suite runs dozens of them. Here one server
process imports those packages, then for each request forks a child that runs the script as
`__main__` with its own argv, working directory, environment, input and output files, as
`python script args` would, minus the imports. The child's exit status is the script's.

Run as a program it is the server (reading one JSON request per line on stdin); imported, it
gives the client, `WarmInterpreter`. Only what is imported (and tiktoken's ranks) is shared:
nothing the preload does starts a thread, leaves a file open or reads the environment a script
sets (the server is started with the same environment as the scripts, but for HOME).
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

PRELOAD = (
    "numpy",
    "anthropic",
    "claude_agent_sdk",
    "chromadb",
    "chromadb.api.rust",
    "onnxruntime",
    "tiktoken",
    "compaction.tokens",
    "memory_agent",
    "memory_agent.agent",
    "memory_agent.manager",
    "memory_agent.cli",
)
"""Imported once by the server; each is what several bench scripts import first thing."""
OPTIONAL_PRELOAD = ("psycopg", "sqlcipher3")
"""Imported when installed (the `postgres` and `encryption` extras)."""
WARM_CALLS = (("compaction.tokens", "load_encoding"),)
"""Called once after the imports: data that every script counting tokens loads first
(tiktoken's ranks, about 0.16 s of CPU), which the function keeps for the rest of the process."""


def _run_child(request: Mapping[str, Any]) -> int:
    """In the forked child: become `python <script> <args>` and return its exit status."""
    script = str(request["script"])
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in (
        (0, request["stdin"] or os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = [script, *request["args"]]
    sys.path[0] = str(Path(script).resolve().parent)
    random.seed()
    main = types.ModuleType("__main__")
    main.__file__ = script
    # multiprocessing (imported by the preload) aliased `__mp_main__` to the server's own
    # `__main__`; a script's spawned workers pickle their classes against the script's.
    sys.modules["__main__"] = sys.modules["__mp_main__"] = main
    try:
        exec(compile(Path(script).read_bytes(), script, "exec"), main.__dict__)
        status = 0
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            status = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    return status


def serve(preload: Sequence[str]) -> None:
    """The server loop: import, then fork one child per request and report its status."""
    for name in preload:
        __import__(name)
    for name in OPTIONAL_PRELOAD if preload else ():
        try:
            __import__(name)
        except ImportError:
            pass
    for module, function in WARM_CALLS if preload else ():
        getattr(importlib.import_module(module), function)()
    # The imported objects are left out of the children's collections: a collection writes to
    # every object it visits, so each child copied most of the server's heap page by page.
    # tests/bench/test_bench_quick.py and tests/examples: 97.3, 108.4 and 105.6 s of CPU without,
    # 93.3, 97.6 and 95.3 s with (all processes of the runs, 2 quiet cores).
    gc.collect()
    gc.freeze()
    if threading.active_count() != 1:
        raise SystemExit("the preload started a thread: forking it would not be safe")
    requests = sys.stdin
    replies = sys.stdout
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in requests:
        request = json.loads(line)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                status = _run_child(request)
            finally:
                os._exit(status)
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, wait_status, usage = os.wait4(pid, 0)
        status = os.waitstatus_to_exitcode(wait_status)
        cpu_seconds = usage.ru_utime + usage.ru_stime
        replies.write(json.dumps({"status": status, "cpu_seconds": cpu_seconds}) + "\n")
        replies.flush()


@dataclass(frozen=True)
class ScriptRun:
    """What a finished script left: its status, output, and the CPU it and its children used."""

    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float


class WarmInterpreter:
    """Client: start the server once, then run scripts in it one at a time."""

    def __init__(
        self, environment: Mapping[str, str], home: Path, preload: Sequence[str] = PRELOAD
    ) -> None:
        self._process = subprocess.Popen(
            [sys.executable, __file__, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**environment, "HOME": str(home)},
        )
        self._pending = b""
        self._read(timeout=120)

    def _read(self, timeout: float) -> dict[str, Any]:
        """The server's next answer line. The pipe is read here, not through a buffered file, so
        that a line already read ahead is never waited for."""
        stdout: IO[bytes] = self._process.stdout  # type: ignore[assignment]
        # poll, not select: a pytest worker may hold more than FD_SETSIZE (1,024) descriptors
        waiting = select.poll()
        waiting.register(stdout, select.POLLIN)
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not waiting.poll(remaining * 1000):
                raise TimeoutError(f"no answer from the warm interpreter within {timeout} s")
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"the warm interpreter exited ({self._process.wait()})")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def run(
        self,
        script: Path,
        args: list[str],
        *,
        cwd: Path,
        environment: Mapping[str, str],
        output_dir: Path,
        timeout: float,
        stdin: str = "",
    ) -> ScriptRun:
        """Run `script args` as a fresh process would, `stdin` as its input; its output is read
        back from files in `output_dir` (outside `cwd`, which the script may list)."""
        stdout_path, stderr_path = output_dir / "stdout", output_dir / "stderr"
        stdin_path = output_dir / "stdin"
        if stdin:
            stdin_path.write_text(stdin, encoding="utf-8")
        request = {
            "script": str(script),
            "args": args,
            "cwd": str(cwd),
            "env": dict(environment),
            "stdout": str(stdout_path),
            "stderr": str(stderr_path),
            "stdin": str(stdin_path) if stdin else "",
        }
        stdin: IO[bytes] = self._process.stdin  # type: ignore[assignment]
        stdin.write(json.dumps(request).encode() + b"\n")
        stdin.flush()
        pid = int(self._read(timeout=30)["pid"])
        try:
            finished = self._read(timeout=timeout)
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            self._read(timeout=30)
            raise
        output = stdout_path.read_text(encoding="utf-8", errors="replace")
        errors = stderr_path.read_text(encoding="utf-8", errors="replace")
        stdout_path.unlink()
        stderr_path.unlink()
        return ScriptRun(int(finished["status"]), output, errors, float(finished["cpu_seconds"]))

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


if __name__ == "__main__":
    serve(sys.argv[1:])
