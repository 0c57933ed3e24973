"""The CLI latency and embedding benchmarks run and print their tables (slow: they start tens of
processes). Their figures are read by people, never asserted: the machine may be loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_cli_latency_bench_quick_prints_every_group() -> None:
    result = subprocess.run([sys.executable, str(BENCH / "cli_latency_bench.py"), "--quick"],
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert any(row[:2] == ["no", "embedding"] for row in rows)
    assert any(row[:2] == ["embedding", "remember"] for row in rows)


def test_embedding_bench_quick_prints_throughput(shared_data: Path) -> None:
    result = subprocess.run([sys.executable, str(BENCH / "embedding_bench.py"), "--quick"],
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    assert "texts/s" in result.stdout and "100 LoCoMo turns" in result.stdout
