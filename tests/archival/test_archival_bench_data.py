"""The LoCoMo benchmark's data handling: malformed evidence ids are normalised or counted."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "archival_locomo.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    if not BENCH.is_file():
        pytest.skip(f"benchmark script not found at {BENCH}")
    spec = importlib.util.spec_from_file_location("archival_locomo_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def test_malformed_evidence_ids_are_normalised_or_counted(bench: ModuleType) -> None:
    known = {"D8:6", "D9:17", "D11:26", "D30:5", "D1:3"}
    skipped = bench.Skipped()
    found = bench.normalise_evidence(
        ["D8:6; D9:17", "D:11:26", "D30:05", "D", "D1:3", "D99:1", ""], known, skipped
    )
    assert found == {"D8:6", "D9:17", "D11:26", "D30:5", "D1:3"}
    assert (skipped.unparsable, skipped.unknown_ids) == (1, 1)


def test_dev_conversations_load(bench: ModuleType, shared_data: Path) -> None:
    conversation = bench.load_conversation(shared_data / "locomo-dev" / "26.json")
    assert len(conversation.turns) == 419 and conversation.turns[0].text.startswith("Caroline: ")
    assert conversation.skipped.no_evidence == 2
    assert all(q.evidence for q in conversation.questions)


def test_quick_leave_one_out_run_reports_every_figure(
    bench: ModuleType,
    shared_data: Path,
    minilm,  # type: ignore[no-untyped-def]
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench.main(["--quick", "--data", str(shared_data / "locomo-dev")]) == 0
    out = capsys.readouterr().out
    for name in ("26", "30", "41"):
        # keyword, vector, hybrid, their context-choosing twins (keyword*, vector*, hybrid*) and
        # scored
        assert out.count(f"held out {name}: [") == 7
        assert f"| {name} |" in out
    agreement = re.search(r"agrees with offline fusion on (\d+)/(\d+) questions", out)
    assert agreement is not None and agreement.group(1) == agreement.group(2) != "0"
    for mode in ("keyword", "vector"):
        for k in (5, 10, 20):
            number = r"[+-]\d\.\d{3}"
            assert re.search(rf"hybrid - {mode} @{k}: {number}  95% CI \[{number}, {number}\]", out)
    for k in (5, 10, 20):
        number = r"[+-]\d\.\d{3}"
        assert re.search(
            rf"scored - hybrid \(default\) @{k}: {number}  95% CI \[{number}, {number}\]", out
        )
    for pair in ("hybrid\\* - keyword\\*", "hybrid\\* - keyword", "keyword\\* - keyword"):
        assert re.search(rf"{pair} @10: [+-]\d\.\d{{3}}  95% CI", out), pair
    assert re.search(r"\| previous \|( \d\.\d{3} \|){6}", out)  # the context variant's own row
    assert re.search(r"\| 1-4 \(all\) \| \d+ \|( \d\.\d{3} \|){24}", out)


def test_bootstrap_interval_brackets_the_observed_difference(bench: ModuleType) -> None:
    better = {"a": [(1, {5: 1.0, 10: 1.0, 20: 1.0})] * 30 + [(1, {5: 0.0, 10: 0.0, 20: 0.0})] * 10}
    worse = {"a": [(1, {5: 0.0, 10: 0.0, 20: 0.0})] * 40}
    diff, low, high = bench.paired_bootstrap(better, worse, 5, rounds=500)
    assert diff == 0.75 and low < diff < high and low > 0.5
    same = bench.paired_bootstrap(worse, worse, 10, rounds=100)
    assert same == (0.0, 0.0, 0.0)
