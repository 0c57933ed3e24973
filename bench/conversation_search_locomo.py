"""Conversation search on LoCoMo: keyword, vector and hybrid, measured leave-one-conversation-out.

Each conversation is stored as the messages of its own agent, exactly as an agent stores a
conversation: one message per turn (the first speaker as 'user', the other as 'assistant'), one
SDK session per LoCoMo session, each message dated by its session. Message vectors are written
by `MemoryManager.index_message_vectors` (with their automatic context: the turn answered and
the date). For every question the harness reads the keyword ranking and the vector ranking once,
then fuses them offline with `archival.fusion.fuse` under a grid of settings; the live
`search_messages(mode="hybrid")` is also read, to check the offline fusion matches it.

Nothing is chosen on the conversation it is scored on: for each conversation the mode (keyword,
vector, hybrid with the shipped fusion) and, apart, the hybrid fusion setting best on the other
conversations (mean of R@5, R@10, R@20, categories 1-4) is scored on it. Paired bootstrap 95%
intervals (questions resampled within conversations) compare the modes.

Time-aware search: for each question that names a time the rules can read (`time_phrases`,
relative to the conversation's last message), recall is compared without it, with the window
as a filter (`search_messages(time_aware=True)`), and as a boost of in-window candidates.

    python bench/conversation_search_locomo.py [--data DIR] [--embedding-cache FILE] [--quick]
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from archival_locomo import (  # noqa: E402
    DEFAULT_DATA,
    KS,
    QUICK_ROUNDS,
    CachedEmbedding,
    Conversation,
    Question,
    Result,
    load_conversation,
    loo_quick_slice,
    mean_recall,
    paired_bootstrap,
    recall,
)

from memory_agent import MemoryManager, Settings  # noqa: E402
from memory_agent.archival.filters import PassageFilter  # noqa: E402
from memory_agent.archival.fusion import FusionConfig, fuse  # noqa: E402
from memory_agent.conversation.conversation_search import TIME_BOOST, search_messages  # noqa: E402
from memory_agent.conversation.time_phrases import time_window  # noqa: E402

DEPTH = 100
BOOST = TIME_BOOST
"""What an in-window candidate gains in the 'boost' variant (fused scores lie in [0, 1])."""


@dataclass
class Read:
    """One question's rankings (dia ids, best first), read once."""

    question: Question
    keyword: list[tuple[str, float]]
    vector: list[tuple[str, float]]
    live_hybrid: list[str]
    window: tuple[datetime, datetime] | None = None
    live_time: list[str] = field(default_factory=list)
    """The live `search_messages(time_aware=True)` ranking (the window as a boost)."""


def store_conversation(
    memory: MemoryManager, agent_id: str, conversation: Conversation
) -> dict[int, str]:
    """The conversation as the agent's messages, dated by session; message id -> dia id."""
    memory.ensure_agent(agent_id)
    first = conversation.turns[0].speaker if conversation.turns else ""
    dia_of: dict[int, str] = {}
    dates = []
    for turn in conversation.turns:
        session = turn.dia_id.split(":")[0]
        stored = memory.store_message(
            "user" if turn.speaker == first else "assistant",
            turn.text,
            agent_id=agent_id,
            session_id=f"{agent_id}-{session}",
        )
        assert stored is not None
        dia_of[stored.message_id] = turn.dia_id
        dates.append((turn.when.isoformat(timespec="microseconds"), stored.message_id))
    with memory.database.transaction() as conn:  # the bench stands in for sessions held back then
        conn.executemany("UPDATE messages SET created_at = ? WHERE message_id = ?", dates)
    memory.index_message_vectors(agent_id=agent_id)
    return dia_of


def read(memory: MemoryManager, agent_id: str, conversation: Conversation) -> list[Read]:
    dia_of = store_conversation(memory, agent_id, conversation)
    dia_at = {turn.dia_id: turn.when for turn in conversation.turns}
    now = max(dia_at.values()) if dia_at else datetime.now(timezone.utc)
    rows = []
    vectors = memory._message_vectors  # the bench reads one index's ranking at a time
    for question in conversation.questions:
        keyword = memory.recall.keyword_ranked(agent_id, question.text, limit=DEPTH)
        vector = vectors.query(question.text, PassageFilter(agent_id), DEPTH)
        live = memory.search_messages(
            question.text, agent_id=agent_id, mode="hybrid", limit=max(KS), time_aware=False
        )
        row = Read(
            question,
            [(dia_of[m.message_id], score) for m, score in keyword],
            [(dia_of[i], similarity) for i, similarity in vector],
            [dia_of[m.message_id] for m in live],
        )
        named = time_window(question.text, now)
        if named is not None:
            row.window = (named.start, named.end)
            found = search_messages(
                memory.database,
                memory.recall,
                vectors,
                agent_id,
                question.text,
                mode="hybrid",
                roles=None,
                start_date=None,
                end_date=None,
                limit=max(KS),
                offset=0,
                fusion=FusionConfig(),
                time_aware=True,
                now=now,
            )
            row.live_time = [dia_of[m.message_id] for m in found]
        rows.append(row)
    return rows


