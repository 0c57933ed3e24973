"""memory_agent.testing.forked: the benchmarks' writers, forked from one launcher."""

from __future__ import annotations

import multiprocessing
import os
import sys
from multiprocessing.queues import Queue

import pytest

from memory_agent.testing.forked import start_forked

SPAWN = multiprocessing.get_context("spawn")


def _report(name: str, fail: bool, reports: Queue[tuple[str, int, bool]]) -> None:
    """A writer: says who it is, which process it runs in and whether the preload is there."""
    reports.put((name, os.getpid(), "json.tool" in sys.modules))
    if fail:
        raise SystemExit(3)


def test_each_argument_set_runs_in_a_process_of_its_own_and_a_failure_shows() -> None:
    reports: Queue[tuple[str, int, bool]] = SPAWN.Queue()
    launcher = start_forked(
        _report, [("a", False, reports), ("b", False, reports)], preload=["json.tool"]
    )
    seen = sorted(reports.get(timeout=120) for _ in range(2))
    launcher.join(timeout=120)
    assert launcher.exitcode == 0
    assert [name for name, _, _ in seen] == ["a", "b"]
    pids = {pid for _, pid, _ in seen}
    assert len(pids) == 2 and os.getpid() not in pids and launcher.pid not in pids
    assert all(preloaded for _, _, preloaded in seen)  # imported once, by the launcher

    failing = start_forked(_report, [("c", False, reports), ("d", True, reports)])
    assert sorted(reports.get(timeout=120)[0] for _ in range(2)) == ["c", "d"]
    failing.join(timeout=120)
    assert failing.exitcode == 1


def _environment(name: str, reports: Queue[tuple[str, str, int]]) -> None:
    """A writer: says what the caller's variable was and which process forked its launcher."""
    with open(f"/proc/{os.getppid()}/stat", encoding="ascii") as stat:
        launchers_parent = int(stat.read().rsplit(")", 1)[1].split()[1])
    reports.put((name, os.environ.get("FORKED_TEST_VALUE", ""), launchers_parent))


def test_each_launch_takes_the_callers_environment_and_comes_from_one_fork_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fork server keeps the environment it started with; a launch must not."""
    reports: Queue[tuple[str, str, int]] = SPAWN.Queue()
    servers = set()
    for value in ("first", "second"):
        monkeypatch.setenv("FORKED_TEST_VALUE", value)
        launcher = start_forked(_environment, [(value, reports)])
        name, seen, server = reports.get(timeout=120)
        launcher.join(timeout=120)
        assert launcher.exitcode == 0
        assert (name, seen) == (value, value)
        servers.add(server)
    assert len(servers) == 1 and os.getpid() not in servers
