"""Retrieval quality of archival search on LoCoMo: evidence-turn recall@5, @10 and @20 per mode.

Each conversation's turns are inserted as the passages of one agent ("Speaker: text", plus the
caption of a shared image), dated by their session. Every question is searched in keyword,
vector and hybrid mode (and, for reference, hybrid with plain RRF), and recall@k is the share of the question's evidence turns found in the
top k, averaged over questions. Categories 1-4 make the headline figure; category 5 (adversarial:
the answer is not in the conversation) is reported apart.

Malformed evidence ids are normalised where possible ('D8:6; D9:17' is two ids, 'D:11:26' is
D11:26, 'D30:05' is D30:5); what cannot be parsed, ids missing from the conversation, and
questions left without evidence are skipped and counted.

    /work/venv/bin/python bench/archival_locomo.py [--data DIR] [--modes keyword,vector,hybrid,rrf]

The dev data (three conversations) lives in ../shared/data/locomo-dev; point --data at another
directory of LoCoMo conversation files to run the held-out ones.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_agent import MemoryManager, Settings  # noqa: E402
from memory_agent.archival import ArchivalMemory, FusionConfig, NewPassage, VectorConfig  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev"
MODES = ("keyword", "vector", "hybrid", "rrf")
"""'rrf' is hybrid search with plain Reciprocal Rank Fusion (k=60, top 50 each), for reference."""
KS = (5, 10, 20)
_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str
    when: datetime


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Skipped:
    unparsable: int = 0
    unknown_ids: int = 0
    no_evidence: int = 0


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[Question]
    skipped: Skipped = field(default_factory=Skipped)


def load_conversation(path: Path) -> Conversation:
    document = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(document, str):  # some exports are double-encoded
        document = json.loads(document)
    turns = list(_turns(document))
    known = {turn.dia_id for turn in turns}
    conversation = Conversation(path.stem, turns, [])
    for item in document.get("qa", []):
        evidence = normalise_evidence(item.get("evidence") or [], known, conversation.skipped)
        if not evidence:
            conversation.skipped.no_evidence += 1
            continue
        conversation.questions.append(Question(item["question"], int(item["category"]), evidence))
    return conversation


def _turns(document: dict) -> list[Turn]:
    turns = []
    for key, value in document.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if not match or not isinstance(value, list):
            continue
        start = _session_time(document.get(f"{key}_date_time"))
        for offset, turn in enumerate(value):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares an image: {turn['blip_caption']}]"
            turns.append(Turn(_canonical(turn["dia_id"]) or turn["dia_id"], text, start + timedelta(seconds=offset)))
    return turns


def _session_time(text: str | None) -> datetime:
    try:
        return datetime.strptime(str(text), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        return datetime(2023, 1, 1, tzinfo=timezone.utc)


def _canonical(raw: str) -> str | None:
    match = _EVIDENCE_ID.fullmatch(raw.strip())
    return None if match is None else f"D{int(match.group(1))}:{int(match.group(2))}"


def normalise_evidence(raw: Sequence[str], known: set[str], skipped: Skipped) -> frozenset[str]:
    """Canonical evidence ids present in the conversation; counts what had to be dropped."""
    found = set()
    for entry in raw:
        for piece in re.split(r"[;,]", str(entry)):
            if not piece.strip():
                continue
            dia_id = _canonical(piece)
            if dia_id is None:
                skipped.unparsable += 1
            elif dia_id not in known:
                skipped.unknown_ids += 1
            else:
                found.add(dia_id)
    return frozenset(found)


def index_conversation(archival: ArchivalMemory, agent_id: str, conversation: Conversation) -> None:
    archival.insert_many(agent_id, [
        NewPassage(turn.text, metadata={"dia_id": turn.dia_id}, created_at=turn.when)
        for turn in conversation.turns
    ])


def searchers(archival: ArchivalMemory) -> dict[str, tuple[ArchivalMemory, str]]:
    """Each benchmark mode as (archival memory, search mode); 'rrf' shares the same indexes."""
    rrf = ArchivalMemory(archival.db, archival.config, archival.index.embedding_function,
                         vector_store=archival.index.store, fusion=FusionConfig(method="rrf"))
    return {"keyword": (archival, "keyword"), "vector": (archival, "vector"),
            "hybrid": (archival, "hybrid"), "rrf": (rrf, "hybrid")}


def evaluate(archival: ArchivalMemory, agent_id: str, conversation: Conversation,
             modes: Sequence[str]) -> list[tuple[int, str, dict[int, float]]]:
    """(category, mode, {k: recall@k}) for every question and mode."""
    rows = []
    by_mode = searchers(archival)
    for question in conversation.questions:
        for mode in modes:
            memory, search_mode = by_mode[mode]
            hits = memory.search(agent_id, question.text, limit=max(KS), mode=search_mode)  # type: ignore[arg-type]
            found = [hit.passage.metadata.get("dia_id") for hit in hits]
            recall = {k: len(question.evidence & set(found[:k])) / len(question.evidence) for k in KS}
            rows.append((question.category, mode, recall))
    return rows


def summarise(rows: list[tuple[int, str, dict[int, float]]], modes: Sequence[str]) -> str:
    groups: dict[tuple[str, str], list[dict[int, float]]] = defaultdict(list)
    for category, mode, recall in rows:
        groups[("1-4 (all)" if category != 5 else "5 (adversarial)", mode)].append(recall)
        groups[(f"{category}", mode)].append(recall)
    order = ["1-4 (all)", "1", "2", "3", "4", "5 (adversarial)"]
    lines = [f"{'category':<16}{'n':>5}  " + "  ".join("".join(f"{m + f' @{k}':>12}" for k in KS) for m in modes)]
    for name in order:
        if (name, modes[0]) not in groups:
            continue
        cells = []
        for mode in modes:
            recalls = groups[(name, mode)]
            cells.append("".join(f"{sum(r[k] for r in recalls) / len(recalls):>12.3f}" for k in KS))
        lines.append(f"{name:<16}{len(groups[(name, modes[0])]):>5}  " + "  ".join(cells))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory of LoCoMo JSON files")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated search modes")
    parser.add_argument("--quick", action="store_true", help="a smoke run: one conversation, keyword search only")
    args = parser.parse_args(argv)
    files = sorted(args.data.glob("*.json")) if args.data.is_dir() else []
    if args.quick:
        files, args.modes = files[:1], "keyword"
    if not files:
        print(f"SKIPPED: no LoCoMo conversations found in {args.data}", file=sys.stderr)
        return 0
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    if unknown := set(modes) - set(MODES):
        parser.error(f"unknown mode(s) {', '.join(sorted(unknown))}; choose from {', '.join(MODES)}")
    rows: list[tuple[int, str, dict[int, float]]] = []
    skipped = Skipped()
    with tempfile.TemporaryDirectory(prefix="locomo-") as scratch:
        settings = Settings(persist_directory=Path(scratch))
        with MemoryManager(agent_id="bench", settings=settings) as memory:
            archival = ArchivalMemory(memory.db, VectorConfig(path=Path(scratch) / "chroma"))
            for path in files:
                conversation = load_conversation(path)
                for name in ("unparsable", "unknown_ids", "no_evidence"):
                    setattr(skipped, name, getattr(skipped, name) + getattr(conversation.skipped, name))
                agent_id = f"locomo-{conversation.name}"
                memory.ensure_agent(agent_id)
                started = time.perf_counter()
                index_conversation(archival, agent_id, conversation)
                indexed = time.perf_counter() - started
                rows.extend(evaluate(archival, agent_id, conversation, modes))
                print(f"{path.name}: {len(conversation.turns)} turns indexed in {indexed:.1f}s, "
                      f"{len(conversation.questions)} questions", file=sys.stderr)
    print(f"LoCoMo evidence recall ({len(files)} conversations: {', '.join(p.stem for p in files)})")
    print(f"skipped: {skipped.unparsable} unparsable evidence ids, {skipped.unknown_ids} ids not in "
          f"their conversation, {skipped.no_evidence} questions without usable evidence")
    print(summarise(rows, modes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