def fused(row: Read, config: FusionConfig) -> list[str]:
    ranking = fuse(row.keyword[: config.keyword_depth], row.vector[: config.vector_depth], config)
    return [c.passage_id for c in ranking][: max(KS)]


def boosted(
    row: Read, config: FusionConfig, when: dict[str, datetime], boost: float = BOOST
) -> list[str]:
    """The fused ranking with candidates from the named window raised by `boost`."""
    assert row.window is not None
    start, end = row.window
    ranking = fuse(row.keyword[: config.keyword_depth], row.vector[: config.vector_depth], config)
    scores = [
        (c.score + (boost if start <= when[c.passage_id] <= end else 0.0), -n, c.passage_id)
        for n, c in enumerate(ranking)
    ]
    return [pid for _, _, pid in sorted(scores, reverse=True)][: max(KS)]


def filtered(row: Read, config: FusionConfig, when: dict[str, datetime]) -> list[str]:
    """The fused ranking keeping only candidates from the named window (a filter)."""
    assert row.window is not None
    start, end = row.window
    return [pid for pid in fused(row, config) if start <= when[pid] <= end]


def grid(quick: bool) -> list[FusionConfig]:
    if quick:
        return [FusionConfig(), FusionConfig(keyword_weight=0.4, vector_weight=0.6)]
    return [
        FusionConfig(method=method, keyword_weight=w, vector_weight=round(1 - w, 2), **depths)  # type: ignore[arg-type]  # literal method names
        for method in ("score", "zscore")
        for w in (0.3, 0.4, 0.5, 0.6, 0.7)
        for depths in (
            {"keyword_depth": 50, "vector_depth": 50},
            {"keyword_depth": 100, "vector_depth": 100},
        )
    ]


def objective(results: Sequence[Result]) -> float:
    values = [sum(r.values()) / len(r) for category, r in results if category != 5]
    return sum(values) / len(values) if values else 0.0


def scored(rows: Sequence[Read], rank: object) -> list[Result]:
    return [(row.question.category, recall(rank(row), row.question.evidence)) for row in rows]  # type: ignore[operator]  # a ranking function


def held_out(
    reads: dict[str, list[Read]], options: dict[str, object]
) -> tuple[dict[str, list[Result]], list[str]]:
    """For each conversation, the option best on the others, scored on it."""
    results = {
        (label, name): scored(rows, rank)
        for label, rank in options.items()
        for name, rows in reads.items()
    }
    chosen: dict[str, list[Result]] = {}
    notes = []
    for name in reads:
        train = [other for other in reads if other != name]
        best = max(
            options,
            key=lambda label: (
                objective([r for other in train for r in results[(label, other)]]),
                -list(options).index(label),
            ),
        )
        chosen[name] = results[(best, name)]
        notes.append(f"held out {name}: {best}")
    return chosen, notes


def line(label: str, per_conversation: dict[str, list[Result]]) -> str:
    pooled = [r for results in per_conversation.values() for r in results if r[0] != 5]
    cells = " ".join(f"{mean_recall(pooled, k):.3f}" for k in KS)
    return f"{label:<28} {cells}"


