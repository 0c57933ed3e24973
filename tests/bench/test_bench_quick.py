"""Every benchmark script runs in its `--quick` mode, so a benchmark that crashes fails the suite.

Small sizes, no timing assertions: the figures are for reading, the exit code is what is tested.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "bench").glob("*.py"))


def test_every_bench_script_is_covered() -> None:
    assert len(SCRIPTS) >= 8


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.stem for script in SCRIPTS])
def test_bench_script_runs_quick(script: Path, tmp_path: Path) -> None:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path),
                   "ANONYMIZED_TELEMETRY": "False", "HF_HUB_OFFLINE": "1",
                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    done = subprocess.run([sys.executable, str(script), "--quick"], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, f"{script.name} --quick failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), f"{script.name} --quick printed no figures"
