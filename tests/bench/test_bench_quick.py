"""Every benchmark script runs in its `--quick` mode, so a benchmark that crashes fails the suite.

Small sizes, no timing assertions: the figures are for reading, the exit code (and, for some, that
a table's rows are there) is what is tested. A script whose `--quick` run another default test
already makes and checks (RUN_ELSEWHERE) is not run a second time here.

Each script runs as `python script --quick` would, in a child forked from one interpreter that
imported the heavy packages once (tests/warm_interpreter.py): that saves each script ~1-3 s of CPU.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest
from warm_interpreter import WarmInterpreter

ROOT = Path(__file__).resolve().parents[2]
RUN_ELSEWHERE = {
    "archival_locomo": "tests/archival/test_archival_bench_data.py",
}
"""Script -> the test file that runs its `--quick` mode in the default suite and checks its
figures."""
EXPECTED = {
    "archival_insert_cpu": (
        r"^median \w+\s+\(1 runs of 500\): \d+ passages/s, \d+\.\d{3} CPU ms/passage$",
        r"^second against first: CPU per passage [+-]\d+\.\d %",
    ),
    "auto_recall_bench": (r"^archival 2000\s+\d", r"^conversation 2000\s+\d", r"^both 2000\s+\d"),
    "cli_latency_bench": (r"^no embedding\s", r"^embedding\s+remember"),
    "conversation_copies_bench": (
        r"conversations_agree: True",
        r"resumed from the mirror: \{'same_session': True",
        r"^\s+200\s+\d+\.\d+\s+\d+\.\d+\s+\d+\.\d+",
    ),
    "conversation_search_locomo": (
        r"^keyword\s+\d\.\d{3}",
        r"^hybrid \(default\)\s+\d\.\d{3}",
        r"^hybrid - keyword\s+@5",
        r"^time-aware: \d+ of \d+ questions",
    ),
    "embedding_bench": (r"texts/s", r"100 LoCoMo turns"),
    "ranking_candidates": (
        r"^array fusion equals fusion\.fuse \(shipped default\) on (\d+)/\1 questions",
        r"^hybrid, chunk mean \(",
        r"^\| pooled \| \d+ \| 10 \| (\d\.\d{3} \| ){6}\d\.\d{3} \|$",
        r"^hybrid, sentence vectors, shipped fusion \(",
        r"^hybrid, learned fusion \(with neighbours' scores\)",
    ),
    "encryption_overhead": (
        r"^block edit p95 ms\s",
        r"^hybrid search p95 ms\s",
        r"^insert passages/s\s",
    ),
    "ui_first_load": (
        r"^seeded 50 blocks .* 200 passages",
        r"^/\s+\d+\.\d+\s+\d+",
        r"^/agents/bench-agent\s+\d+\.\d+\s+\d+",
    ),
}
"""Script -> lines its quick run must print (regular expressions, multiline)."""
HELPERS = {"record", "render_results"}
"""Files in bench/ that are not benchmarks: the run recorder and the results page's renderer
(tests/bench/test_bench_results_page.py tests them)."""
ALL_SCRIPTS = sorted(
    script for script in (ROOT / "bench").glob("*.py") if script.stem not in HELPERS
)
SCRIPTS = [script for script in ALL_SCRIPTS if script.stem not in RUN_ELSEWHERE]


NEEDS_POSTGRES = {
    "backends_bench",
    "consolidation_month_bench",
    "pg_keyword_locomo",
    "thread_workers_bench",
}
"""Scripts whose quick run starts a PostgreSQL server and so needs the `postgres` extra
(psycopg)."""
TAKES_DATABASE_URL = {
    "backends_bench",
    "consolidation_month_bench",
    "pg_keyword_locomo",
    "thread_workers_bench",
}
"""PostgreSQL scripts given a fresh database on the suite's server (`--database-url`) instead of
starting a throwaway cluster of their own."""
NEEDS_ENCRYPTION = {"encryption_overhead"}
"""Scripts that open an encrypted store and so need the `encryption` extra (sqlcipher3)."""


def test_every_bench_script_is_covered() -> None:
    assert len(ALL_SCRIPTS) >= 8
    assert NEEDS_POSTGRES | NEEDS_ENCRYPTION <= {script.stem for script in ALL_SCRIPTS}
    assert TAKES_DATABASE_URL <= NEEDS_POSTGRES
    for name in TAKES_DATABASE_URL:
        assert "--database-url" in (ROOT / "bench" / f"{name}.py").read_text(encoding="utf-8")
    for name, test_file in RUN_ELSEWHERE.items():
        source = (ROOT / test_file).read_text(encoding="utf-8")
        assert (
            (ROOT / "bench" / f"{name}.py").is_file()
            and f"{name}.py" in source
            and '"--quick"' in source
        ), f"{test_file} no longer runs bench/{name}.py --quick: run it here again"
        assert "pytest.mark.slow" not in source, (
            f"{test_file} is slow: bench/{name}.py --quick must run by default"
        )


def _environment(home: Path) -> dict[str, str]:
    """What a script runs with: the test's isolated environment, HOME its own folder."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HOME": str(home),
        "ANONYMIZED_TELEMETRY": "False",
        "HF_HUB_OFFLINE": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.stem for script in SCRIPTS])
def test_bench_script_runs_quick(
    script: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    warm_interpreter: WarmInterpreter,
    request: pytest.FixtureRequest,
) -> None:
    if script.stem in NEEDS_POSTGRES and importlib.util.find_spec("psycopg") is None:
        reason = (
            f"{script.name} measures PostgreSQL and psycopg is not installed (pip install -e "
            "'.[postgres]')"
        )
        if os.environ.get("MEMORY_AGENT_REQUIRE_POSTGRES"):
            pytest.fail(f"PostgreSQL is required (MEMORY_AGENT_REQUIRE_POSTGRES is set): {reason}")
        pytest.skip(reason)
    if script.stem in NEEDS_ENCRYPTION and importlib.util.find_spec("sqlcipher3") is None:
        pytest.skip(
            f"{script.name} measures encrypted stores and sqlcipher3 is not installed "
            "(pip install -e '.[encryption]')"
        )
    arguments = ["--quick"]
    if script.stem in TAKES_DATABASE_URL:
        arguments += ["--database-url", request.getfixturevalue("postgres_url")]
    done = warm_interpreter.run(
        script,
        arguments,
        cwd=tmp_path,
        environment=_environment(tmp_path),
        output_dir=tmp_path_factory.mktemp("output"),
        timeout=240,
    )
    assert done.returncode == 0, (
        f"{script.name} --quick failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )
    assert done.stdout.strip(), f"{script.name} --quick printed no figures"
    for pattern in EXPECTED.get(script.stem, ()):
        assert re.search(pattern, done.stdout, re.MULTILINE), (
            f"{script.name} --quick printed no {pattern!r}:\n{done.stdout[-2000:]}"
        )