def interval(
    label: str, a: dict[str, list[Result]], b: dict[str, list[Result]], rounds: int
) -> str:
    cells = []
    for k in KS:
        mean, low, high = paired_bootstrap(a, b, k, rounds)
        cells.append(f"@{k} {mean:+.3f} [{low:+.3f}, {high:+.3f}]")
    return f"{label:<28} {'  '.join(cells)}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--embedding-cache", type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    files = sorted(args.data.glob("*.json")) if args.data.is_dir() else []
    if len(files) < 2:
        print(f"SKIPPED: leave-one-out needs two LoCoMo conversations in {args.data}")
        return 0
    conversations = [load_conversation(path) for path in files]
    if args.quick:
        conversations = loo_quick_slice(conversations)
    from memory_agent.archival import MiniLMEmbeddingFunction

    embedding = CachedEmbedding(MiniLMEmbeddingFunction())
    if args.embedding_cache is not None and args.embedding_cache.is_file():
        embedding.cache.update(pickle.loads(args.embedding_cache.read_bytes()))
    reads: dict[str, list[Read]] = {}
    when: dict[str, dict[str, datetime]] = {}
    with tempfile.TemporaryDirectory(prefix="convsearch-") as scratch:
        settings = Settings.from_env({"PERSIST_DIRECTORY": scratch}, env_file=None)
        memory = MemoryManager(
            scratch, agent_id="bench", settings=settings, embedding_function=embedding
        )
        try:
            for conversation in conversations:
                reads[conversation.name] = read(memory, f"locomo-{conversation.name}", conversation)
                when[conversation.name] = {t.dia_id: t.when for t in conversation.turns}
        finally:
            memory.close()
    if args.embedding_cache is not None:
        args.embedding_cache.write_bytes(pickle.dumps(embedding.cache))
    rounds = QUICK_ROUNDS if args.quick else args.bootstrap
    questions = sum(len(rows) for rows in reads.values())
    print(
        f"LoCoMo conversation search, {len(reads)} conversations ({', '.join(reads)}),"
        f" {questions} questions{' (quick slice)' if args.quick else ''}; recall @5 @10 @20,"
        " categories 1-4"
    )

    def single(side: str) -> object:
        return lambda row: [pid for pid, _ in getattr(row, side)][: max(KS)]

    default = FusionConfig()
    keyword = {n: scored(rows, single("keyword")) for n, rows in reads.items()}
    vector = {n: scored(rows, single("vector")) for n, rows in reads.items()}
    hybrid = {n: scored(rows, lambda row: fused(row, default)) for n, rows in reads.items()}
    live = {n: scored(rows, lambda row: row.live_hybrid) for n, rows in reads.items()}
    print(line("keyword", keyword))
    print(line("vector", vector))
    print(line("hybrid (default)", hybrid))
    print(line("hybrid (live search)", live))
    configs = {
        f"{c.method} kw{c.keyword_weight} depth{c.keyword_depth}": c for c in grid(args.quick)
    }
    tuned, tuned_notes = held_out(
        reads, {label: (lambda row, c=c: fused(row, c)) for label, c in configs.items()}
    )
    print(line("hybrid (fusion chosen LOO)", tuned))
    modes, mode_notes = held_out(
        reads,
        {
            "keyword": single("keyword"),
            "vector": single("vector"),
            "hybrid": lambda row: fused(row, default),
        },
    )
    print(line("mode chosen LOO", modes))
    for note in mode_notes + tuned_notes:
        print(f"  {note}")
    print("paired differences, 95% intervals:")
    print(interval("hybrid - keyword", hybrid, keyword, rounds))
    print(interval("hybrid - vector", hybrid, vector, rounds))
    print(interval("hybrid LOO fusion - default", tuned, hybrid, rounds))
    print("per conversation (hybrid default vs keyword):")
    for name in reads:
        h = [r for r in hybrid[name] if r[0] != 5]
        k = [r for r in keyword[name] if r[0] != 5]
        print(
            f"  {name}: n={len(h)} keyword "
            + " ".join(f"{mean_recall(k, x):.3f}" for x in KS)
            + " hybrid "
            + " ".join(f"{mean_recall(h, x):.3f}" for x in KS)
        )
    timed = {n: [row for row in rows if row.window is not None] for n, rows in reads.items()}
    count = sum(len(rows) for rows in timed.values())
    print(f"time-aware: {count} of {questions} questions name a time the rules read")
    if count:
        timed = {n: rows for n, rows in timed.items() if rows}
        plain = {n: scored(rows, lambda row: fused(row, default)) for n, rows in timed.items()}
        kept = {
            n: scored(rows, lambda row, n=n: filtered(row, default, when[n]))
            for n, rows in timed.items()
        }
        lifted = {
            n: scored(rows, lambda row, n=n: boosted(row, default, when[n]))
            for n, rows in timed.items()
        }
        live_time = {n: scored(rows, lambda row: row.live_time) for n, rows in timed.items()}
        print(line("  hybrid, no time", plain))
        print(line("  hybrid, window as filter", kept))
        print(line(f"  hybrid, window as boost {BOOST}", lifted))
        print(line("  live time_aware=True", live_time))
        for other in (0.1, 0.5, 1.0):
            variant = {
                n: scored(rows, lambda row, n=n, b=other: boosted(row, default, when[n], b))
                for n, rows in timed.items()
            }
            print(line(f"  hybrid, window as boost {other}", variant))
        print(interval("  filter - none", kept, plain, rounds))
        print(interval("  boost - none", lifted, plain, rounds))
        for name, rows in timed.items():
            for row in rows[:2]:
                print(f"  e.g. {name}: {row.question.text!r}")
    return 0


if __name__ == "__main__":
    from record import run_recorded  # bench/record.py: a full run's output, kept for the docs

    raise SystemExit(run_recorded(main, __file__))
