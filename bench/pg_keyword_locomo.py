"""PostgreSQL keyword and hybrid search on LoCoMo, chosen out of sample, beside SQLite's FTS5 bm25.

The LoCoMo conversations are stored once on each backend (a throwaway PostgreSQL cluster, or the
empty database `--database-url` names, and a SQLite storage dir), one agent per conversation, one
passage per turn ("Speaker: words", as stored by default), vectors by the default model in
embedded Chroma. For every question the harness reads, DEPTH deep: FTS5's ranking and the vector
ranking on SQLite; the vector ranking on PostgreSQL and its keyword ranking under every
`pg_fulltext.PgRanking` variant (`ts_rank` or `ts_rank_cd`, normalisation 0/1/2/32, passages
holding every word first or not, prefix matching or not, bm25's idf weighting or not: 64
variants); and the live keyword and hybrid answers of `ArchivalMemory.search` with the shipped
settings.

Everything is chosen by leave-one-conversation-out with the machinery of
bench/archival_locomo.py (same folds, objective, fusion grid and paired bootstrap):

- 'pg keyword': the ranking variant best on the other conversations, scored on the held-out one;
- 'pg hybrid': the fusion (method, weight, depth) chosen the same way on the shipped PG ranking;
- 'pg hybrid*': ranking variant and fusion chosen jointly;
- 'sqlite keyword' (FTS5 bm25, nothing to choose) and 'sqlite hybrid' (fusion chosen LOO);
- 'pg keyword (shipped)', 'pg hybrid (shipped)': the live search with today's defaults (in sample).

It prints held-out recall@5/10/20 (categories 1-4), paired bootstrap 95% intervals of PG - SQLite
and hybrid - keyword, each variant's in-sample recall and query time, and what each fold chose.

    /work/venv/bin/python bench/pg_keyword_locomo.py [--data DIR] [--bootstrap 2000]
                                                     [--embedding-cache FILE] [--shipped-only]
                                                     [--database-url URL] [--quick]

`--quick` runs the first turns of two conversations with four variants and a small fusion grid.
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from archival_locomo import (  # noqa: E402
    DEFAULT_DATA,
    DEPTH,
    KS,
    LOO_QUICK_CONVERSATIONS,
    LOO_QUICK_TURNS,
    QUICK_ROUNDS,
    CachedEmbedding,
    Candidates,
    Conversation,
    Result,
    Setting,
    conversation_table,
    leave_one_out,
    load_conversation,
    loo_quick_slice,
    mean_recall,
    paired_bootstrap,
    recall,
    scorer,
    settings_grid,
)

from memory_agent import MemoryManager, Settings  # noqa: E402
from memory_agent.archival import ArchivalMemory, NewPassage, VectorConfig  # noqa: E402
from memory_agent.archival.filters import PassageFilter  # noqa: E402
from memory_agent.store import pg_fulltext  # noqa: E402
from memory_agent.store.pg_fulltext import PgRanking  # noqa: E402
from memory_agent.testing.postgres_cluster import PostgresCluster  # noqa: E402

SQLITE = "sqlite"
BEFORE = PgRanking()
"""The ranking shipped before this harness chose one: ts_rank, no normalisation, nothing else."""


def variants(quick: bool, shipped_only: bool) -> list[PgRanking]:
    if shipped_only:
        return [BEFORE, pg_fulltext.RANKING]
    if quick:
        return [
            PgRanking(),
            PgRanking(idf=True),
            PgRanking("ts_rank_cd", 1),
            PgRanking(prefix=True),
        ]
    return [
        PgRanking(function, norm, first, prefix, idf)  # type: ignore[arg-type]
        for function, norm, first, prefix, idf in itertools.product(
            ("ts_rank", "ts_rank_cd"), (0, 1, 2, 32), (False, True), (False, True), (False, True)
        )
    ]


def key(ranking: PgRanking) -> str:
    return f"pg {ranking.label}"


def _store(
    conversations: Sequence[Conversation], memory: MemoryManager, archival: ArchivalMemory
) -> None:
    for conversation in conversations:
        agent_id = f"locomo-{conversation.name}"
        memory.ensure_agent(agent_id)
        archival.insert_many(
            agent_id,
            [
                NewPassage(turn.text, metadata={"dia_id": turn.dia_id}, created_at=turn.when)
                for turn in conversation.turns
            ],
        )


def _ranking(hits: Sequence[Any], score: str) -> list[tuple[str, float]]:
    return [(hit.passage.metadata["dia_id"], float(getattr(hit, score) or 0.0)) for hit in hits]


def read_sqlite(
    conversations: Sequence[Conversation], embedding: CachedEmbedding, scratch: Path
) -> dict[tuple[str, str], list[Candidates]]:
    found = {}
    with MemoryManager(agent_id="bench", settings=Settings(persist_directory=scratch)) as memory:
        archival = ArchivalMemory(memory.db, VectorConfig(path=scratch / "chroma"), embedding)
        _store(conversations, memory, archival)
        for conversation in conversations:
            agent_id = f"locomo-{conversation.name}"
            found[(conversation.name, SQLITE)] = [
                Candidates(
                    question,
                    _ranking(
                        archival.search(agent_id, question.text, limit=DEPTH, mode="keyword"),
                        "keyword_score",
                    ),
                    _ranking(
                        archival.search(agent_id, question.text, limit=DEPTH, mode="vector"),
                        "vector_similarity",
                    ),
                )
                for question in conversation.questions
            ]
        archival.close()
    return found


def read_postgres(
    conversations: Sequence[Conversation],
    embedding: CachedEmbedding,
    scratch: Path,
    url: str,
    rankings: Sequence[PgRanking],
) -> tuple[dict[tuple[str, str], list[Candidates]], dict[str, float]]:
    """Candidates per (conversation, variant key), the live shipped answers under 'pg live', and
    each variant's mean query time (ms)."""
    found: dict[tuple[str, str], list[Candidates]] = {}
    spent = dict.fromkeys(map(key, rankings), 0.0)
    queries = 0
    with MemoryManager(
        agent_id="bench", settings=Settings(persist_directory=scratch), database_url=url
    ) as memory:
        archival = ArchivalMemory(memory.db, VectorConfig(path=scratch / "chroma"), embedding)
        _store(conversations, memory, archival)
        for conversation in conversations:
            agent_id = f"locomo-{conversation.name}"
            clause, params = PassageFilter(agent_id).sql("p")
            with memory.db.reading() as conn:
                dia_of = {
                    row[0]: json.loads(row[1])["dia_id"]
                    for row in conn.execute(
                        "SELECT passage_id, metadata FROM passages WHERE agent_id = ?", (agent_id,)
                    ).fetchall()
                }
            live = []
            for question in conversation.questions:
                vector = _ranking(
                    archival.search(agent_id, question.text, limit=DEPTH, mode="vector"),
                    "vector_similarity",
                )
                shipped = Candidates(
                    question,
                    _ranking(
                        archival.search(agent_id, question.text, limit=DEPTH, mode="keyword"),
                        "keyword_score",
                    ),
                    vector,
                )
                shipped.default_hybrid = [
                    hit.passage.metadata["dia_id"]
                    for hit in archival.search(
                        agent_id, question.text, limit=max(KS), mode="hybrid"
                    )
                ]
                live.append(shipped)
                queries += 1
                for ranking in rankings:
                    with memory.db.reading() as conn:
                        began = time.perf_counter()
                        rows = pg_fulltext.passage_search(
                            conn, question.text, clause, list(params), DEPTH, ranking
                        )
                        spent[key(ranking)] += time.perf_counter() - began
                    found.setdefault((conversation.name, key(ranking)), []).append(
                        Candidates(question, [(dia_of[pid], score) for pid, score in rows], vector)
                    )
            found[(conversation.name, "pg live")] = live
        archival.close()
    return found, {name: seconds * 1000 / max(1, queries) for name, seconds in spent.items()}


