"""Retrieval quality of archival search on LoCoMo, measured out of sample (leave one conversation
out).

Each conversation's turns are stored as the passages of its own agent (so each conversation is
ranked with its own keyword statistics), dated by their session, once per context variant: the
passage is always the turn ("Speaker: text"), and its ranking-only `context`
(`archival_memory_insert(..., context=...)`, indexed by both indexes, never shown) is nothing
('plain'), the session date ('date'), the turn it replies to ('previous'), both
('previous+date'), or the turn it replies to and the reply to it ('window'). A '/extra' variant
embeds the context as extra vectors beside the turn's own (best chunk wins) instead of one vector
of turn and context together ('joined'). For every question the
harness reads the keyword ranking once through `ArchivalMemory.search`, the vector leg as hybrid
search reads it (the question as it is, `VectorIndex.query`) and vector search alone
(`mode="vector"`, which embeds the question's content words: `archival/query_text.py`), then fuses
keyword and vector leg with `memory_agent.archival.fusion.fuse` under every candidate setting
(fusion method, weights, candidate depth). Recall@k is the share of a question's evidence turns in
the top k.

Nothing is chosen on the conversation it is scored on: for each conversation, each mode's
setting with the best mean of R@5, R@10 and R@20 on the *other* conversations (categories 1-4)
is scored on it. 'keyword', 'vector' and 'hybrid' use the plain passages (hybrid chooses its
fusion); 'keyword*', 'vector*' and 'hybrid*' also choose the context variant. The report gives
pooled and per-conversation figures, a per-category table, and paired bootstrap 95% intervals
(questions resampled within each conversation) for hybrid - keyword and hybrid - vector.
"hybrid (default)" is the shipped default searched through `ArchivalMemory.search(mode="hybrid")`
(in sample), which also checks that the offline fusion matches the live search; "hybrid*
(default)" is the same on turns stored with 'previous+date' context and extra vectors (nothing
chosen: the shipped search as it is, reply links included), compared with keyword*. Category 5
(adversarial) is reported apart and never tuned on.

Malformed evidence ids are normalised where possible ('D8:6; D9:17' is two ids, 'D:11:26' is
D11:26, 'D30:05' is D30:5); what cannot be parsed, ids missing from the conversation, and
questions left without evidence are skipped and counted.

    /work/venv/bin/python bench/archival_locomo.py [--data DIR] [--bootstrap 2000] [--quick]

The dev data (three conversations) lives in ../shared/data/locomo-dev; point --data at another
directory of LoCoMo conversation files to run other ones. `--quick` runs a small slice (the first
turns of each conversation, a handful of settings) in seconds, for tests.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings  # noqa: E402

from memory_agent import MemoryManager, Settings  # noqa: E402
from memory_agent.archival import ArchivalMemory, FusionConfig, NewPassage, VectorConfig  # noqa: E402
from memory_agent.archival.filters import PassageFilter  # noqa: E402
from memory_agent.archival.fusion import fuse  # noqa: E402
from memory_agent.archival.links import lift_replies  # noqa: E402
from memory_agent.archival.scoring import DEFAULT_SCORING, ScoringConfig, recency, scored  # noqa: E402
from memory_agent.archival.vector_index import ContextVectors  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev"
KS = (5, 10, 20)
DEPTH = 100
"""Candidates read from each index per question; settings use a prefix of these lists."""
_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
HEADLINE = "1-4 (all)"
LIVE_CONTEXT_CHECK = "previous+date/extra"
"""The format whose live hybrid search (shipped default) is read too, to check the offline fusion
with reply links against it (the plain format has no context, hence no links)."""
QUICK_TURNS = 30
QUICK_ROUNDS = 50
"""Bootstrap resamples in a `--quick` run: a smoke run's intervals are not read."""
LOO_QUICK_CONVERSATIONS = 2
LOO_QUICK_TURNS = 20
"""The `--quick` slice of the scripts that only reuse this one's machinery (ranking_candidates,
conversation_search_locomo, pg_keyword_locomo; see `loo_quick_slice`)."""


