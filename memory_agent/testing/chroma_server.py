"""A throwaway Chroma server for tests and benchmarks: `chroma run` from the chromadb wheel.

Archival memory talks to a Chroma server through `chromadb.HttpClient` when `CHROMA_HOST` is set
(agents on many hosts share it); tests that exercise that path run the real server, on 127.0.0.1
at a free port, with its data in a directory the caller owns, and telemetry off. Standard library
only: the server is a separate process, started from the `chroma` command beside this Python.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

__all__ = ["ChromaServer", "ChromaUnavailable", "chroma_executable"]

STARTUP_SECONDS = 60


class ChromaUnavailable(RuntimeError):
    """No Chroma server can be started here (the `chroma` command is missing): the reason says
    why."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def chroma_executable() -> str:
    """The `chroma` command of this Python's environment (then PATH's)."""
    found = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if found is None:
        raise ChromaUnavailable("the `chroma` command (from the chromadb wheel) is not installed")
    return found


class ChromaServer:
    """`start()` runs `chroma run` and waits for its heartbeat; `stop()` ends it. `port` is
    fixed at construction, so a stopped server can be started again on the same address."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = Path(path)
        self.host = "127.0.0.1"
        self.port = port or _free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ChromaServer:
        self._process = subprocess.Popen(
            [
                chroma_executable(),
                "run",
                "--path",
                str(self.path),
                "--host",
                self.host,
                "--port",
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        try:
            self._wait_for_heartbeat(self._process)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for_heartbeat(self, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ChromaUnavailable(f"chroma run exited with {process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.05)  # a refused connection costs nothing; the server is up sooner
        raise ChromaUnavailable(
            f"chroma run did not answer on port {self.port} within {STARTUP_SECONDS}s"
        )

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
