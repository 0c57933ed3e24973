"""`memory-agent ui` as a user runs it: a real process, one line saying where, a real socket."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.usefixtures("backend")

LINE = re.compile(r"memory-agent ui: serving (http://([0-9.]+):(\d+)/)(\?token=([A-Za-z0-9_-]+))?")


def _start(storage: Path, *args: str, browser: Path | None = None) -> subprocess.Popen[str]:
    """The command in a process of its own; with `browser`, that program stands in for the browser
    (Python's webbrowser runs $BROWSER with the address), else --no-browser."""
    command = [
        sys.executable,
        "-c",
        "from memory_agent.cli import main; main()",
        "--storage-dir",
        str(storage),
        "ui",
        "--port",
        "0",
        *([] if browser else ["--no-browser"]),
        *args,
    ]
    env = {**os.environ, "BROWSER": str(browser)} if browser else dict(os.environ)
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _first_line(process: subprocess.Popen[str], timeout: float = 60) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    # A selector, not select.select: in a long suite the pipe's descriptor can exceed select's 1024.
    with selectors.DefaultSelector() as watch:
        watch.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if watch.select(timeout=0.2):
                return process.stdout.readline().rstrip("\n")
            if process.poll() is not None:
                break
    process.kill()
    raise AssertionError(
        f"no line from memory-agent ui; stderr: {process.communicate()[1][-2000:]}"
    )


@pytest.fixture
def stop() -> Iterator[list[subprocess.Popen[str]]]:
    """The processes a test started, each stopped with Ctrl-C afterwards: one that keeps serving
    through it fails the test (a Ctrl-C right after the line used to be lost)."""
    started: list[subprocess.Popen[str]] = []
    yield started
    kept_serving = []
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                kept_serving.append(process.args)
    assert not kept_serving, f"memory-agent ui kept serving after Ctrl-C: {kept_serving}"


def test_it_creates_the_storage_dir_prints_one_line_and_serves_read_only(
    tmp_path: Path, stop: list[subprocess.Popen[str]]
) -> None:
    storage = tmp_path / "new-store"
    opened, closed = tmp_path / "opened.txt", tmp_path / "closed"
    browser = tmp_path / "browser.sh"
    # Like a browser started from $BROWSER, it stays until closed (up to 60 s): the inspector must
    # serve meanwhile, not wait for it to exit.
    browser.write_text(
        f'#!/bin/sh\necho "$1" > {opened}\n'
        f"i=0; while [ ! -e {closed} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n"
    )
    browser.chmod(0o755)
    process = _start(storage, "--read-only", browser=browser)
    stop.append(process)
    line = _first_line(process)
    found = LINE.fullmatch(line)
    assert found and found.group(2) == "127.0.0.1" and found.group(4) is None, line
    assert storage.is_dir() or os.environ.get("MEMORY_DATABASE_URL")
    deadline = time.monotonic() + 30
    while not opened.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert opened.read_text().strip() == found.group(
        1
    )  # the browser was sent to the printed address
    with httpx.Client(base_url=found.group(1), timeout=10) as client:
        agents = client.get("/")  # the browser is still open
        assert agents.status_code == 200 and 'data-page="agents"' in agents.text
        agent = re.search(r'<tr data-agent="([^"]+)">', agents.text)
        assert agent is not None
        memory_page = client.get(f"/agents/{agent.group(1)}/blocks/persona")
        assert memory_page.status_code == 200 and '<form method="post"' not in memory_page.text
        refused = client.post(f"/agents/{agent.group(1)}/blocks/persona", data={"value": "x"})
        assert refused.status_code == 403
        rebound = client.get("/", headers={"host": f"attacker.example:{found.group(3)}"})
        assert rebound.status_code == 400
    closed.touch()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=15)
    assert out == ""  # nothing after the one line
    assert process.returncode == 0 and "Aborted" not in err, (
        process.returncode,
        err[-500:],
    )  # Ctrl-C: a quiet stop


def test_a_store_with_agents_gets_no_new_one(
    tmp_path: Path, stop: list[subprocess.Popen[str]]
) -> None:
    from backends import backend_environ

    from memory_agent import MemoryManager, Settings

    settings = Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(tmp_path / "store")}), env_file=None
    )
    with MemoryManager(
        agent_id="only-one", settings=settings
    ) as memory:  # named, so not the default agent
        before = memory.list_agents()
    process = _start(tmp_path / "store")
    stop.append(process)
    assert LINE.fullmatch(_first_line(process))
    with MemoryManager(agent_id="only-one", settings=settings) as memory:
        assert memory.list_agents() == before


def test_off_loopback_it_makes_and_prints_an_access_token(
    tmp_path: Path, stop: list[subprocess.Popen[str]]
) -> None:
    process = _start(tmp_path / "store", "--host", "0.0.0.0")
    stop.append(process)
    found = LINE.fullmatch(_first_line(process))
    assert found and found.group(5), "the line must carry the token"
    local = f"http://127.0.0.1:{found.group(3)}"
    with httpx.Client(base_url=local, timeout=30) as client:
        assert client.get("/").status_code == 401
        accepted = client.get(f"/?token={found.group(5)}")
        assert accepted.status_code == 303 and accepted.headers["location"] == "/"
        assert client.get("/").status_code == 200