# ----- data ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    """The turn as stored by default: "Speaker: words [shares an image: caption]"."""
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

    def add(self, other: Skipped) -> None:
        self.unparsable += other.unparsable
        self.unknown_ids += other.unknown_ids
        self.no_evidence += other.no_evidence


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
    turns = _turns(document)
    known = {turn.dia_id for turn in turns}
    conversation = Conversation(path.stem, turns, [])
    for item in document.get("qa", []):
        evidence = normalise_evidence(item.get("evidence") or [], known, conversation.skipped)
        if not evidence:
            conversation.skipped.no_evidence += 1
            continue
        conversation.questions.append(Question(item["question"], int(item["category"]), evidence))
    return conversation


def _turns(document: dict[str, Any]) -> list[Turn]:
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
            dia_id = _canonical(turn["dia_id"]) or turn["dia_id"]
            turns.append(Turn(dia_id, turn["speaker"], text, start + timedelta(seconds=offset)))
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


def truncated(conversation: Conversation, turns: int) -> Conversation:
    """The first `turns` turns and the questions whose evidence lies entirely among them."""
    kept = conversation.turns[:turns]
    known = {turn.dia_id for turn in kept}
    questions = [q for q in conversation.questions if q.evidence <= known]
    return Conversation(conversation.name, kept, questions, conversation.skipped)


def loo_quick_slice(conversations: Sequence[Conversation]) -> list[Conversation]:
    """A smoke run's slice for the leave-one-out scripts: the first two conversations (the fewest
    leave-one-out needs), their first 20 turns (17 questions on the dev set). Embedding the turns
    is most of such a run, and its figures are not read: a bit over a third of this script's own
    quick slice (three conversations, 30 turns) runs every path as well."""
    return [truncated(c, LOO_QUICK_TURNS) for c in conversations[:LOO_QUICK_CONVERSATIONS]]


# ----- context variants: what ranking-only context a turn is stored with -----------------------


def _none(turns: Sequence[Turn], index: int) -> str:
    return ""


def _date(turns: Sequence[Turn], index: int) -> str:
    when = turns[index].when
    return f"{when.day} {when:%B %Y}"


def _previous(turns: Sequence[Turn], index: int) -> str:
    """The turn it answers (same session: turns are seconds apart)."""
    if index and turns[index].when - turns[index - 1].when < timedelta(hours=1):
        return turns[index - 1].text
    return ""


def _previous_date(turns: Sequence[Turn], index: int) -> str:
    return f"{_previous(turns, index)} {_date(turns, index)}".strip()


def _window(turns: Sequence[Turn], index: int) -> str:
    """The turn it answers and the one that answers it (same session)."""
    context = _previous(turns, index)
    if index + 1 < len(turns) and turns[index + 1].when - turns[index].when < timedelta(hours=1):
        context = f"{context} {turns[index + 1].text}".strip()
    return context


CONTEXTS: dict[str, Callable[[Sequence[Turn], int], str]] = {
    "plain": _none,
    "date": _date,
    "previous": _previous,
    "previous+date": _previous_date,
    "window": _window,
}
FORMATS: dict[str, tuple[str, ContextVectors]] = {
    "plain": ("plain", "joined"),
    "date": ("date", "joined"),
    "previous": ("previous", "joined"),
    "previous/extra": ("previous", "extra"),
    "previous+date": ("previous+date", "joined"),
    "previous+date/extra": ("previous+date", "extra"),
    "window": ("window", "joined"),
    "window/extra": ("window", "extra"),
}
"""Variant name -> (context, how the vector index uses it)."""


# ----- indexing and reading candidates once ----------------------------------------------------


