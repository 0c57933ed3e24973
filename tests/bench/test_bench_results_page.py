"""docs/benchmarks.md is generated from bench/results/*.json and in sync with them; a full bench run
is recorded with its date, commit and load, a quick one is not (bench/record.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import record  # noqa: E402  (bench/record.py, a script's sibling, not a package)
import render_results  # noqa: E402

HELPERS = {"record", "render_results"}
BENCHMARKS = sorted(path.stem for path in (ROOT / "bench").glob("*.py") if path.stem not in HELPERS)


def test_the_page_is_what_the_results_files_give() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert page == render_results.render(), (
        "docs/benchmarks.md is out of date: run python bench/render_results.py"
    )


def test_every_benchmark_has_results_and_records_its_full_runs() -> None:
    results = {path.stem for path in (ROOT / "bench" / "results").glob("*.json")}
    assert set(BENCHMARKS) <= results, (
        f"benchmarks with no results file: {sorted(set(BENCHMARKS) - results)}"
    )
    for name in BENCHMARKS:
        source = (ROOT / "bench" / f"{name}.py").read_text(encoding="utf-8")
        assert "run_recorded(" in source, f"bench/{name}.py does not record its full runs"
        document = json.loads(
            (ROOT / "bench" / "results" / f"{name}.json").read_text(encoding="utf-8")
        )
        assert document["runs"], name
        for run in document["runs"]:
            assert run["commit"] and run["load"] and run["machine"], (name, run)
            assert run["date"] or run.get("carried_over"), (
                f"{name}: a run without a date must say it was carried over"
            )
            assert run["figures"] or run["output"], (name, run)


def test_a_full_run_is_recorded_with_date_commit_and_load_and_a_quick_one_is_not(
    tmp_path: Path,
) -> None:
    assert record.record("demo_bench", {"p50 ms": 0.08}, quick=True, results=tmp_path) is None
    assert not list(tmp_path.iterdir())
    written = record.record(
        "demo_bench", {"p50 ms": 0.08}, output="p50 0.08 ms\n", results=tmp_path
    )
    record.record("demo_bench", {"p50 ms": 0.07}, results=tmp_path)
    assert written == tmp_path / "demo_bench.json"
    runs = json.loads(written.read_text(encoding="utf-8"))["runs"]
    assert [run["figures"]["p50 ms"] for run in runs] == [
        0.07,
        0.08,
    ]  # newest first, nothing overwritten
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    assert runs[0]["commit"].removesuffix("-dirty") == head.stdout.strip()
    assert runs[0]["date"].endswith("UTC") and len(runs[0]["load"].split()) == 3
    page = render_results.render(tmp_path)
    assert "## demo_bench" in page and "| p50 ms | 0.07 |" in page and "p50 0.08 ms" in page
    assert runs[0]["date"] in page and runs[0]["commit"] in page
    with pytest.raises(TypeError):
        record.record("demo_bench", {"not json": object()}, quick=True, results=tmp_path)


def test_a_script_run_records_its_printed_output_only_when_full(tmp_path: Path) -> None:
    script = tmp_path / "bench" / "tiny_bench.py"
    script.parent.mkdir()
    (script.parent / "record.py").write_text(
        (ROOT / "bench" / "record.py").read_text(encoding="utf-8")
    )
    script.write_text(
        "def main():\n    print('figure 42')\n\n\nif __name__ == '__main__':\n"
        "    from record import run_recorded\n\n    raise SystemExit(run_recorded(main, "
        "__file__))\n"
    )
    env = {**os.environ, "PYTHONPATH": ""}
    quick = subprocess.run(
        [sys.executable, str(script), "--quick"], capture_output=True, text=True, env=env
    )
    assert (
        quick.returncode == 0
        and quick.stdout == "figure 42\n"
        and not (tmp_path / "bench" / "results").exists()
    )
    full = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert full.returncode == 0 and full.stdout.startswith("figure 42\n"), full.stderr
    [run] = json.loads(
        (tmp_path / "bench" / "results" / "tiny_bench.json").read_text(encoding="utf-8")
    )["runs"]
    assert run["output"] == "figure 42\n" and run["command"] == "python bench/tiny_bench.py"