def variant_table(
    names: Sequence[str], rankings: Sequence[PgRanking], results: Any, timing: dict[str, float]
) -> str:
    lines = [
        f"| PG ranking | {' | '.join(f'@{k}' for k in KS)} | mean | ms/query |",
        "|---|" + "---:|" * (len(KS) + 2),
    ]
    rows = []
    for ranking in [*rankings]:
        pooled = [
            r
            for n in names
            for r in results(Setting(key(ranking), single="keyword"), n)
            if r[0] != 5
        ]
        means = [mean_recall(pooled, k) for k in KS]
        rows.append((statistics.fmean(means), ranking.label, means, timing[key(ranking)]))
    sqlite = [r for n in names for r in results(Setting(SQLITE, single="keyword"), n) if r[0] != 5]
    sqlite_means = [mean_recall(sqlite, k) for k in KS]
    rows.append((statistics.fmean(sqlite_means), "(SQLite FTS5 bm25)", sqlite_means, float("nan")))
    for mean, label, means, ms in sorted(rows, key=lambda row: -row[0]):
        lines.append(
            f"| {label} | {' | '.join(f'{m:.3f}' for m in means)} | {mean:.3f} | {ms:.2f} |"
        )
    return "\n".join(lines)


def report(
    names: Sequence[str],
    found: dict[tuple[str, str], list[Candidates]],
    rankings: Sequence[PgRanking],
    timing: dict[str, float],
    quick: bool,
    rounds: int,
) -> str:
    results = scorer(found)
    shipped = key(pg_fulltext.RANKING)
    families: list[tuple[str, list[Setting]]] = [
        ("sqlite keyword", [Setting(SQLITE, single="keyword")]),
        ("pg keyword", [Setting(key(r), single="keyword") for r in rankings]),
        ("pg keyword (before)", [Setting(key(BEFORE), single="keyword")]),
        ("sqlite hybrid", settings_grid([SQLITE], quick)),
        ("pg hybrid", settings_grid([shipped], quick)),
        ("pg hybrid*", settings_grid([key(r) for r in rankings], quick)),
    ]
    lines = [
        "Leave-one-conversation-out (chosen on the other conversations by the mean of R@5/10/20,",
        "categories 1-4, scored on the held-out one):",
    ]
    modes: dict[str, dict[str, list[Result]]] = {}
    for mode, family in families:
        modes[mode], notes = leave_one_out(names, family, results)
        lines += [f"{mode} ({len(family)} settings):"] + [f"  {note}" for note in notes]
    live_rows = {n: found[(n, "pg live")] for n in names}
    modes["pg keyword (shipped)"] = {
        n: [
            (c.question.category, recall([d for d, _ in c.keyword], c.question.evidence))
            for c in live_rows[n]
        ]
        for n in names
    }
    modes["pg hybrid (shipped)"] = {
        n: [
            (c.question.category, recall(c.default_hybrid, c.question.evidence))
            for c in live_rows[n]
        ]
        for n in names
    }
    offline = {n: results(Setting(shipped), n) for n in names}
    agree = sum(
        a == b
        for n in names
        for a, b in zip(modes["pg hybrid (shipped)"][n], offline[n], strict=True)
    )
    same_kw = sum(
        a == b
        for n in names
        for a, b in zip(
            modes["pg keyword (shipped)"][n],
            results(Setting(shipped, single="keyword"), n),
            strict=True,
        )
    )
    total = sum(len(offline[n]) for n in names)
    lines += [
        f"shipped PG ranking: [{pg_fulltext.RANKING.label}]; live keyword search agrees with the "
        "offline"
        f" variant on {same_kw}/{total} questions, live hybrid with offline fusion on "
        f"{agree}/{total}",
        "",
        "Held out, pooled (categories 1-4):",
        f"| mode | {' | '.join(f'R@{k}' for k in KS)} |",
        "|---|" + "---:|" * len(KS),
    ]
    for mode, per in modes.items():
        pooled = [r for n in names for r in per[n] if r[0] != 5]
        lines.append(f"| {mode} | {' | '.join(f'{mean_recall(pooled, k):.3f}' for k in KS)} |")
    lines += [
        "",
        "Per conversation, held out (categories 1-4):",
        conversation_table(
            {m: modes[m] for m in ("sqlite keyword", "pg keyword", "sqlite hybrid", "pg hybrid")}
        ),
        "",
        f"Paired bootstrap, categories 1-4 ({rounds} resamples of questions within conversations):",
    ]
    for mode, other in (
        ("pg keyword", "sqlite keyword"),
        ("pg hybrid", "sqlite hybrid"),
        ("pg hybrid", "pg keyword"),
        ("pg hybrid*", "pg hybrid"),
        ("pg keyword", "pg keyword (before)"),
        ("sqlite hybrid", "sqlite keyword"),
    ):
        for k in KS:
            diff, low, high = paired_bootstrap(modes[mode], modes[other], k, rounds)
            lines.append(f"  {mode} - {other} @{k}: {diff:+.3f}  95% CI [{low:+.3f}, {high:+.3f}]")
    lines += [
        "",
        "Every PG ranking variant, in sample (all conversations, categories 1-4), with its mean",
        "query time (ms, DEPTH deep, on a loaded 2-core machine):",
        variant_table(names, rankings, results, timing),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="directory of LoCoMo JSON files"
    )
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument(
        "--embedding-cache", type=Path, help="pickle of text vectors, reused across runs"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"first {LOO_QUICK_TURNS} turns of {LOO_QUICK_CONVERSATIONS} conversations, four "
        "variants",
    )
    parser.add_argument(
        "--database-url", help="an empty PostgreSQL database instead of a throwaway cluster"
    )
    parser.add_argument(
        "--shipped-only",
        action="store_true",
        help="only the shipped ranking and the one before it (verifies the fusion on it, faster)",
    )
    args = parser.parse_args(argv)
    files = sorted(args.data.glob("*.json")) if args.data.is_dir() else []
    if len(files) < 2:
        print(
            f"SKIPPED: leave-one-out needs at least two LoCoMo conversations in {args.data}",
            file=sys.stderr,
        )
        return 0
    conversations = [load_conversation(path) for path in files]
    if args.quick:
        conversations = loo_quick_slice(conversations)
    from memory_agent.archival import MiniLMEmbeddingFunction

    embedding = CachedEmbedding(MiniLMEmbeddingFunction())
    if args.embedding_cache is not None and args.embedding_cache.is_file():
        embedding.cache.update(pickle.loads(args.embedding_cache.read_bytes()))
    rankings = variants(args.quick, args.shipped_only)
    if pg_fulltext.RANKING not in rankings:
        rankings.append(pg_fulltext.RANKING)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops the cluster
    cluster = None if args.database_url else PostgresCluster().start()
    try:
        with tempfile.TemporaryDirectory(prefix="pg-locomo-") as scratch:
            found = read_sqlite(conversations, embedding, Path(scratch) / SQLITE)
            pg_found, timing = read_postgres(
                conversations,
                embedding,
                Path(scratch) / "postgres",
                args.database_url if cluster is None else cluster.database_url("locomo"),
                rankings,
            )
            found.update(pg_found)
    finally:
        if cluster is not None:
            cluster.stop()
    if args.embedding_cache is not None:
        args.embedding_cache.write_bytes(pickle.dumps(embedding.cache))
    names = [c.name for c in conversations]
    print(
        f"LoCoMo keyword and hybrid search, SQLite and PostgreSQL: {len(names)} conversations, "
        f"{sum(len(c.questions) for c in conversations)} "
        f"questions{' (quick slice)' if args.quick else ''}"
    )
    print(
        report(
            names,
            found,
            rankings,
            timing,
            args.quick,
            QUICK_ROUNDS if args.quick else args.bootstrap,
        )
    )
    return 0


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    raise SystemExit(run_recorded(main, __file__))