class CachedEmbedding(EmbeddingFunction[Documents]):
    """Wraps an embedding function and remembers every text's vector (formats share turns)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[str, Any] = {}

    def __call__(self, input: Documents) -> Embeddings:
        missing = [text for text in dict.fromkeys(input) if text not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.inner(missing), strict=True))
        return [self.cache[text] for text in input]

    def embed_query(self, input: Documents) -> Embeddings:
        return self(input)

    def name(self) -> str:  # type: ignore[override]  # the wrapped function's name, so per instance
        return str(self.inner.name())

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> CachedEmbedding:
        raise NotImplementedError("a benchmark wrapper, never rebuilt from a config")


Ranking = list[tuple[str, float]]
"""(dia_id, score) pairs, best first."""


@dataclass
class Candidates:
    """Both indexes' rankings of one question, read once and fused many times."""

    question: Question
    keyword: Ranking
    vector: Ranking
    """The vector leg as hybrid search fuses it: the question embedded as it is."""
    vector_mode: Ranking = field(default_factory=list)
    """Vector search alone (`mode="vector"`), which embeds the question's content words."""
    default_hybrid: list[str] = field(default_factory=list)
    default_scored: list[str] = field(default_factory=list)
    created: dict[str, str] = field(default_factory=dict)
    """dia_id -> the passage's created_at (its session's date), shared by a conversation's
    questions."""
    replies: dict[str, str] = field(default_factory=dict)
    """Reply dia_id -> the dia_id its context names (`archival/links.py`), as stored."""
    live_hybrid: list[str] = field(default_factory=list)
    """The live hybrid search (shipped default) on a format with context, to check the offline
    fusion with reply links against it."""


def read_candidates(
    archival: ArchivalMemory,
    agent_id: str,
    questions: Sequence[Question],
    default: bool,
    live: bool = False,
) -> list[Candidates]:
    """Keyword and vector rankings (DEPTH deep) per question; with `default`, the live hybrid and
    scored searches too; with `live`, the live hybrid search alone."""
    passages = archival.list(agent_id, limit=1_000_000)
    created = {p.metadata["dia_id"]: p.created_at for p in passages}
    dia_of = {p.passage_id: p.metadata["dia_id"] for p in passages}
    with archival.db.reading() as conn:
        linked = conn.execute(
            "SELECT passage_id, context_of FROM passages WHERE agent_id = ? AND context_of IS NOT"
            " NULL",
            (agent_id,),
        ).fetchall()
    replies = {dia_of[row[0]]: dia_of[row[1]] for row in linked if row[1] in dia_of}
    everything = PassageFilter.build(agent_id)
    found = []
    for question in questions:
        keyword = archival.search(agent_id, question.text, limit=DEPTH, mode="keyword")
        vector = archival.search(agent_id, question.text, limit=DEPTH, mode="vector")
        leg = archival.index.query(question.text, everything, DEPTH)
        candidate = Candidates(
            question,
            [(hit.passage.metadata["dia_id"], float(hit.keyword_score or 0.0)) for hit in keyword],
            [(dia_of[match.passage_id], match.similarity) for match in leg],
            [
                (hit.passage.metadata["dia_id"], float(hit.vector_similarity or 0.0))
                for hit in vector
            ],
            created=created,
            replies=replies,
        )
        if live:
            hits = archival.search(agent_id, question.text, limit=max(KS), mode="hybrid")
            candidate.live_hybrid = [hit.passage.metadata["dia_id"] for hit in hits]
        if default:
            live = archival.search(agent_id, question.text, limit=max(KS), mode="hybrid")
            candidate.default_hybrid = [hit.passage.metadata["dia_id"] for hit in live]
            live = archival.search(agent_id, question.text, limit=max(KS), mode="scored")
            candidate.default_scored = [hit.passage.metadata["dia_id"] for hit in live]
        found.append(candidate)
    return found


