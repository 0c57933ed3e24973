"""Every benchmark script runs in its `--quick` mode, so a benchmark that crashes fails the suite.

Small sizes, no timing assertions: the figures are for reading, the exit code is what is tested.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "bench").glob("*.py"))
NEEDS_POSTGRES = {"backends_bench", "pg_keyword_locomo", "thread_workers_bench"}
"""Scripts whose quick run starts a PostgreSQL server and so needs the `postgres` extra (psycopg)."""


def test_every_bench_script_is_covered() -> None:
    assert len(SCRIPTS) >= 8
    assert NEEDS_POSTGRES <= {script.stem for script in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.stem for script in SCRIPTS])
def test_bench_script_runs_quick(script: Path, tmp_path: Path) -> None:
    if script.stem in NEEDS_POSTGRES and importlib.util.find_spec("psycopg") is None:
        reason = f"{script.name} measures PostgreSQL and psycopg is not installed (pip install -e '.[postgres]')"
        if os.environ.get("MEMORY_AGENT_REQUIRE_POSTGRES"):
            pytest.fail(f"PostgreSQL is required (MEMORY_AGENT_REQUIRE_POSTGRES is set): {reason}")
        pytest.skip(reason)
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path),
                   "ANONYMIZED_TELEMETRY": "False", "HF_HUB_OFFLINE": "1",
                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    done = subprocess.run([sys.executable, str(script), "--quick"], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, f"{script.name} --quick failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), f"{script.name} --quick printed no figures"
