"""The LoCoMo benchmark's data handling: malformed evidence ids are normalised or counted."""

from __future__ import annotations

import importlib.util
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
    found = bench.normalise_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D1:3", "D99:1", ""], known, skipped)
    assert found == {"D8:6", "D9:17", "D11:26", "D30:5", "D1:3"}
    assert (skipped.unparsable, skipped.unknown_ids) == (1, 1)


def test_dev_conversations_load(bench: ModuleType, shared_data: Path) -> None:
    conversation = bench.load_conversation(shared_data / "locomo-dev" / "26.json")
    assert len(conversation.turns) == 419 and conversation.turns[0].text.startswith("Caroline: ")
    assert conversation.skipped.no_evidence == 2
    assert all(q.evidence for q in conversation.questions)