def index_and_read(
    conversations: Sequence[Conversation],
    formats: Sequence[str],
    embedding: CachedEmbedding,
    scratch: Path,
) -> dict[tuple[str, str], list[Candidates]]:
    """Every (conversation, format) as its own agent of one storage dir; candidates per question."""
    found: dict[tuple[str, str], list[Candidates]] = {}
    settings = Settings(persist_directory=scratch)
    with MemoryManager(agent_id="bench", settings=settings) as memory:
        archival = ArchivalMemory(memory.db, VectorConfig(path=scratch / "chroma"), embedding)
        for conversation in conversations:
            for name in formats:
                agent_id = f"locomo-{conversation.name}-{name}"
                memory.ensure_agent(agent_id)
                started = time.perf_counter()
                context, archival.index.context_vectors = FORMATS[name]
                archival.insert_many(
                    agent_id,
                    [
                        NewPassage(
                            turn.text,
                            metadata={"dia_id": turn.dia_id},
                            created_at=turn.when,
                            context=CONTEXTS[context](conversation.turns, i),
                        )
                        for i, turn in enumerate(conversation.turns)
                    ],
                )
                indexed = time.perf_counter() - started
                found[(conversation.name, name)] = read_candidates(
                    archival,
                    agent_id,
                    conversation.questions,
                    default=name == "plain",
                    live=name == LIVE_CONTEXT_CHECK,
                )
                print(
                    f"  {conversation.name} [{name}]: {len(conversation.turns)} turns indexed in "
                    f"{indexed:.1f} s,"
                    f" {len(conversation.questions)} questions read",
                    file=sys.stderr,
                )
    return found


# ----- settings, scoring, leave-one-out --------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One way to run hybrid search: how passages are written, and how the lists are fused."""

    format: str
    fusion: FusionConfig = FusionConfig()
    single: str | None = None
    """'keyword' or 'vector' for one index alone (the fusion is then unused)."""
    scoring: ScoringConfig | None = None
    """The scored mode's weights (recency and importance added to the fused match); None: hybrid."""

    @property
    def label(self) -> str:
        if self.single is not None:
            return f"{self.format}, {self.single} only"
        if self.scoring is not None:
            c = self.scoring
            return (
                f"{self.format}, scored: recency {c.recency_weight:g} (half-life "
                f"{c.half_life_days:g} d),"
                f" importance {c.importance_weight:g}"
            )
        f = self.fusion
        how = f"rrf k={f.k}" if f.method == "rrf" else f"{f.method} w_kw={f.keyword_weight:.1f}"
        return f"{self.format}, {how}, depth {f.keyword_depth}"


def settings_grid(formats: Sequence[str], quick: bool) -> list[Setting]:
    weights = (0.4, 0.6) if quick else (0.3, 0.4, 0.5, 0.6, 0.7)
    depths = (50,) if quick else (20, 50, 100)
    grid = []
    for name in formats:
        for depth in depths:
            for method in ("score", "zscore"):
                grid += [
                    Setting(
                        name,
                        FusionConfig(
                            method=method,
                            keyword_weight=w,
                            vector_weight=1 - w,  # type: ignore[arg-type]
                            keyword_depth=depth,
                            vector_depth=depth,
                        ),
                    )
                    for w in weights
                ]
            grid += [
                Setting(
                    name, FusionConfig(method="rrf", k=k, keyword_depth=depth, vector_depth=depth)
                )
                for k in ((60,) if quick else (10, 60))
            ]
    return grid


RECENCY_WEIGHTS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4)
HALF_LIVES = (1.0, 7.0, 30.0, 180.0)


def scored_grid(quick: bool) -> list[Setting]:
    """The scored mode on the shipped fusion: recency weight and half-life (weight 0 is hybrid
    itself). Importance is constant on LoCoMo (every passage has the default), so its weight changes
    no order here and stays at the shipped value."""
    weights = (0.0, 0.1) if quick else RECENCY_WEIGHTS
    lives = (30.0,) if quick else HALF_LIVES
    return [
        Setting(
            "plain",
            FusionConfig(),
            scoring=ScoringConfig(w, life, DEFAULT_SCORING.importance_weight),
        )
        for w in weights
        for life in lives
    ]


Result = tuple[int, dict[int, float]]
"""(category, {k: recall@k}) of one question."""


def recall(found: Sequence[str], evidence: frozenset[str]) -> dict[int, float]:
    return {k: len(evidence & set(found[:k])) / len(evidence) for k in KS}


