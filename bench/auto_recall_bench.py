"""What automatic recall costs per turn, and whether it brings the evidence, on LoCoMo.

Each LoCoMo dev conversation is stored twice for an agent of its own: as archival passages (one
per turn, "Speaker: text", inserted in one batch) and as conversation messages that have left the
context window (speaker A as the user, B as the assistant). Then every question of
categories 1-4 is the user's prompt of a turn, and `AutoRecall.recall` (what the turn planner runs
before a turn with `auto_recall=` on) chooses what goes into that turn's `<turn_context>`, once
per token budget, from archival memory (hybrid search), from the conversation (the store's
conversation search: keyword today, hybrid where `search_messages` takes a mode) and from both.

Figures per source and budget: the time recall adds to a turn (p50/p95 ms), the tokens it adds
(mean and p95 of the rendered section, counted with the agent's counter), the items sent, and
recall@budget: the share of a question's evidence turns that land in the injected context
(pooled over questions). No model runs: this is the rules path, the same that a turn takes.

    python bench/auto_recall_bench.py [--data DIR] [--budgets 500,1000,2000] [--max-items N]
                                      [--quick]

`--max-items` defaults to `AutoRecallSettings().max_items`. `--quick` keeps the first 16 turns
of the first conversation, the questions on them and one budget.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from archival_locomo import DEFAULT_DATA, Conversation, load_conversation, truncated  # noqa: E402

from memory_agent import MemoryManager, NewPassage, Settings  # noqa: E402
from memory_agent.agent.auto_recall import (  # noqa: E402
    AutoRecall,
    AutoRecallSettings,
    RecallSource,
)
from memory_agent.archival import MiniLMEmbeddingFunction  # noqa: E402

QUICK_TURNS = 16
"""A quick run's turns: embedding them (as passages and as messages) is most of its time."""
SOURCES: dict[str, tuple[RecallSource, ...]] = {
    "archival": ("archival",),
    "conversation": ("conversation",),
    "both": ("archival", "conversation"),
}


@dataclass
class Tally:
    """One (source, budget) cell over every question."""

    seconds: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    items: list[int] = field(default_factory=list)
    evidence: int = 0
    found: int = 0
    notes: int = 0

    def row(self, label: str) -> str:
        ms = sorted(s * 1000 for s in self.seconds)
        p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
        tokens = sorted(self.tokens)
        return (
            f"{label:<22} {statistics.median(ms):>7.1f} {p95:>7.1f} {statistics.mean(tokens):>8.0f}"
            f" {tokens[min(len(tokens) - 1, int(0.95 * len(tokens)))]:>7d}"
            f" {statistics.mean(self.items):>6.1f} {self.found / max(1, self.evidence):>9.3f}"
            f" {self.notes:>6d}"
        )


def _store(memory: MemoryManager, conversation: Conversation) -> dict[tuple[str, str], str]:
    """The conversation as the passages and as the compacted messages of an agent of its own;
    returns (source, item id) -> the turn's dia_id."""
    ids: dict[tuple[str, str], str] = {}
    agent = conversation.name
    memory.ensure_agent(agent)
    passages = memory.archival_memory_insert_many(
        [NewPassage(content=turn.text) for turn in conversation.turns], agent_id=agent
    )
    for passage_id, turn in zip(passages, conversation.turns, strict=True):
        ids[("archival", passage_id)] = turn.dia_id
    first_speaker = conversation.turns[0].speaker if conversation.turns else ""
    for turn in conversation.turns:
        stored = memory.store_message(
            "user" if turn.speaker == first_speaker else "assistant",
            turn.text,
            agent_id=agent,
            in_context=False,  # long compacted: what recall may bring back
        )
        assert stored is not None
        ids[("conversation", str(stored.message_id))] = turn.dia_id
    return ids


def _run(
    memory: MemoryManager,
    conversations: Sequence[Conversation],
    budgets: Sequence[int],
    tallies: dict[tuple[str, int], Tally],
    max_items: int,
) -> int:
    questions = 0
    for conversation in conversations:
        ids = _store(memory, conversation)
        asked = [q for q in conversation.questions if 1 <= q.category <= 4]
        questions += len(asked)
        for label, sources in SOURCES.items():
            for budget in budgets:
                recall = AutoRecall(
                    memory,
                    conversation.name,
                    AutoRecallSettings(token_budget=budget, sources=sources, max_items=max_items),
                    count_text=memory.compactor.count_text,
                )
                tally = tallies.setdefault((label, budget), Tally())
                for question in asked:
                    started = time.perf_counter()
                    report = recall.recall(question.text)
                    tally.seconds.append(time.perf_counter() - started)
                    tally.tokens.append(report.tokens)
                    tally.items.append(len(report.items))
                    tally.notes += len(report.notes)
                    landed = {ids.get((item.source, item.item_id)) for item in report.items}
                    tally.evidence += len(question.evidence)
                    tally.found += len(question.evidence & landed)
    return questions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--budgets", default="500,1000,2000")
    parser.add_argument("--max-items", type=int, default=AutoRecallSettings().max_items)
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"first {QUICK_TURNS} turns of one conversation, one budget",
    )
    args = parser.parse_args(argv)
    files = sorted(args.data.glob("*.json"))
    if not files:
        print(f"no LoCoMo conversations in {args.data} (see ../shared/data/README.md)")
        return 1
    conversations = [load_conversation(path) for path in files]
    budgets = [int(b) for b in args.budgets.split(",")]
    if args.quick:
        conversations = [truncated(conversations[0], QUICK_TURNS)]
        budgets = [2_000]
    tallies: dict[tuple[str, int], Tally] = {}
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings.from_env({"PERSIST_DIRECTORY": directory}, env_file=None)
        # reuse off: each budget asks the same questions, and each turn must pay its encoding
        model = MiniLMEmbeddingFunction(reuse_vectors=False)
        with MemoryManager(agent_id="bench", settings=settings, embedding_function=model) as memory:
            started = time.perf_counter()
            questions = _run(memory, conversations, budgets, tallies, args.max_items)
            took = time.perf_counter() - started
    turns = sum(len(c.turns) for c in conversations)
    print(
        f"{len(conversations)} conversations, {turns} turns, {questions} questions (categories"
        f" 1-4), {took:.0f} s in all; at most {args.max_items} items per turn"
    )
    print(
        f"{'source / budget':<22} {'p50 ms':>7} {'p95 ms':>7} {'tokens':>8} {'p95 tk':>7}"
        f" {'items':>6} {'R@budget':>9} {'notes':>6}"
    )
    for (label, budget), tally in sorted(tallies.items()):
        print(tally.row(f"{label} {budget}"))
    return 0


if __name__ == "__main__":
    from record import run_recorded  # noqa: E402

    raise SystemExit(run_recorded(main, __file__))
