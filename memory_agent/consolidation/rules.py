"""The rules consolidator: tidies memory with no model.

- Duplicates: passages whose text is the same once spacing and end punctuation are set aside
  (identical text cannot occur twice: passages are unique per agent by content hash). Case is
  kept: "Hunter2Blue" and "hunter2blue" are two passwords; a sentence that differs only in case
  is left to the near-duplicate rule, whose guard excuses a capital on an ordinary word.
- Near duplicates: cosine similarity of their embeddings at or above NEAR_DUPLICATE_THRESHOLD
  *and* the same particulars (numbers with units, codes, content words, polarity; see
  `textguard`). The oldest passage of a group survives and gains the others' tags, metadata,
  provenance and the latest expiry (none if any is permanent); the others are superseded by it,
  never deleted.
- Expiry: passages past `expires_at` are counted (search already hides them; `purge_expired()`
  deletes them) and take no part in merging.
- Over-full blocks: a block above `block_threshold` of its limit has its oldest lines moved into
  archival passages (provenance: the block, its version, the time the text was written) until
  it is at or under `block_target` of its limit. A shared block is skipped (with a warning in
  the report): its lines would land in one agent's archival memory, out of the others' reach.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..archival import Passage
from ..archival.unit_vectors import unit_rows
from ..core.blocks import Block
from .plan import ArchivedLine, BlockRewrite, MemoryView, PassageMerge, Plan
from .protocol import Embed
from .textguard import same_particulars

__all__ = [
    "DEFAULT_BLOCK_TARGET",
    "DEFAULT_BLOCK_THRESHOLD",
    "NEAR_DUPLICATE_THRESHOLD",
    "RulesConsolidator",
    "normalised_text",
    "similar_pairs",
    "similarity_matrix",
]

NEAR_DUPLICATE_THRESHOLD = 0.93
"""Cosine similarity (all-MiniLM-L6-v2) from which two passages may be one fact; measured by
bench/near_duplicate_threshold.py (see docs/concepts/consolidation.md)."""
DEFAULT_BLOCK_THRESHOLD = 0.8
DEFAULT_BLOCK_TARGET = 0.6

_SPACE = re.compile(r"\s+")


def normalised_text(text: str) -> str:
    """The text with runs of spacing and trailing punctuation set aside (case is kept: it can be
    the fact)."""
    return _SPACE.sub(" ", text).strip().rstrip(".!;,").strip()


def similarity_matrix(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """Pairwise cosine similarity (for a few texts; `similar_pairs` scales to many)."""
    unit = unit_rows(vectors)
    return np.asarray(unit @ unit.T, dtype=np.float64)


def similar_pairs(
    vectors: Sequence[Sequence[float]], threshold: float, *, chunk: int = 512
) -> list[tuple[int, int, float]]:
    """Every pair (i, j), i < j, with cosine similarity at or above `threshold`, in order of i then
    j.

    Computed a block of rows at a time in float32, so thousands of passages never need the whole
    n x n matrix in memory (5,000 passages would take 200 MB as float64)."""
    unit = unit_rows(vectors).astype(np.float32)
    pairs: list[tuple[int, int, float]] = []
    for start in range(0, len(unit), chunk):
        block = unit[start : start + chunk] @ unit.T
        rows, columns = np.nonzero(block >= threshold)
        for row, column in zip(rows.tolist(), columns.tolist(), strict=True):
            first = start + row
            if column > first:
                pairs.append((first, column, float(block[row, column])))
    pairs.sort()
    return pairs


class RulesConsolidator:
    """Consolidation without a model (see the module docstring for what it does)."""

    def __init__(
        self,
        *,
        near_duplicate_threshold: float = NEAR_DUPLICATE_THRESHOLD,
        block_threshold: float = DEFAULT_BLOCK_THRESHOLD,
        block_target: float = DEFAULT_BLOCK_TARGET,
    ) -> None:
        if not 0 < block_target <= block_threshold <= 1:
            raise ValueError("need 0 < block_target <= block_threshold <= 1")
        self.near_duplicate_threshold = near_duplicate_threshold
        self.block_threshold = block_threshold
        self.block_target = block_target

    @property
    def name(self) -> str:
        return "rules"

    async def plan(self, view: MemoryView, embed: Embed) -> Plan:
        return self.plan_now(view, embed)

    def plan_now(self, view: MemoryView, embed: Embed) -> Plan:
        """The plan, synchronously (the model consolidator starts from it)."""
        plan = Plan(blocks_analysed=len(view.blocks))
        plan.expired = [passage.passage_id for passage in view.expired]
        for block in view.blocks:
            if block.is_shared and self.is_over_full(block):
                plan.warnings.append(
                    f"block '{block.label}' skipped: it is shared with other agents, and its lines "
                    "would move into this agent's archival memory, out of their reach"
                )
                continue
            rewrite = self.overflow_rewrite(block, view.now)
            if rewrite is not None:
                plan.rewrites.append(rewrite)
        plan.merges = self.merges(view.passages, embed)
        return plan

    def is_over_full(self, block: Block) -> bool:
        return not block.read_only and len(block.value) > self.block_threshold * block.limit

    def overflow_rewrite(self, block: Block, now: str) -> BlockRewrite | None:
        """Move the block's oldest lines out until it is at or under the target share."""
        if not self.is_over_full(block):
            return None
        target = int(self.block_target * block.limit)
        lines = block.value.split("\n")
        moved: list[str] = []
        while lines and len("\n".join(lines)) > target:
            moved.append(lines.pop(0))
        kept = "\n".join(lines)
        provenance = {
            "block": block.label,
            "block_id": block.block_id,
            "block_version": block.version,
            "messages": [],
            "moved_at": now,
        }
        archived = tuple(ArchivedLine(line.strip(), provenance) for line in moved if line.strip())
        return BlockRewrite(block.label, block.block_id, block.version, kept, archived)

    def merges(self, passages: Sequence[Passage], embed: Embed) -> list[PassageMerge]:
        """Same-text groups first, then near-duplicate groups among what is left."""
        merges: list[PassageMerge] = []
        groups: dict[str, list[Passage]] = {}
        for passage in passages:
            groups.setdefault(normalised_text(passage.content), []).append(passage)
        remaining: list[Passage] = []
        for group in groups.values():
            remaining.append(group[0])
            if len(group) > 1:
                merges.append(
                    PassageMerge(
                        group[0].passage_id, tuple(p.passage_id for p in group[1:]), "the same text"
                    )
                )
        remaining.sort(key=lambda p: (p.created_at, p.passage_id))
        if len(remaining) > 1:
            merges.extend(self.near_duplicates(remaining, embed))
        return merges

    def near_duplicates(self, passages: Sequence[Passage], embed: Embed) -> list[PassageMerge]:
        """Oldest first, each passage not yet taken gathers the later ones close enough to it."""
        close: dict[int, list[tuple[int, float]]] = {}
        for first, other, score in similar_pairs(
            embed([p.content for p in passages]), self.near_duplicate_threshold
        ):
            close.setdefault(first, []).append((other, score))
        taken: set[int] = set()
        merges: list[PassageMerge] = []
        for first in sorted(close):
            if first in taken:
                continue
            group = [
                (other, score)
                for other, score in close[first]
                if other not in taken
                and same_particulars(passages[first].content, passages[other].content) is None
            ]
            if group:
                taken.update(index for index, _ in group)
                lowest = min(score for _, score in group)
                merges.append(
                    PassageMerge(
                        passages[first].passage_id,
                        tuple(passages[index].passage_id for index, _ in group),
                        f"near duplicate (similarity >= {lowest:.3f})",
                    )
                )
        return merges