def fused_ids(
    candidates: Candidates, config: FusionConfig, scoring: ScoringConfig | None = None
) -> list[str]:
    keyword = candidates.keyword[: config.keyword_depth]
    vector = candidates.vector[: config.vector_depth]
    fused = [(c.passage_id, c.score) for c in fuse(keyword, vector, config)]
    if config.reply_share > 0 and candidates.replies:  # as the live search (archival/links.py)
        fused = lift_replies(fused, candidates.replies, config.reply_share)
    if scoring is None:
        return [passage_id for passage_id, _ in fused][: max(KS)]
    # As the live scored mode: every fused candidate re-ranked, recency against the newest of them.
    newest = max((candidates.created[passage_id] for passage_id, _ in fused), default="")
    rescored = sorted(
        (
            (
                scored(
                    score,
                    recency(candidates.created[passage_id], newest, scoring.half_life_days),
                    0.5,
                    scoring,
                ),
                position,
                passage_id,
            )
            for position, (passage_id, score) in enumerate(fused)
        ),
        key=lambda item: (-item[0], item[1]),
    )
    return [passage_id for _, _, passage_id in rescored][: max(KS)]


def score(setting: Setting, rows: Sequence[Candidates]) -> list[Result]:
    return [
        (
            c.question.category,
            recall(fused_ids(c, setting.fusion, setting.scoring), c.question.evidence),
        )
        for c in rows
    ]


def objective(results: Iterable[Result]) -> float:
    """What settings are chosen by: mean of R@5, R@10, R@20 over categories 1-4."""
    values = [sum(r.values()) / len(r) for category, r in results if category != 5]
    return sum(values) / len(values) if values else 0.0


def leave_one_out(
    names: Sequence[str],
    grid: Sequence[Setting],
    results: Callable[[Setting, str], list[Result]],
) -> tuple[dict[str, list[Result]], list[str]]:
    """For each conversation: the setting best on the others, scored on it; and what was chosen."""
    held_out: dict[str, list[Result]] = {}
    notes = []

    def best_on(train: Sequence[str]) -> Setting:
        return max(
            grid, key=lambda s: (objective(r for n in train for r in results(s, n)), -grid.index(s))
        )

    for name in names:
        train = [other for other in names if other != name]
        best = best_on(train)
        held_out[name] = results(best, name)
        trained = objective(r for n in train for r in results(best, n))
        notes.append(
            f"held out {name}: [{best.label}] (train {trained:.3f},"
            f" held-out {objective(held_out[name]):.3f})"
        )
    notes.append(f"chosen on all conversations: [{best_on(names).label}]")
    return held_out, notes


def scorer(
    found: dict[tuple[str, str], list[Candidates]],
) -> Callable[[Setting, str], list[Result]]:
    """Results of a setting on a conversation, computed once."""
    cache: dict[tuple[Setting, str], list[Result]] = {}

    def results(setting: Setting, name: str) -> list[Result]:
        if (setting, name) not in cache:
            rows = found[(name, setting.format)]
            if setting.single is not None:
                cache[(setting, name)] = [
                    (
                        c.question.category,
                        recall(
                            [
                                pid
                                for pid, _ in (
                                    c.keyword if setting.single == "keyword" else c.vector_mode
                                )
                            ],
                            c.question.evidence,
                        ),
                    )
                    for c in rows
                ]
            else:
                cache[(setting, name)] = score(setting, rows)
        return cache[(setting, name)]

    return results


def live_default(
    found: dict[tuple[str, str], list[Candidates]], name: str, mode: str = "hybrid"
) -> list[Result]:
    """The shipped default, as `ArchivalMemory.search(mode=...)` answered it (plain format)."""
    return [
        (
            c.question.category,
            recall(c.default_scored if mode == "scored" else c.default_hybrid, c.question.evidence),
        )
        for c in found[(name, "plain")]
    ]


# ----- statistics and report ---------------------------------------------------------------


def mean_recall(results: Sequence[Result], k: int) -> float:
    return sum(r[k] for _, r in results) / len(results) if results else float("nan")


