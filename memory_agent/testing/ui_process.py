"""The real `memory-agent ui` in a child process, for browser tests and the first-load benchmark.

The server is started exactly as a user starts it (`memory-agent ui --no-browser --port 0`, on a
storage dir or a database URL) and tells where it listens in one line on its standard output,
`memory-agent ui: serving http://HOST:PORT/` (with `?token=...` when it requires a token); this
module waits for that line, keeps the URL, and on `stop()` interrupts the process as Ctrl-C would
(then terminates, then kills, if it does not end). Standard library only.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["SERVING_LINE", "UiServer", "UiServerFailed"]

STARTUP_SECONDS = 60.0
STOP_SECONDS = 10.0
SERVING_LINE = re.compile(r"^memory-agent ui: serving (?P<url>https?://\S+)\s*$")
"""The one line the server prints once it accepts connections."""

ENTRY = [sys.executable, "-c", "from memory_agent.cli import main; main()"]
"""What the installed `memory-agent` script runs (without depending on the PATH)."""


class UiServerFailed(RuntimeError):
    """`memory-agent ui` exited or never printed its URL; the message carries its output."""


class UiServer:
    """`start()` runs `memory-agent ui` and waits for its URL; `stop()` ends it.

    `storage_dir` or `database_url` says which store; `extra` adds arguments (`--read-only`).
    `url` is the full URL printed (with its token, if any); `base` is scheme://host:port.
    """

    def __init__(
        self,
        *,
        storage_dir: Path | None = None,
        database_url: str | None = None,
        extra: Sequence[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.argv = [*ENTRY, "ui", "--no-browser", "--port", "0"]
        if storage_dir is not None:
            self.argv += ["--storage-dir", str(storage_dir)]
        if database_url is not None:
            self.argv += ["--database-url", database_url]
        self.argv += list(extra)
        self.environ = dict(os.environ if environ is None else environ)
        self.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
        self.url = ""
        self.output: list[str] = []
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    @property
    def base(self) -> str:
        """scheme://host:port of the server, without path or token."""
        found = re.match(r"https?://[^/?#]+", self.url)
        return found.group(0) if found else ""

    @property
    def token(self) -> str | None:
        """The access token in the printed URL, when the server requires one."""
        found = re.search(r"[?&]token=([^&#]+)", self.url)
        return found.group(1) if found else None

    def page(self, path: str) -> str:
        """The absolute URL of `path` (which starts with '/') on this server, carrying the access
        token when the server requires one."""
        if self.token is None:
            return self.base + path
        return f"{self.base}{path}{'&' if '?' in path else '?'}token={self.token}"

    def start(self) -> UiServer:
        self._process = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.environ,
            start_new_session=True,
        )
        try:
            self.url = self._wait_for_url(self._process)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for_url(self, process: subprocess.Popen[str]) -> str:
        """Read the server's output on a thread of its own (so a chatty server never blocks on a
        full pipe) until the serving line, the process's exit or the deadline."""
        found: queue.Queue[str] = queue.Queue()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                self.output.append(line.rstrip("\n"))
                match = SERVING_LINE.match(line.strip())
                if match:
                    found.put(match.group("url"))
            found.put("")

        self._reader = threading.Thread(target=read, name="memory-agent-ui-output", daemon=True)
        self._reader.start()
        try:
            url = found.get(timeout=STARTUP_SECONDS)
        except queue.Empty:
            url = None
        if url:
            return url
        process.poll()
        said = "\n".join(self.output[-30:])
        if url == "" or process.returncode is not None:
            raise UiServerFailed(
                f"memory-agent ui exited ({process.returncode}) before serving:\n{said}"
            )
        raise UiServerFailed(
            f"memory-agent ui printed no URL within {STARTUP_SECONDS:.0f} s:\n{said}"
        )

    def stop(self) -> int | None:
        """Interrupt the server (SIGINT, as Ctrl-C); its exit code, or None if it had to be
        killed."""
        process, self._process = self._process, None
        if process is None:
            return None
        code: int | None = None
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                code = process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.terminate()
                try:
                    process.wait(timeout=STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        else:
            code = process.returncode
        if self._reader is not None:
            self._reader.join(timeout=STOP_SECONDS)
        return code

    def __enter__(self) -> UiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