def paired_bootstrap(
    a: dict[str, list[Result]],
    b: dict[str, list[Result]],
    k: int,
    rounds: int,
    seed: int = 20240501,
) -> tuple[float, float, float]:
    """Mean difference a - b at k (categories 1-4) and its 95% interval, questions resampled
    within each conversation (both modes see the same resample)."""
    rng = random.Random(seed)
    diffs = {
        name: [ra[k] - rb[k] for (ca, ra), (_, rb) in zip(a[name], b[name], strict=True) if ca != 5]
        for name in a
    }
    total = sum(len(values) for values in diffs.values())
    observed = sum(sum(values) for values in diffs.values()) / total
    samples = []
    for _ in range(rounds):
        drawn = 0.0
        for values in diffs.values():
            drawn += sum(rng.choice(values) for _ in values)
        samples.append(drawn / total)
    samples.sort()
    return observed, samples[int(0.025 * rounds)], samples[min(rounds - 1, int(0.975 * rounds))]


def category_of(category: int) -> list[str]:
    return [HEADLINE, str(category)] if category != 5 else ["5 (adversarial)"]


def category_table(modes: dict[str, dict[str, list[Result]]]) -> str:
    groups: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for mode, per_conversation in modes.items():
        for results in per_conversation.values():
            for result in results:
                for group in category_of(result[0]):
                    groups[(group, mode)].append(result)
    order = [HEADLINE, "1", "2", "3", "4", "5 (adversarial)"]
    first = next(iter(modes))
    lines = [
        f"| category | n | {' | '.join(f'{m} @{k}' for m in modes for k in KS)} |",
        "|---|---:|" + "---:|" * (len(modes) * len(KS)),
    ]
    for group in order:
        if (group, first) in groups:
            cells = [f"{mean_recall(groups[(group, mode)], k):.3f}" for mode in modes for k in KS]
            lines.append(f"| {group} | {len(groups[(group, first)])} | {' | '.join(cells)} |")
    return "\n".join(lines)


def conversation_table(modes: dict[str, dict[str, list[Result]]]) -> str:
    names = list(next(iter(modes.values())))
    lines = [
        f"| conversation | n | {' | '.join(f'{m} @{k}' for m in modes for k in KS)} |",
        "|---|---:|" + "---:|" * (len(modes) * len(KS)),
    ]
    for name in names:
        cells = []
        for mode in modes:
            results = [r for r in modes[mode][name] if r[0] != 5]
            cells += [f"{mean_recall(results, k):.3f}" for k in KS]
        count = sum(1 for r in modes[next(iter(modes))][name] if r[0] != 5)
        lines.append(f"| {name} | {count} | {' | '.join(cells)} |")
    return "\n".join(lines)


def format_table(
    names: Sequence[str],
    formats: Sequence[str],
    results: Callable[[Setting, str], list[Result]],
) -> str:
    """Each single index on each context variant, pooled over conversations (categories 1-4)."""
    lines = [
        "| context variant | "
        f"{' | '.join(f'{side} @{k}' for side in ('keyword', 'vector') for k in KS)} |",
        "|---|" + "---:|" * (2 * len(KS)),
    ]
    for name in formats:
        cells = []
        for side in ("keyword", "vector"):
            pooled = [r for n in names for r in results(Setting(name, single=side), n) if r[0] != 5]
            cells += [f"{mean_recall(pooled, k):.3f}" for k in KS]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def report(
    names: Sequence[str],
    formats: Sequence[str],
    found: dict[tuple[str, str], list[Candidates]],
    grid: Sequence[Setting],
    rounds: int,
    quick: bool = False,
) -> str:
    results = scorer(found)
    lines = [
        "Leave-one-conversation-out: every mode's settings are chosen on the other conversations, "
        "by the",
        "mean of R@5, R@10, R@20 over categories 1-4. keyword, vector, hybrid: the passages as "
        "stored by",
        "default ('plain'), hybrid choosing its fusion; keyword*, vector*, hybrid*: each also "
        "chooses the",
        f"context variant ({', '.join(formats)}).",
    ]
    modes: dict[str, dict[str, list[Result]]] = {}
    families = [
        ("keyword", [Setting("plain", single="keyword")]),
        ("vector", [Setting("plain", single="vector")]),
        ("hybrid", [s for s in grid if s.format == "plain"]),
    ]
    if len(formats) > 1:
        families += [
            ("keyword*", [Setting(f, single="keyword") for f in formats]),
            ("vector*", [Setting(f, single="vector") for f in formats]),
            ("hybrid*", list(grid)),
        ]
    for mode, family in families:
        modes[mode], notes = leave_one_out(names, family, results)
        lines += [f"{mode} ({len(family)} settings):"] + [f"  {note}" for note in notes]
    scored_family = scored_grid(quick)
    modes["scored"], notes = leave_one_out(names, scored_family, results)
    lines += [f"scored ({len(scored_family)} settings, the shipped fusion plus recency):"] + [
        f"  {n}" for n in notes
    ]
    lines += [
        "  each scored setting in sample (mean of R@5, R@10, R@20, categories 1-4, all "
        "conversations):"
    ]
    lines += [
        f"    {s.label}: {objective(r for n in names for r in results(s, n)):.4f}"
        for s in scored_family
    ]
    modes["hybrid (default)"] = {n: live_default(found, n) for n in names}
    offline = {n: results(Setting("plain", FusionConfig()), n) for n in names}
    agree = sum(
        a == b for n in names for a, b in zip(modes["hybrid (default)"][n], offline[n], strict=True)
    )
    total = sum(len(offline[n]) for n in names)
    live_scored = {n: live_default(found, n, "scored") for n in names}
    offline_scored = {
        n: results(Setting("plain", FusionConfig(), scoring=DEFAULT_SCORING), n) for n in names
    }
    agree_scored = sum(
        a == b for n in names for a, b in zip(live_scored[n], offline_scored[n], strict=True)
    )
    with_context = [n for n in names if (n, LIVE_CONTEXT_CHECK) in found]
    if with_context:
        modes["hybrid* (default)"] = {
            n: [
                (c.question.category, recall(c.live_hybrid, c.question.evidence))
                for c in found[(n, LIVE_CONTEXT_CHECK)]
            ]
            for n in with_context
        }
    agree_context = sum(
        a == b
        for n in with_context
        for a, b in zip(
            modes["hybrid* (default)"][n],
            results(Setting(LIVE_CONTEXT_CHECK, FusionConfig()), n),
            strict=True,
        )
    )
    total_context = sum(len(found[(n, LIVE_CONTEXT_CHECK)]) for n in with_context)
    lines += [
        "live hybrid search with the shipped default agrees with offline fusion on "
        f"{agree}/{total} "
        "questions",
        *(
            [
                f"  and with context ({LIVE_CONTEXT_CHECK}, reply links) on {agree_context}/"
                f"{total_context}"
            ]
            if with_context
            else []
        ),
        "live scored search with the shipped weights agrees with offline scoring on "
        f"{agree_scored}/{total}",
        "",
        "Single indexes by context variant (in sample, categories 1-4):",
        format_table(names, formats, results),
        "",
        "Recall of evidence turns by category, leave-one-out (all conversations pooled):",
        category_table(modes),
        "",
        "Per conversation, leave-one-out (categories 1-4):",
        conversation_table(modes),
        "",
        f"Paired bootstrap, categories 1-4 ({rounds} resamples of questions within conversations):",
    ]
    pairs = [("hybrid", "keyword"), ("hybrid", "vector"), ("scored", "hybrid (default)")]
    pairs += (
        [
            ("hybrid*", "keyword*"),
            *([("hybrid* (default)", "keyword*")] if with_context else []),
            ("hybrid*", "keyword"),
            ("hybrid*", "hybrid"),
            ("keyword*", "keyword"),
            ("vector*", "vector"),
        ]
        if len(formats) > 1
        else []
    )
    for mode, other in pairs:
        for k in KS:
            diff, low, high = paired_bootstrap(modes[mode], modes[other], k, rounds)
            lines.append(f"  {mode} - {other} @{k}: {diff:+.3f}  95% CI [{low:+.3f}, {high:+.3f}]")
    if any(FORMATS[f][1] == "extra" for f in formats):
        lines += ["", *vector_use(names, grid, results, rounds)]
    return "\n".join(lines)


def vector_use(
    names: Sequence[str],
    grid: Sequence[Setting],
    results: Callable[[Setting, str], list[Result]],
    rounds: int,
) -> list[str]:
    """hybrid* restricted to contexts embedded with the text ('joined') or as extra vectors
    ('extra'), each chosen leave-one-out, and their paired difference: how the vector index should
    use
    context."""
    lines = ["How the vector index uses context, hybrid* restricted to each way (leave-one-out):"]
    modes = {}
    for use in ("joined", "extra"):
        family = [s for s in grid if s.format == "plain" or FORMATS[s.format][1] == use]
        modes[use], notes = leave_one_out(names, family, results)
        lines += [f"  {use} ({len(family)} settings):"] + [f"    {note}" for note in notes]
    for k in KS:
        diff, low, high = paired_bootstrap(modes["extra"], modes["joined"], k, rounds)
        lines.append(f"  extra - joined @{k}: {diff:+.3f}  95% CI [{low:+.3f}, {high:+.3f}]")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="directory of LoCoMo JSON files"
    )
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument(
        "--formats", default=",".join(FORMATS), help="context variants to try (comma-separated)"
    )
    parser.add_argument(
        "--embedding-cache",
        type=Path,
        help="pickle file of text vectors, reused across runs (created if missing)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"first {QUICK_TURNS} turns of each conversation, few settings",
    )
    args = parser.parse_args(argv)
    files = sorted(args.data.glob("*.json")) if args.data.is_dir() else []
    if len(files) < 2:
        print(
            f"SKIPPED: leave-one-out needs at least two LoCoMo conversations in {args.data}",
            file=sys.stderr,
        )
        return 0
    formats = (
        ["plain", "previous"]
        if args.quick
        else [f.strip() for f in args.formats.split(",") if f.strip()]
    )
    if unknown := set(formats) - set(FORMATS) or ("plain" not in formats and {"plain"}):
        parser.error(
            f"context variants must include 'plain' and come from {', '.join(FORMATS)}; got "
            f"{sorted(unknown)}"
        )
    conversations = [load_conversation(path) for path in files]
    skipped = Skipped()
    for conversation in conversations:
        skipped.add(conversation.skipped)
    if args.quick:
        conversations = [truncated(c, QUICK_TURNS) for c in conversations]
    from memory_agent.archival import MiniLMEmbeddingFunction

    embedding = CachedEmbedding(MiniLMEmbeddingFunction())
    if args.embedding_cache is not None and args.embedding_cache.is_file():
        embedding.cache.update(pickle.loads(args.embedding_cache.read_bytes()))
    with tempfile.TemporaryDirectory(prefix="locomo-") as scratch:
        found = index_and_read(conversations, formats, embedding, Path(scratch))
    if args.embedding_cache is not None:
        args.embedding_cache.write_bytes(pickle.dumps(embedding.cache))
    names = [c.name for c in conversations]
    print(
        f"LoCoMo evidence recall, {len(names)} conversations ({', '.join(names)}), "
        f"{sum(len(c.questions) for c in conversations)} "
        f"questions{' (quick slice)' if args.quick else ''}"
    )
    print(
        f"skipped: {skipped.unparsable} unparsable evidence ids, {skipped.unknown_ids} ids not in "
        f"their conversation, {skipped.no_evidence} questions without usable evidence"
    )
    print(
        report(
            names,
            formats,
            found,
            settings_grid(formats, args.quick),
            QUICK_ROUNDS if args.quick else args.bootstrap,
            args.quick,
        )
    )
    return 0


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    raise SystemExit(run_recorded(main, __file__))
